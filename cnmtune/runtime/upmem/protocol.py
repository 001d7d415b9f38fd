"""The host-harness protocol: length-prefixed binary frames over the harness's stdin/stdout.

Every message is a frame: a u32 payload length, then the payload. All integers are little
endian; `str` and `blob` are a u32 length and that many bytes (str: UTF-8, no terminator).
A request payload is a u8 opcode and the opcode's fields; a response payload is a u8 status
(0 ok, 1 error) and then the ok fields below, or, for an error, the SDK's message as UTF-8
(the rest of the payload, no length).

  op  name       request fields                                         ok response fields
   1  ALLOC      u32 nr_dpus, str profile                               u32 nr_dpus allocated
   2  LOAD       str elf_path                                           -
   3  COPY_TO    u32 dpu, str symbol, u32 offset, blob data             u64 ns
   4  COPY_FROM  u32 dpu, str symbol, u32 offset, u32 nbytes            u64 ns, nbytes raw bytes
   5  PUSH_TO    str symbol, u32 offset, u32 size, u32 count,           u64 ns
                 count * size raw bytes (DPU i's buffer at i * size)
   6  PUSH_FROM  str symbol, u32 offset, u32 size                       u64 ns, nr_dpus * size raw bytes
   7  BROADCAST  str symbol, u32 offset, blob data                      u64 ns
   8  LAUNCH     str cycles_symbol ('' for none)                        u64 ns, u32 k, k * u64 counters
   9  LOG        u32 dpu                                                blob text
  10  QUIT       -                                                      - (then the harness exits)

`ns` is host wall-clock time around the SDK call (CLOCK_MONOTONIC): for LAUNCH the
synchronous dpu_launch, as PrIM times its kernels; for transfers the dpu_copy/push/broadcast.
LAUNCH's counters are one u64 per DPU read from `cycles_symbol` after the launch (a counter
the kernel itself keeps, e.g. from perfcounter_get()); k = 0 when no symbol is given.
"""

from __future__ import annotations

import enum
import struct


class Op(enum.IntEnum):
    """Request opcodes."""

    ALLOC = 1
    LOAD = 2
    COPY_TO = 3
    COPY_FROM = 4
    PUSH_TO = 5
    PUSH_FROM = 6
    BROADCAST = 7
    LAUNCH = 8
    LOG = 9
    QUIT = 10


OK, ERROR = 0, 1
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class ProtocolError(Exception):
    """A frame that does not follow the protocol (short, trailing bytes, unknown opcode)."""


class Writer:
    """Builds one payload field by field."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def u8(self, value: int) -> "Writer":
        self._parts.append(bytes([value]))
        return self

    def u32(self, value: int) -> "Writer":
        self._parts.append(_U32.pack(value))
        return self

    def u64(self, value: int) -> "Writer":
        self._parts.append(_U64.pack(value))
        return self

    def text(self, value: str) -> "Writer":
        return self.blob(value.encode())

    def blob(self, data: bytes) -> "Writer":
        self._parts.append(_U32.pack(len(data)))
        self._parts.append(bytes(data))
        return self

    def raw(self, data: bytes) -> "Writer":
        self._parts.append(bytes(data))
        return self

    def payload(self) -> bytes:
        """The payload built so far."""
        return b"".join(self._parts)


class Reader:
    """Reads one payload field by field; ProtocolError when it runs short."""

    def __init__(self, payload: bytes) -> None:
        self._data = memoryview(payload)
        self._pos = 0

    def _take(self, n: int) -> memoryview:
        if self._pos + n > len(self._data):
            raise ProtocolError(f"payload too short: needed {n} more bytes at {self._pos} of {len(self._data)}")
        view = self._data[self._pos:self._pos + n]
        self._pos += n
        return view

    def u8(self) -> int:
        return self._take(1)[0]

    def u32(self) -> int:
        return _U32.unpack(self._take(4))[0]

    def u64(self) -> int:
        return _U64.unpack(self._take(8))[0]

    def text(self) -> str:
        return self.blob().decode("utf-8", errors="replace")

    def blob(self) -> bytes:
        return bytes(self._take(self.u32()))

    def raw(self, n: int) -> bytes:
        return bytes(self._take(n))

    def rest(self) -> bytes:
        """Everything not read yet."""
        return bytes(self._take(len(self._data) - self._pos))

    def done(self) -> None:
        """Refuse trailing bytes."""
        if self._pos != len(self._data):
            raise ProtocolError(f"{len(self._data) - self._pos} unexpected trailing bytes in a payload")


def frame(payload: bytes) -> bytes:
    """A payload with its u32 length prefix."""
    return _U32.pack(len(payload)) + payload


def read_frame(stream) -> bytes | None:
    """The next payload from a binary stream; None at a clean end of stream."""
    head = _read_exact(stream, 4)
    if head is None:
        return None
    (length,) = _U32.unpack(head)
    payload = _read_exact(stream, length)
    if payload is None:
        raise ProtocolError(f"stream ended inside a {length}-byte frame")
    return payload


def _read_exact(stream, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError(f"stream ended after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
