"""The child side of cnmtune.runtime.toolchain.knob_process: a process whose LLVM runs with one
fixed set of knobs, optimising the modules its parent sends until its stdin closes (or its parent
stops reading: an interrupted parent)."""

from __future__ import annotations

import json
import os
import sys

from cnmtune.passes import Pipeline
from cnmtune.passes.knobs import set_process_knobs
from cnmtune.runtime.toolchain.knob_process import receive, send
from cnmtune.runtime.toolchain.proxy import ProxyToolchain


def serve() -> None:
    """Child side (argv: the knobs as JSON, the codegen level): set the knobs once, then answer
    requests until stdin closes."""
    set_process_knobs([(name, value) for name, value in json.loads(sys.argv[1])])
    toolchain = ProxyToolchain(codegen_level=int(sys.argv[2]))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (ir := receive(stdin)) is not None and (pipeline := receive(stdin)) is not None:
        try:
            answer = b"\0" + toolchain.optimize(ir.decode(), Pipeline.parse(pipeline.decode())).as_bitcode()
        except Exception as exc:  # the parent raises it as a CompileError naming the pipeline
            answer = b"\1" + f"{type(exc).__name__}: {exc}".encode()
        try:
            send(stdout, answer)
            stdout.flush()
        except BrokenPipeError:  # the parent is gone: no one to answer, nothing to report
            os._exit(0)
