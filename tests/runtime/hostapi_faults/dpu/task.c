/* DPU side of the misuse tests: adds `increment` to each word of a WRAM array; when the host sets
 * `fault` to 1, tasklet 1 starts a DMA of 16 bytes at the last 8 of the 64 MiB MRAM bank (past its
 * end: a DMA fault, found at run time since the address depends on `fault`); with `fault` 2,
 * tasklet 0 waits at a barrier the others never reach (a deadlock). */
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

BARRIER_INIT(all_tasklets, NR_TASKLETS);

__host uint32_t increment;
__host uint32_t fault;
__host uint32_t words[8];

static uint64_t staging[2];

__attribute__((noinline)) static void read_past_the_bank(uint32_t back)
{
    mram_read((__mram_ptr void const *)(0x08000000u + (64u << 20) - back), staging, 16);
}

int main(void)
{
    if (fault == 1 && me() == 1)
        read_past_the_bank(8 * fault);
    if (fault == 2) {
        if (me() != 0)
            return 0;
        barrier_wait(&all_tasklets);
    }
    if (me() == 0)
        for (int i = 0; i < 8; i++)
            words[i] += increment;
    return 0;
}
