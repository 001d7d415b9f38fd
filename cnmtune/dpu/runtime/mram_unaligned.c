/*
 * mram_unaligned.c - MRAM transfers at any MRAM address / size, built from
 * aligned DMA (mram_read/mram_write service calls).
 */
#pragma clang section text = ".text.__sys"

#include <mram_unaligned.h>
#include <stdint.h>
#include <cnm_sys.h>

__CNM_SYS_TEXT(mram_read_unaligned) void *mram_read_unaligned(const __mram_ptr void *from, void *buffer,
                                                              unsigned int nb_of_bytes)
{
    uintptr_t src = (uintptr_t)from;
    uintptr_t offset = src & 7;
    uintptr_t aligned_src = src - offset;
    uintptr_t total = (offset + nb_of_bytes + 7) & ~(uintptr_t)7;
    if (nb_of_bytes > 2048 || ((uintptr_t)buffer & 7) != 0)
        __cnm_fault(CNM_FAULT_DMA);
    uint8_t *dst = buffer;
    while (total != 0) {
        uintptr_t chunk = total > 2048 ? 2048 : total;
        (void)__cnm_ecall3(CNM_ECALL_MRAM_READ, (uint32_t)aligned_src, (uint32_t)(uintptr_t)dst, (uint32_t)chunk);
        aligned_src += chunk;
        dst += chunk;
        total -= chunk;
    }
    return (uint8_t *)buffer + offset;
}

/* Read-modify-write of the 8-byte MRAM word at word, replacing count bytes from position first with src. */
static __attribute__((noinline)) void __cnm_mram_patch_word(uintptr_t word, unsigned int first, const uint8_t *src,
                                                            unsigned int count)
{
    uint64_t tmp; /* 8-aligned on the stack */
    uint8_t *bytes = (uint8_t *)&tmp;
    (void)__cnm_ecall3(CNM_ECALL_MRAM_READ, (uint32_t)word, (uint32_t)(uintptr_t)bytes, 8);
    for (unsigned int i = 0; i < count; i++)
        bytes[first + i] = src[i];
    (void)__cnm_ecall3(CNM_ECALL_MRAM_WRITE, (uint32_t)(uintptr_t)bytes, (uint32_t)word, 8);
}

__CNM_SYS_TEXT(mram_write_unaligned) void mram_write_unaligned(const void *from, __mram_ptr void *to,
                                                               unsigned int nb_of_bytes)
{
    uintptr_t src = (uintptr_t)from;
    uintptr_t dst = (uintptr_t)to;
    if (((src ^ dst) & 7) != 0 || nb_of_bytes > 2048)
        __cnm_fault(CNM_FAULT_DMA);
    uintptr_t n = nb_of_bytes;
    uintptr_t head = dst & 7;
    if (head != 0 && n != 0) {
        uintptr_t count = 8 - head;
        if (count > n)
            count = n;
        __cnm_mram_patch_word(dst - head, (unsigned int)head, (const uint8_t *)src, (unsigned int)count);
        src += count;
        dst += count;
        n -= count;
    }
    uintptr_t middle = n & ~(uintptr_t)7;
    if (middle != 0) {
        (void)__cnm_ecall3(CNM_ECALL_MRAM_WRITE, (uint32_t)src, (uint32_t)dst, (uint32_t)middle);
        src += middle;
        dst += middle;
        n -= middle;
    }
    if (n != 0)
        __cnm_mram_patch_word(dst, 0, (const uint8_t *)src, (unsigned int)n);
}
