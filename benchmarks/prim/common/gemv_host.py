"""Host side shared by GEMV and MLP: PrIM's GEMV split of an m x n matrix over DPUs and the
MRAM layout of common/gemv_rows.h (MLP runs one such GEMV launch per layer).

Rows are split as evenly as possible (the first m mod D DPUs get one more); max_rows is the
largest row count padded to even; n_pad = n rounded up to even. Every DPU gets the same
transfer sizes: its rows as a max_rows x n_pad block at heap offset 0 (zero padded), x
(n_pad elements) at max_rows*n_pad*4, y (max_rows elements) right after x.
"""

import numpy as np

from cnmtune.dpu.memory_map import MRAM_SIZE
from cnmtune.errors import KernelError
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME


def row_split(rows: int, nr_dpus: int) -> tuple[list[int], list[int]]:
    """(first row, row count) per DPU: the first rows mod D DPUs get one more row."""
    base, extra = divmod(rows, nr_dpus)
    counts = [base + (d < extra) for d in range(nr_dpus)]
    starts = [sum(counts[:d]) for d in range(nr_dpus)]
    return starts, counts


class GemvLayout:
    """PrIM's GEMV partition of a rows x cols matrix on nr_dpus DPUs and its MRAM offsets."""

    def __init__(self, name: str, rows: int, cols: int, nr_dpus: int, block_bytes: int):
        self.starts, self.counts = row_split(rows, nr_dpus)
        self.cols, self.cols_pad = cols, cols + cols % 2
        self.max_rows = max(c + c % 2 for c in self.counts)
        self.x_offset = self.max_rows * self.cols_pad * 4
        self.y_offset = self.x_offset + self.cols_pad * 4
        # the last block of a row or of x is read whole, past its end
        if max(self.y_offset + self.max_rows * 4, self.x_offset + block_bytes) > MRAM_SIZE:
            raise KernelError(f"{name}: {self.max_rows} rows x {cols} columns per DPU do not fit in MRAM")

    def push_arguments(self, device) -> None:
        """DPU_INPUT_ARGUMENTS {n_size, n_size_pad, nr_rows (the DPU's, unpadded), max_rows}."""
        device.push_to("DPU_INPUT_ARGUMENTS", [np.array([self.cols, self.cols_pad, count, self.max_rows], np.uint32)
                                               for count in self.counts])

    def push_matrix(self, device, a: np.ndarray) -> None:
        """Every DPU's rows of `a` as a zero-padded max_rows x n_pad block at heap offset 0."""
        blocks = []
        for start, count in zip(self.starts, self.counts):
            mine = np.zeros((self.max_rows, self.cols_pad), a.dtype)
            mine[:count, :self.cols] = a[start:start + count]
            blocks.append(mine)
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, blocks)

    def push_vector(self, device, x: np.ndarray) -> None:
        """x, zero-padded to n_pad, to every DPU."""
        x_pad = np.zeros(self.cols_pad, x.dtype)
        x_pad[:self.cols] = x[:self.cols]
        device.push_to(DPU_MRAM_HEAP_POINTER_NAME, [x_pad] * len(self.counts), offset=self.x_offset)

    def pull_result(self, device, dtype) -> np.ndarray:
        """y: every DPU's real rows, in order."""
        chunks = device.push_from(DPU_MRAM_HEAP_POINTER_NAME, self.max_rows * 4, offset=self.y_offset)
        return np.concatenate([np.frombuffer(c, dtype)[:count] for c, count in zip(chunks, self.counts)])
