"""The process that optimises pipelines with LLVM knobs: one per knob set, kept for reuse.

LLVM options cannot be unset once given (cnmtune.passes.knobs), so the proxy toolchain never
sets a knob in its own process: a pipeline with knobs is optimised by a child Python process
started with exactly that knob set (its program and the wire format: cnmtune.passes.knob_server),
which reads (IR, pipeline) requests on stdin and answers with the optimised module's bitcode on
stdout. A plain subprocess, not multiprocessing: Dask's worker processes are daemonic and may not
start multiprocessing children. The child ignores Ctrl-C from its first instruction (SIGINT
reaches the whole process group; its parent stops, and the child ends when its stdin closes).
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading

from cnmtune.errors import CompileError
from cnmtune.passes.knob_server import receive, send
from cnmtune.passes.knobs import knobs_text

# the child's program: SIGINT ignored before the imports, which take a while
_SERVE = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
          "from cnmtune.passes.knob_server import serve; serve()")


class KnobProcess:
    """A child process whose LLVM runs with `knobs`; `optimize` sends it one module."""

    def __init__(self, knobs: tuple[tuple[str, int], ...], codegen_level: int):
        self.knobs = knobs
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, json.dumps(knobs), str(codegen_level)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def _exit_status(self) -> str:
        """Why the child's answer ended: its exit status (killed if it lingers without output)."""
        try:
            return f"exit status {self._process.wait(timeout=10)}"
        except subprocess.TimeoutExpired:
            self._process.kill()
            return "it closed its output and was killed"

    def optimize(self, ir: str, pipeline: str) -> bytes:
        """Bitcode of `ir` optimised with `pipeline` (whose knobs are this process's)."""
        with self._lock:
            try:
                send(self._process.stdin, ir.encode())
                send(self._process.stdin, pipeline.encode())
                self._process.stdin.flush()
                answer = receive(self._process.stdout)
            except OSError:  # a broken pipe: the child is gone, and its exit status says why
                answer, cause = None, self._exit_status()
            else:
                cause = "" if answer else self._exit_status()
        if not answer:
            knob_process.cache_clear()  # the next pipeline with knobs starts a new one
            raise CompileError(f"the process optimising with LLVM knobs {knobs_text(self.knobs)} died ({cause}) "
                               f"on {pipeline}")
        if answer[0] == 1:
            raise CompileError(f"{pipeline}: {answer[1:].decode()}")
        return answer[1:]


@functools.cache
def knob_process(knobs: tuple[tuple[str, int], ...], codegen_level: int) -> KnobProcess:
    """The process kept for `knobs` (started on first use; it ends when this process closes its stdin)."""
    return KnobProcess(knobs, codegen_level)
