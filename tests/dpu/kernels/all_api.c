/*
 * Test kernel for tests/dpu/test_runtime_build.py: uses every public API of
 * every cnmtune DPU runtime header.  It is compiled and linked, never run.
 */
#define SEQREAD_CACHE_SIZE 128

#include <alloc.h>
#include <assert.h>
#include <atomic_bit.h>
#include <attributes.h>
#include <barrier.h>
#include <built_ins.h>
#include <cnm_ecall.h>
#include <ctype.h>
#include <defs.h>
#include <dpu_characteristics.h>
#include <dpuconst.h>
#include <dpufault.h>
#include <errno.h>
#include <float.h>
#include <fsb_allocator.h>
#include <handshake.h>
#include <inttypes.h>
#include <limits.h>
#include <macro_utils.h>
#include <mram.h>
#include <mram_unaligned.h>
#include <mutex.h>
#include <perfcounter.h>
#include <sem.h>
#include <seqread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysdef.h>

_Static_assert(DPU_NR_THREADS == 24 && DPU_NR_ATOMIC_BITS == 256 && DPU_NR_WORK_REGS == 24, "characteristics");
_Static_assert(DPU_MRAM_SIZE == 64u * 1024 * 1024 && DPU_WRAM_SIZE == 65536, "memory sizes");
_Static_assert(sizeof(barrier_t) == 4 && sizeof(sem_t) == 4, "4-byte sync objects");
_Static_assert(sizeof(perfcounter_t) == 8 && COUNT_SAME == 0 && COUNT_CYCLES == 1 && COUNT_INSTRUCTIONS == 2 &&
                   COUNT_NOTHING == 3,
               "perfcounter");
_Static_assert(__FAULT_HALT__ == CNM_FAULT_HALT && __FAULT_ALLOC_HEAP_FULL__ == CNM_FAULT_HEAP_EXHAUSTED, "faults");
_Static_assert(EALREADY == CNM_ERR_EALREADY, "EALREADY");

STDOUT_BUFFER_INIT(1 << 16)

typedef struct {
    uint32_t size;
    uint32_t kernel;
    uint64_t total;
} args_t;

__host args_t DPU_INPUT_ARGUMENTS;
__host uint64_t DPU_RESULTS[NR_TASKLETS];
__mram uint64_t mram_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__mram_noinit uint64_t mram_scratch[256];
__mram_keep uint64_t mram_kept[2] = {9, 10};
__mram_noinit_keep uint64_t mram_noinit_kept[4];
__keep uint32_t kept_word = 0x1234;
__lower_data(fast_counter) uint32_t fast_counter;
__dma_aligned uint8_t dma_buffer[64];
__aligned(16) uint32_t aligned16[4];
__section(".data.custom") uint32_t custom_section_word = 7;
__used static uint32_t used_word = 3;
uint32_t weak_word __weak = 1;

/* synchronisation objects */
BARRIER_INIT(all_barrier, NR_TASKLETS);
BARRIER_INIT(pair_barrier, 2);
SEMAPHORE_INIT(sem, 1);
MUTEX_INIT(counter_mutex);
ATOMIC_BIT_INIT(hand_bits)[4];
ATOMIC_BIT_INIT(single_bit);
ATOMIC_BIT_EXTERN(single_bit);
barrier_t hand_barriers[4];
mutex_id_t never_initialised[2];

volatile uint32_t vin_a = 1234567, vin_b = 89;
volatile float vin_f = 1.5f;
volatile uint64_t shared_sum;
uint32_t message[NR_TASKLETS];

__noinline static uint32_t helper(uint32_t x)
{
    return x + 1;
}

DEPRECATED static inline int old_api(void)
{
    return 0;
}

