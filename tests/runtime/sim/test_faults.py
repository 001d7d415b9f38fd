"""Every fault class of the simulator ends in one error naming DPU, tasklet, pc, function and cause,
the same on the jitted co-simulation and on the reference path."""

from __future__ import annotations

import functools

import pytest

from cnmtune.errors import Deadlock, DmaError, SimFault, SimTimeout, WramOverflow
from cnmtune.runtime.toolchain import Variant


@pytest.fixture(params=[False, True], ids=["jitted", "reference"])
def launch(request, launch):
    return functools.partial(launch, reference=request.param)


def test_a_clean_kernel_runs(launch):
    device = launch("__host uint32_t out; int main(void) { out = 7 + me(); return 0; }", tasklets=2)
    assert device.copy_from(0, "out", 4) in (b"\x07\0\0\0", b"\x08\0\0\0")


@pytest.mark.parametrize(("size", "moved"), [(8, 8), (12, 8), (2048, 2048), (0, 2048), (4096, 2048), (2056, 8)])
def test_a_run_time_dma_size_moves_what_the_dpu_decodes(launch, size, moved):
    """The DPU never refuses a run-time DMA size: it moves (1 + ((size / 8 - 1) & 255)) * 8 bytes
    (interpreter.dma_bytes). PrIM's BS reads a remainder of 0 bytes, which moves 2048."""
    body = f"""
    __dma_aligned uint8_t src[2048], dst[2056];
    volatile uint32_t n = {size};
    __host uint32_t count;
    int main(void) {{
        for (int i = 0; i < 2048; i++) src[i] = 1;
        mram_write(src, DPU_MRAM_HEAP_POINTER, 2048);
        mram_read(DPU_MRAM_HEAP_POINTER, dst, n);
        for (int i = 0; i < 2056; i++) count += dst[i];
        return 0;
    }}
    """
    device = launch(body)
    assert int.from_bytes(device.copy_from(0, "count", 4), "little") == moved


def test_misaligned_dma_moves_the_aligned_words(launch):
    """As the DPU's DMA engine: the low 3 bits of both addresses are dropped (PrIM's BS and TRNS rely on it)."""
    body = """
    __dma_aligned uint64_t out[2], in[2];
    __host uint64_t result;
    int main(void) {
        out[0] = 0x1122334455667788ull, out[1] = 0x99aabbccddeeff00ull;
        mram_write(out, DPU_MRAM_HEAP_POINTER, 16);
        mram_read((__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER + 12, in, 8);  /* the word at offset 8 */
        result = in[0];
        return 0;
    }
    """
    device = launch(body)
    assert device.copy_from(0, "result", 8) == (0x99aabbccddeeff00).to_bytes(8, "little")


def test_dma_decodes_the_mram_offset_as_the_dpu_does(launch):
    """The DMA engine reads an MRAM address's low 26 bits: a 0-based offset (PrIM's BFS passes its
    host's MRAM heap offsets) reaches the same byte as the 0x08000000-based address."""
    body = """
    __dma_aligned uint64_t word, back;
    __host uint64_t result;
    int main(void) {
        word = 0x0123456789abcdefull;
        mram_write(&word, (__mram_ptr void *)0x08000040u, 8);
        mram_read((__mram_ptr void *)0x40u, &back, 8);
        result = back;
        return 0;
    }
    """
    device = launch(body)
    assert device.copy_from(0, "result", 8) == (0x0123456789abcdef).to_bytes(8, "little")


def test_dma_past_the_end_of_the_mram_bank(launch):
    body = """
    __dma_aligned uint64_t buf[4];
    int main(void) { mram_read((__mram_ptr void *)(0x08000000u + (64u << 20) - 8), buf, 16); return 0; }
    """
    with pytest.raises(DmaError, match=r"mram_read: MRAM range 0xbfffff8\+16 \(bank offset 0x3fffff8\) runs past "
                                       r"the end of the 64 MiB MRAM bank"):
        launch(body)


