"""The order of memory effects between tasklets follows the DPU's, where programs rely on it."""

from __future__ import annotations


def test_a_notifier_writes_before_the_tasklet_it_wakes(launch):
    """handshake_notify then an MRAM write: the notifier keeps issuing while the woken tasklet is still
    being scheduled, so its write lands first and the woken one's write is the one that stays (PrIM's
    UNI relies on it: each tasklet writes a stale word past its data for its successor to overwrite)."""
    body = """
    #include <handshake.h>
    __host uint64_t result;
    int main(void) {
        __dma_aligned uint64_t word = 100 + me();
        if (me() == 0) {
            for (volatile int spin = 0; spin < 100; spin++)  /* tasklet 1 is waiting when the notify comes */
                ;
            handshake_notify();
            mram_write(&word, DPU_MRAM_HEAP_POINTER, 8);
        } else {
            handshake_wait_for(0);
            mram_write(&word, DPU_MRAM_HEAP_POINTER, 8);
        }
        return 0;
    }
    """
    device = launch(body, tasklets=2)
    assert device.copy_from(0, "__sys_used_mram_end", 8) == (101).to_bytes(8, "little")
