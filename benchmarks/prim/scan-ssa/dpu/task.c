/* SCAN-SSA on a DPU: inclusive prefix sum of this DPU's part, in two launches
 * (scan, then add).
 *
 * MRAM heap layout: input at offset 0, output at offset size_bytes. The host pads every DPU's
 * part with zeros to a multiple of NR_TASKLETS blocks, so every tasklet handles a full block in
 * every round.
 *
 * Kernel 0 (scan), per round of NR_TASKLETS blocks (tasklet t takes block t of the round):
 *   read the block, scan it locally into a second buffer (l_count = the block's sum);
 *   handshake chain: tasklet t waits for t-1, takes its prefix p and hands p + l_count to t+1;
 *   barrier; add (running total + p) to the block and write it to the output;
 *   the last tasklet advances the running total by the round's sum and stores it in
 *   DPU_RESULTS[NR_TASKLETS-1].
 * The running total is double-buffered by round parity: in round r every tasklet reads slot
 * r&1 while the last tasklet writes slot (r+1)&1, so no tasklet can read a total that the last
 * tasklet already advanced (PrIM's single shared counter relies on round-robin issue for this).
 *
 * Kernel 1 (add): streams the output region block-cyclically and adds t_count (the DPU's
 * offset from the host's exclusive scan of the DPU totals) to every element. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <handshake.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host scan_arguments_t DPU_INPUT_ARGUMENTS;
__host scan_result_t DPU_RESULTS[NR_TASKLETS];

BARRIER_INIT(scan_barrier, NR_TASKLETS);

/* prefix handed along the handshake chain: prefix[t] = sum of blocks 0..t of this round */
static elem_t prefix[NR_TASKLETS];
/* the DPU's running total before the current round, by round parity */
static elem_t running[2];

/* out[i] = in[0] + ... + in[i]; returns the block's sum */
static elem_t scan_block(elem_t *restrict out, const elem_t *restrict in) {
    elem_t sum = 0;
#pragma unroll
    for (uint32_t i = 0; i < REGS; i++) {
        sum += in[i];
        out[i] = sum;
    }
    return sum;
}

static void add_block(elem_t *block, elem_t addend) {
#pragma unroll
    for (uint32_t i = 0; i < REGS; i++) {
        block[i] += addend;
        __asm__ volatile("" ::: "memory"); /* no code: keeps rv32 from hoisting every load */
    }
}

static int scan(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0) {
        mem_reset(); /* WRAM heap survives launches: start each one from empty */
        running[0] = DPU_INPUT_ARGUMENTS.t_count.value;
    }
    barrier_wait(&scan_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_in = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_out = mram_in + size;
    elem_t *cache_a = (elem_t *)mem_alloc(BLOCK_BYTES);
    elem_t *cache_b = (elem_t *)mem_alloc(BLOCK_BYTES);

    uint32_t round = 0;
    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL, round++) {
        mram_read((__mram_ptr void const *)(mram_in + offset), cache_a, BLOCK_BYTES);
        const elem_t l_count = scan_block(cache_b, cache_a);

        elem_t p_count = 0;
        if (tasklet > 0) {
            handshake_wait_for(tasklet - 1);
            p_count = prefix[tasklet - 1];
        }
        prefix[tasklet] = p_count + l_count;
        if (tasklet < NR_TASKLETS - 1)
            handshake_notify();

        barrier_wait(&scan_barrier);

        const elem_t base = running[round & 1];
        add_block(cache_b, base + p_count);
        mram_write(cache_b, (__mram_ptr void *)(mram_out + offset), BLOCK_BYTES);

        if (tasklet == NR_TASKLETS - 1) {
            const elem_t total = base + prefix[tasklet];
            running[(round + 1) & 1] = total;
            DPU_RESULTS[tasklet].t_count.bits = 0;
            DPU_RESULTS[tasklet].t_count.value = total;
        }
    }
    if (size == 0 && tasklet == NR_TASKLETS - 1) {
        DPU_RESULTS[tasklet].t_count.bits = 0;
        DPU_RESULTS[tasklet].t_count.value = running[0];
    }
    return 0;
}

static int add(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset();
    barrier_wait(&scan_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_out = (uint32_t)DPU_MRAM_HEAP_POINTER + size;
    const elem_t offset_value = DPU_INPUT_ARGUMENTS.t_count.value;
    elem_t *cache_a = (elem_t *)mem_alloc(BLOCK_BYTES);

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        mram_read((__mram_ptr void const *)(mram_out + offset), cache_a, BLOCK_BYTES);
        add_block(cache_a, offset_value);
        mram_write(cache_a, (__mram_ptr void *)(mram_out + offset), BLOCK_BYTES);
    }
    return 0;
}

static int (*const kernels[SCAN_SSA_NR_KERNELS])(void) = {scan, add};

int main(void) {
    return kernels[DPU_INPUT_ARGUMENTS.kernel]();
}
