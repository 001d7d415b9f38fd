"""SCAN-SSA: inclusive prefix sum, scan-scan-add (PrIM), cnmtune's own implementation.

Size = total vector length over all DPUs (PrIM's strong scaling, `-x 1`; int64 elements by
default).

Compile time:
- the element type as a PrIM-style bare define: INT64 by default; INT32, UINT32, UINT64,
  FLOAT, DOUBLE, CHAR (int8), SHORT (int16) take precedence over it when given;
- BL, log2 of the MRAM->WRAM block in bytes (default 10; 3..11 keeps every DMA in
  8..2048 B). REGS = 2^BL / sizeof(T) elements per block.
WRAM: every tasklet allocates two 2^BL-byte buffers next to its 1 KiB stack, so BL = 10 runs
up to 20 tasklets, BL = 11 up to 12; the workload refuses more with a KernelError (a DPU would
fault in mem_alloc).

Host side as PrIM: each DPU's part is ceil(N / DPUs) elements padded with zeros to a multiple
of NR_TASKLETS x REGS (every DPU gets the same size; the zeros do not change the scan). Input
at heap offset 0, output at heap offset size_bytes. Arguments {size_bytes, kernel (uint32),
t_count (the element in the low bytes of a 64-bit slot)} = 16 bytes, pushed in parallel.
Launch 1 (kernel 0, scan, t_count = 0); the host pulls DPU_RESULTS[NR_TASKLETS] (8 bytes each)
and takes entry NR_TASKLETS-1, the DPU's total; it computes the exclusive scan of the totals
over the DPUs and pushes arguments with kernel = 1 and t_count = that DPU's offset; launch 2
(kernel 1, add); then a parallel pull of the output regions.

Inputs, and the differences from PrIM both SCANs share (none other here): common/scan_host.py.
"""

from scan_host import PrefixSum


class ScanSsa(PrefixSum):
    name = "scan-ssa"
    total_entry = "last"  # kernel 0 scans, kernel 1 adds the offset
