"""The host library's protocol: libdpu.c (client, in the host program) to server.py (simulator).

Frames as in cnmtune.runtime.upmem.protocol (u32 length, then the payload; little endian; `str`
and `blob` are a u32 length and the bytes). A request is a u8 opcode and its fields. A reply is
u8 0, u64 simulated nanoseconds of the call, then the ok fields; or u8 1, u32 the UPMEM SDK's
status code (`DpuStatus`), then what went wrong as UTF-8 (the rest of the payload).

  op  name       request fields                                          ok fields
   1  ALLOC      u32 count, u32 by_ranks (count is ranks), str profile,   u32 nr_dpus, u32 dpus_per_rank
                 u32 host pid
   2  LOAD       str absolute ELF path                                   -
   3  COPY_TO    str symbol, u32 offset, u32 first, u32 count (1),       -
                 u32 length, length raw bytes
   4  COPY_FROM  str symbol, u32 offset, u32 k (1), k * u32 DPU,          k * length raw bytes
                 u32 length
   5  PUSH_TO    str symbol, u32 offset, u32 k, k * u32 DPU, u32 length,  -
                 u32 shared (1: the same host buffer for every DPU),
                 k * length raw bytes (in the order of the DPUs)
   6  PUSH_FROM  as COPY_FROM                                            k * length raw bytes
   7  BROADCAST  as COPY_TO (count DPUs from first)                      -
   8  LAUNCH     -                                                       -
   9  LOG        u32 DPU                                                 blob: what it printed in the last launch
  10  QUIT       -                                                       - (then the server writes its report, exits)

The opcodes are the host harness's (`Op` of cnmtune.runtime.upmem.protocol): the same ten
calls, with the fields above.
"""

from __future__ import annotations

import enum

from cnmtune.runtime.upmem.protocol import Op

__all__ = ["DpuStatus", "HostApiError", "Op"]


class DpuStatus(enum.IntEnum):
    """The UPMEM SDK's dpu_error_t codes the simulator returns (include/dpu_error.h)."""

    OK = 0
    INTERNAL = 1
    SYSTEM = 2
    ALLOCATION = 4
    INVALID_DPU_SET = 5
    INVALID_WRAM_ACCESS = 8
    INVALID_IRAM_ACCESS = 9
    INVALID_MRAM_ACCESS = 10
    INVALID_SYMBOL_ACCESS = 11
    INVALID_MEMORY_TRANSFER = 18
    DPU_FAULT = 20
    ELF_INVALID_FILE = 21
    ELF_NO_SUCH_FILE = 22
    TIMEOUT = 24
    INVALID_PROFILE = 25
    UNKNOWN_SYMBOL = 26


class HostApiError(Exception):
    """A call the simulator refuses, with the SDK status the host program gets back."""

    def __init__(self, status: DpuStatus, message: str):
        super().__init__(message)
        self.status = status
