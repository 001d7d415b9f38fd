/* gather on a DPU: out[i] = table[idx[i]] for this DPU's indices, the int32 table in MRAM.
 *
 * MRAM heap layout (bytes): the table at offset 0 (table_bytes), the indices (uint32) at
 * table_bytes, the outputs (int32) at table_bytes + size_bytes.
 * Tasklet t takes index blocks t, t + NR_TASKLETS, ... (block-cyclic). Every index costs one
 * 8-byte DMA from a data-dependent address: the aligned word holding the entry (a DMA moves
 * whole 8-byte words), of which the entry is the low or the high half. */
#include <alloc.h>
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>

#include "common.h"

__host gather_arguments_t DPU_INPUT_ARGUMENTS;

BARRIER_INIT(start_barrier, NR_TASKLETS);

int main(void) {
    const unsigned int tasklet = me();
    if (tasklet == 0)
        mem_reset(); /* the WRAM heap survives launches: empty it before anyone allocates */
    barrier_wait(&start_barrier);

    const uint32_t size = DPU_INPUT_ARGUMENTS.size_bytes;
    const uint32_t mram_table = (uint32_t)DPU_MRAM_HEAP_POINTER;
    const uint32_t mram_idx = mram_table + DPU_INPUT_ARGUMENTS.table_bytes;
    const uint32_t mram_out = mram_idx + size;

    uint32_t *idx = (uint32_t *)mem_alloc(BLOCK_BYTES);
    int32_t *out = (int32_t *)mem_alloc(BLOCK_BYTES);
    int32_t *word = (int32_t *)mem_alloc(2 * sizeof(int32_t));

    for (uint32_t offset = tasklet << BL; offset < size; offset += NR_TASKLETS << BL) {
        const uint32_t bytes = (size - offset < BLOCK_BYTES) ? size - offset : BLOCK_BYTES;
        mram_read((__mram_ptr void const *)(mram_idx + offset), idx, bytes);
        for (uint32_t k = 0; k < bytes / sizeof(uint32_t); k++) {
            const uint32_t entry = idx[k];
            mram_read((__mram_ptr void const *)(mram_table + ((entry << 2) & ~7u)), word, 8);
            out[k] = word[entry & 1];
        }
        mram_write(out, (__mram_ptr void *)(mram_out + offset), bytes);
    }
    return 0;
}