static int va_helper(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

struct big {
    uint32_t w[16];
};
struct big big_a, big_b;

int main(void)
{
    sysname_t tid = me();
    thread_id_t tid2 = whoami();
    (void)tid2;

    if (tid == 0) {
        mem_reset();
        perfcounter_config(COUNT_CYCLES, true);
        for (unsigned int i = 0; i < 4; i++) {
            hand_barriers[i].wait_queue = 0xff;
            hand_barriers[i].count = 1;
            hand_barriers[i].initial_count = 1;
            hand_barriers[i].lock = (uint8_t)(uintptr_t)&ATOMIC_BIT_GET(hand_bits)[i];
        }
    }
    barrier_wait(&all_barrier);
    barrier_wait(BARRIER_GET(hand_barriers[tid & 3]));
    if (tid < 2)
        barrier_wait(&pair_barrier);
    perfcounter_t start = perfcounter_get();

    /* heap and DMA */
    uint64_t *cache = mem_alloc(256);
    mram_read(&mram_table[0], cache, 64);
    mram_read((__mram_ptr const void *)((uintptr_t)DPU_MRAM_HEAP_POINTER + 8 * tid), cache + 8, 8);
    mram_write(cache, &mram_scratch[tid], 8);
    mram_write(cache, DPU_MRAM_HEAP_POINTER, 2048 / 8);
    uint32_t *unaligned = mram_read_unaligned((__mram_ptr uint8_t *)mram_table + 3, dma_buffer, 20);
    mram_write_unaligned((uint8_t *)cache + 3, (__mram_ptr uint8_t *)mram_scratch + 3, 13);
    fsb_allocator_t fsb = fsb_alloc(24, 4);
    void *block = fsb_get(fsb);
    fsb_free(fsb, block);

    /* sequential reader */
    seqreader_t sr;
    uint32_t *elem = seqread_init(seqread_alloc(), DPU_MRAM_HEAP_POINTER, &sr);
    uint32_t seq_sum = 0;
    for (int i = 0; i < 100; i++) {
        seq_sum += *elem;
        elem = seqread_get(elem, sizeof(*elem), &sr);
    }
    __mram_ptr void *pos = seqread_tell(elem, &sr);
    elem = seqread_seek(pos, &sr);

    /* locks */
    mutex_lock(counter_mutex);
    shared_sum += seq_sum + *unaligned;
    mutex_unlock(counter_mutex);
    if (mutex_trylock(MUTEX_GET(counter_mutex)))
        mutex_unlock(counter_mutex);
    mutex_lock(never_initialised[0]);
    mutex_unlock(never_initialised[0]);
    sem_take(&sem);
    sem_give(&sem);
    ATOMIC_BIT_ACQUIRE(single_bit);
    fast_counter += ATOMIC_BIT_INDEX(single_bit);
    ATOMIC_BIT_RELEASE(single_bit);

    /* handshake chain */
    message[tid] = tid;
    if (tid > 0) {
        if (handshake_wait_for(tid - 1) == EALREADY)
            puts("already");
    }
    if (tid + 1 < NR_TASKLETS)
        handshake_notify();

    /* soft arithmetic: 32-bit multiply/divide and float */
    uint32_t product = vin_a * vin_b;
    uint32_t quotient = vin_a / vin_b;
    int32_t squotient = (int32_t)vin_a / -(int32_t)vin_b;
    float f = vin_f * (float)product + 0.25f;
    DPU_RESULTS[tid] = product + quotient + (uint64_t)(uint32_t)squotient + (uint64_t)f;

    /* C library */
    char text[32];
    strcpy(text, "hello");
    strcat(text, " dpu");
    strncat(text, "!!!", 1);
    char copy[32];
    strncpy(copy, text, sizeof(copy));
    memmove(copy + 1, copy, 8);
    memset(text, 'x', 4);
    memcpy(text, "ab", 2);
    big_a = big_b;
    int cmp = memcmp(text, copy, 4) + strcmp(text, copy) + strncmp(text, copy, 3);
    const char *found = strchr(copy, 'd');
    found = found ? found : strrchr(copy, 'h');
    found = found ? found : strstr(copy, "dp");
    found = found ? found : memchr(copy, 'o', 8);
    size_t len = strlen(text) + strnlen(copy, 4);
    int parsed = atoi("  -42") + (int)atol("+17") + (int)strtol("0x1f", 0, 0) + (int)strtoul("777", 0, 8);
    errno = 0;
    parsed += abs(-3) + (int)labs(-4L) + (int)llabs(-5LL);
    parsed += isdigit('7') + isalpha('q') + isspace(' ') + isupper('Q') + islower('q') + isalnum('1') +
              isxdigit('f') + isprint('a') + ispunct('!') + iscntrl('\n') + isgraph('#') + isblank('\t') +
              toupper('a') + tolower('A');
    (void)imaxabs(-1);
    assert(len < 64);
    static_assert(CHAR_BIT == 8, "bytes");
    printf("tasklet %u: cmp=%d parsed=%d found=%s f=%f cycles=%" PRIu64 " clock=%" PRIu32 "\n", tid, cmp,
           parsed, found, (double)f, perfcounter_get() - start, CLOCKS_PER_SEC);
    va_helper("%d\n", 1);
    putchar('\n');
    puts(__STR(NR_TASKLETS));

    int left = check_stack();
    if (left < 0)
        halt();
    if (helper(used_word + weak_word + kept_word + custom_section_word + aligned16[0]) == 0)
        abort();
    return old_api() + (int)__CONCAT(fast_, counter);
}