def test_load_outside_wram(launch):
    body = "int main(void) { return *(volatile int *)0x20000; }"
    with pytest.raises(SimFault, match=r"tasklet 0: memory access out of bounds at address 0x00020000 at pc 0x8[0-9a-f]+ in main"):
        launch(body)


def test_direct_mram_access_past_64_mib(launch):
    body = "int main(void) { *(volatile int *)(0x08000000u + (64u << 20) + 16) = 1; return 0; }"
    with pytest.raises(SimFault, match=r"memory access out of bounds at address 0x0c000010"):
        launch(body)


def test_a_stack_overflow_runs_on_as_on_a_dpu_and_is_reported(launch):
    """A DPU checks no stack (no fault code for it in the SDK's dpufault.h): tasklet 1 outgrows its
    1 KiB into the stack of tasklet 0, which has finished, the run completes, and the launch says so."""
    body = """
    __host uint32_t out;
    static uint32_t sum(void) {
        volatile uint8_t big[1200];
        for (int i = 0; i < 1200; i++) big[i] = 1;
        uint32_t s = 0;
        for (int i = 0; i < 1200; i++) s += big[i];
        return s;
    }
    int main(void) { if (me() == 1) { for (volatile int i = 0; i < 200; i++) { } out = sum(); } return 0; }
    """
    device = launch(body, tasklets=2)
    assert device.copy_from(0, "out", 4) == (1200).to_bytes(4, "little")
    (overflow,) = device.launches[-1].stack_overflows
    assert (overflow.dpu, overflow.tasklet, overflow.size) == (0, 1, 1024) and 1200 < overflow.used < 1400
    assert "DPU 0, tasklet 1: the stack reached" in str(overflow) and "a DPU does not check" in str(overflow)


def test_a_fault_after_a_stack_overflow_names_the_overflow(launch):
    body = """
    static void deep(void) { volatile uint8_t big[1200]; big[0] = 1; halt(); }
    int main(void) { if (me() == 1) deep(); return 0; }
    """
    with pytest.raises(SimFault, match=r"tasklet 1: program fault HALT .*; after DPU 0, tasklet 1: the stack reached "
                                       r"1,[0-9]{3} B of its 1,024 B"):
        launch(body, tasklets=2)


def test_stacks_that_do_not_fit_wram_are_refused_at_link(toolchain, make_kernel):
    """What is refused is what the SDK's linker refuses: stacks and data past the 64 KiB WRAM."""
    kernel = make_kernel("int main(void) { return 0; }")
    with pytest.raises(WramOverflow, match=r"WRAM"):
        toolchain.compile(Variant.of(kernel, "O2", 24, {"STACK_SIZE_DEFAULT": "4096"}))


def test_deadlock_on_a_barrier_nobody_completes(launch):
    body = """
    BARRIER_INIT(too_many, NR_TASKLETS + 1);
    int main(void) { barrier_wait(&too_many); return 0; }
    """
    with pytest.raises(Deadlock, match=r"DPU 0: deadlock at cycle \d+: every live tasklet is blocked "
                                       r"\(tasklet 0 in barrier, tasklet 1 in barrier\)"):
        launch(body, tasklets=2)


def test_instruction_budget_stops_an_infinite_loop(launch):
    body = "volatile int spin = 1; int main(void) { while (spin) { } return 0; }"
    with pytest.raises(SimTimeout, match=r"tasklet 0: instruction budget of 100,000 exhausted \(infinite loop\?\) "
                                         r"at pc 0x8[0-9a-f]+ in main"):
        launch(body, budget=100_000)


def test_heap_exhaustion_is_a_program_fault(launch):
    body = "int main(void) { for (;;) mem_alloc(4096); return 0; }"
    with pytest.raises(SimFault, match=r"program fault HEAP_EXHAUSTED at pc 0x8[0-9a-f]+ in mem_alloc"):
        launch(body)
