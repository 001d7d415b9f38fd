"""The knob process's program (the child side of cnmtune.runtime.toolchain.knob_process) and
their wire format.

A knob process's LLVM runs with one fixed set of knobs: it optimises the modules its parent sends
until its stdin closes (or its parent stops reading: an interrupted parent). It imports only
llvmlite and cnmtune.passes, not the toolchain, so that it starts quickly: a tune starts one per
knob set in every compile worker.

Wire format, both directions: 4-byte little-endian length, then that many bytes. A request is
two messages (IR text, pipeline text); an answer is one message whose first byte is 0 (bitcode
follows) or 1 (the error's text follows).
"""

from __future__ import annotations

import json
import os
import struct
import sys
from typing import BinaryIO

from cnmtune.passes.apply import optimize_ir
from cnmtune.passes.knobs import set_process_knobs
from cnmtune.passes.pipeline import Pipeline
from cnmtune.passes.target import rv32_target_machine

_LENGTH = struct.Struct("<I")


def send(stream: BinaryIO, payload: bytes) -> None:
    """Write one message (length, then bytes)."""
    stream.write(_LENGTH.pack(len(payload)) + payload)


def receive(stream: BinaryIO) -> bytes | None:
    """Read one message; None at the end of the stream."""
    header = stream.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        return None
    size = _LENGTH.unpack(header)[0]
    payload = stream.read(size)
    return payload if len(payload) == size else None  # cut short: the writer died


def serve() -> None:
    """Child side (argv: the knobs as JSON, the codegen level): set the knobs once, then answer
    requests until stdin closes."""
    set_process_knobs([(name, value) for name, value in json.loads(sys.argv[1])])
    target_machine = rv32_target_machine(int(sys.argv[2]))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (ir := receive(stdin)) is not None and (pipeline := receive(stdin)) is not None:
        try:
            answer = b"\0" + optimize_ir(ir.decode(), Pipeline.parse(pipeline.decode()), target_machine).as_bitcode()
        except Exception as exc:  # the parent raises it as a CompileError naming the pipeline
            answer = b"\1" + f"{type(exc).__name__}: {exc}".encode()
        try:
            send(stdout, answer)
            stdout.flush()
        except BrokenPipeError:  # the parent is gone: no one to answer, nothing to report
            os._exit(0)
