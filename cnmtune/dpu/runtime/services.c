/*
 * services.c - the runtime calls a kernel makes, each one service call (ecall).
 *
 * On a DPU these are single instructions or short inline sequences (ldma, sdma, acquire,
 * release, stop/resume).  On the proxy they are small functions so that kernel IR never
 * carries inline assembly (llvmlite has no RISC-V assembler); the simulator charges each
 * call what the DPU sequence costs.  One section per function, so that --gc-sections keeps
 * only the services a kernel uses.
 */
#pragma clang section text = ".text.__sys"

#include <barrier.h>
#include <cnm_sys.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <mutex.h>
#include <perfcounter.h>
#include <sem.h>

__CNM_SYS_TEXT(me) sysname_t me(void) { return (sysname_t)__cnm_ecall0(CNM_ECALL_ME); }

__CNM_SYS_TEXT(whoami) sysname_t whoami(void) { return me(); }

__CNM_SYS_TEXT(halt) void halt(void) { __cnm_fault(CNM_FAULT_HALT); }

__CNM_SYS_TEXT(mram_read) void mram_read(const __mram_ptr void *from, void *to, unsigned int nb_of_bytes)
{
    (void)__cnm_ecall3(CNM_ECALL_MRAM_READ, (uint32_t)(uintptr_t)from, (uint32_t)(uintptr_t)to, nb_of_bytes);
}

__CNM_SYS_TEXT(mram_write) void mram_write(const void *from, __mram_ptr void *to, unsigned int nb_of_bytes)
{
    (void)__cnm_ecall3(CNM_ECALL_MRAM_WRITE, (uint32_t)(uintptr_t)from, (uint32_t)(uintptr_t)to, nb_of_bytes);
}

__CNM_SYS_TEXT(__cnm_atomic_bit_try_acquire) int __cnm_atomic_bit_try_acquire(uint8_t *bit)
{
    return __cnm_ecall1(CNM_ECALL_ACQUIRE, (uint32_t)(uintptr_t)bit) == 0;
}

__CNM_SYS_TEXT(__cnm_atomic_bit_acquire) void __cnm_atomic_bit_acquire(uint8_t *bit)
{
    while (__cnm_ecall1(CNM_ECALL_LOCK, (uint32_t)(uintptr_t)bit) != 0) {
    }
}

__CNM_SYS_TEXT(__cnm_atomic_bit_release) void __cnm_atomic_bit_release(uint8_t *bit) { (void)__cnm_ecall1(CNM_ECALL_RELEASE, (uint32_t)(uintptr_t)bit); }

__CNM_SYS_TEXT(mutex_lock) void mutex_lock(mutex_id_t mutex) { __cnm_atomic_bit_acquire(mutex); }

__CNM_SYS_TEXT(mutex_trylock) bool mutex_trylock(mutex_id_t mutex) { return __cnm_atomic_bit_try_acquire(mutex) != 0; }

__CNM_SYS_TEXT(mutex_unlock) void mutex_unlock(mutex_id_t mutex) { __cnm_atomic_bit_release(mutex); }

__CNM_SYS_TEXT(barrier_wait) void barrier_wait(barrier_t *barrier) { (void)__cnm_ecall1(CNM_ECALL_BARRIER_WAIT, (uint32_t)(uintptr_t)barrier); }

__CNM_SYS_TEXT(sem_take) void sem_take(sem_t *sem) { (void)__cnm_ecall1(CNM_ECALL_SEM_TAKE, (uint32_t)(uintptr_t)sem); }

__CNM_SYS_TEXT(sem_give) void sem_give(sem_t *sem) { (void)__cnm_ecall1(CNM_ECALL_SEM_GIVE, (uint32_t)(uintptr_t)sem); }

__CNM_SYS_TEXT(handshake_notify) void handshake_notify(void) { (void)__cnm_ecall0(CNM_ECALL_HANDSHAKE_NOTIFY); }

__CNM_SYS_TEXT(handshake_wait_for) int handshake_wait_for(sysname_t notifier) { return (int)__cnm_ecall1(CNM_ECALL_HANDSHAKE_WAIT_FOR, notifier); }

__CNM_SYS_TEXT(perfcounter_config) perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value)
{
    return __cnm_ecall2_u64(CNM_ECALL_PERFCOUNTER_CONFIG, (uint32_t)config, reset_value ? 1u : 0u);
}

__CNM_SYS_TEXT(perfcounter_get) perfcounter_t perfcounter_get(void) { return __cnm_ecall2_u64(CNM_ECALL_PERFCOUNTER_GET, 0u, 0u); }
