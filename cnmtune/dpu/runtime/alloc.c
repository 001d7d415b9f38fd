/*
 * alloc.c - WRAM heap: mem_alloc / mem_reset and the fixed-size-block allocator.
 */
#pragma clang section text = ".text.__sys"

#include <alloc.h>
#include <atomic_bit.h>
#include <stdint.h>
#include <cnm_sys.h>

/* Current heap top (8-aligned).  A WRAM global initialised at load time and
 * NOT reset at launch (UPMEM semantics): kernels call mem_reset(). */
void *__sys_heap_pointer = __sys_heap_pointer_reset;

/* Lock of the heap pointer. */
ATOMIC_BIT_INIT(__sys_heap_lock);

/* Lock of all fixed-size-block allocators. */
ATOMIC_BIT_INIT(__sys_fsb_lock);

__CNM_SYS_TEXT(mem_alloc) __attribute__((noinline)) void *mem_alloc(size_t size)
{
    __cnm_sys_lock(&ATOMIC_BIT_GET(__sys_heap_lock));
    uintptr_t current = (uintptr_t)__sys_heap_pointer;
    uintptr_t end = (uintptr_t)__cnm_wram_size;
    /* size <= end - current <= 64 KiB first, so that size + 7 cannot wrap */
    if (current > end || size > end - current || ((size + 7) & ~(size_t)7) > end - current) {
        __cnm_sys_unlock(&ATOMIC_BIT_GET(__sys_heap_lock));
        __cnm_fault(CNM_FAULT_HEAP_EXHAUSTED);
    }
    __sys_heap_pointer = (void *)(current + ((size + 7) & ~(size_t)7));
    __cnm_sys_unlock(&ATOMIC_BIT_GET(__sys_heap_lock));
    return (void *)current;
}

__CNM_SYS_TEXT(mem_reset) void *mem_reset(void)
{
    __cnm_sys_lock(&ATOMIC_BIT_GET(__sys_heap_lock));
    __sys_heap_pointer = __sys_heap_pointer_reset;
    __cnm_sys_unlock(&ATOMIC_BIT_GET(__sys_heap_lock));
    return __sys_heap_pointer_reset;
}

/* An allocator is one WRAM word holding the head of its free list; each free
 * block stores the address of the next free block in its first word. */
__CNM_SYS_TEXT(fsb_alloc) fsb_allocator_t fsb_alloc(unsigned int block_size, unsigned int nb_of_blocks)
{
    uintptr_t size = ((uintptr_t)block_size + 7) & ~(uintptr_t)7;
    if (size == 0)
        size = 8;
    /* both factors are bounded first, so the product (compiler-rt __mulsi3; not a
     * hot path) cannot wrap; mem_alloc then checks it against the free WRAM */
    uintptr_t wram = (uintptr_t)__cnm_wram_size;
    if (size > wram || nb_of_blocks > (wram >> 3))
        __cnm_fault(CNM_FAULT_HEAP_EXHAUSTED);
    uintptr_t total = size * nb_of_blocks;
    fsb_allocator_t allocator = (fsb_allocator_t)mem_alloc(8);
    uintptr_t first = (uintptr_t)mem_alloc(total);
    uintptr_t block = first;
    for (unsigned int i = 0; i < nb_of_blocks; i++) {
        uintptr_t following = (i + 1 < nb_of_blocks) ? block + size : 0;
        *(uintptr_t *)block = following;
        block = following;
    }
    *allocator = nb_of_blocks != 0 ? (void *)first : 0;
    return allocator;
}

__CNM_SYS_TEXT(fsb_get) void *fsb_get(fsb_allocator_t allocator)
{
    __cnm_sys_lock(&ATOMIC_BIT_GET(__sys_fsb_lock));
    void **block = (void **)*allocator;
    if (block != 0)
        *allocator = *block;
    __cnm_sys_unlock(&ATOMIC_BIT_GET(__sys_fsb_lock));
    return block;
}

__CNM_SYS_TEXT(fsb_free) void fsb_free(fsb_allocator_t allocator, void *ptr)
{
    __cnm_sys_lock(&ATOMIC_BIT_GET(__sys_fsb_lock));
    *(void **)ptr = *allocator;
    *allocator = ptr;
    __cnm_sys_unlock(&ATOMIC_BIT_GET(__sys_fsb_lock));
}
