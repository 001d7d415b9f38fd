"""The processes that optimise pipelines with LLVM knobs: one per knob set, kept for reuse.

LLVM options cannot be unset once given (cnmtune.passes.knobs), so the proxy toolchain never
sets a knob in its own process: a pipeline with knobs is optimised by a child process started
with exactly that knob set, which reads (IR, pipeline) requests on its input and answers with the
optimised module's bitcode (their program and the wire formats: cnmtune.passes.knob_server).
Knob processes are forked by a fork server, one per process that needs them (started on first
use), so that each starts in milliseconds. The server is a plain subprocess, not
multiprocessing: Dask's worker processes are daemonic and may not start multiprocessing
children. It and its knob processes ignore Ctrl-C from their first instruction (SIGINT reaches
the whole process group; the parent stops, and a knob process ends when its input closes).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import threading
from typing import BinaryIO

from cnmtune.errors import CompileError
from cnmtune.passes.knob_server import receive, send
from cnmtune.passes.knobs import knobs_text

# the fork server's program: SIGINT ignored before the imports, which take a while
_FORK_SERVER = ("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); import sys; "
                "from cnmtune.passes.knob_server import fork_server; fork_server(int(sys.argv[1]))")


class _ForkServer:
    """The child process that forks knob processes (cnmtune.passes.knob_server.fork_server)."""

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one message a packet
        self._process = subprocess.Popen([sys.executable, "-c", _FORK_SERVER, str(theirs.fileno())],
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL)
        theirs.close()
        self._channel = ours
        self._lock = threading.Lock()

    def start(self, knobs: tuple[tuple[str, int], ...], codegen_level: int) -> tuple[int, BinaryIO, BinaryIO]:
        """A new knob process: its pid, the stream its requests go to and the one its answers come from."""
        requests_in, requests = os.pipe()
        answers, answers_out = os.pipe()
        try:
            pid = self._ask(json.dumps([knobs, codegen_level]).encode(), [requests_in, answers_out])
        except (OSError, ValueError):  # the server is gone (or garbled): the next knob set starts another
            fork_server.cache_clear()
            os.close(requests)
            os.close(answers)
            self._channel.close()
            raise CompileError(f"the fork server of the knob processes died ({self._exit_status()})") from None
        finally:
            os.close(requests_in)
            os.close(answers_out)
        return pid, os.fdopen(requests, "wb"), os.fdopen(answers, "rb")

    def _exit_status(self) -> str:
        """The server's own exit status (killed if it lingers 10 s after its socket closed)."""
        try:
            return f"exit status {self._process.wait(timeout=10)}"
        except subprocess.TimeoutExpired:
            self._process.kill()
            return "it answered no more and was killed"

    def exit_status(self, pid: int) -> int | None:
        """The exit status of knob process `pid` once it has ended (None: the server is gone)."""
        try:
            return self._ask(f"wait {pid}".encode())
        except (OSError, ValueError):
            return None

    def _ask(self, message: bytes, fds: list[int] | None = None) -> int:
        """Send the server one message (with the file descriptors `fds`) and read its answer, a
        number; OSError or ValueError where the server is gone or garbled."""
        with self._lock:
            socket.send_fds(self._channel, [message], fds or [])
            return int(self._channel.recv(64))


@functools.cache
def fork_server() -> _ForkServer:
    """This process's fork server of knob processes (started on first use; it ends when this
    process closes its socket)."""
    return _ForkServer()


class KnobProcess:
    """A child process whose LLVM runs with `knobs`; `optimize` sends it one module."""

    def __init__(self, knobs: tuple[tuple[str, int], ...], codegen_level: int):
        self.knobs = knobs
        self._lock = threading.Lock()
        self._server = fork_server()
        self.pid, self._requests, self._answers = self._server.start(knobs, codegen_level)

    def _exit_status(self) -> str:
        """Why the child's answer ended: its exit status (killed if it lingers without output)."""
        with contextlib.suppress(OSError):  # its input closed: a knob process still running ends
            self._requests.close()
        status = self._server.exit_status(self.pid)
        return "its fork server is gone" if status is None else f"exit status {status}"

    def optimize(self, ir: str, pipeline: str) -> bytes:
        """Bitcode of `ir` optimised with `pipeline` (whose knobs are this process's)."""
        with self._lock:
            try:
                send(self._requests, ir.encode())
                send(self._requests, pipeline.encode())
                self._requests.flush()
                answer = receive(self._answers)
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
    """The process kept for `knobs` (started on first use; it ends when this process closes its input)."""
    return KnobProcess(knobs, codegen_level)


def _forget_processes() -> None:
    """In a forked child: the parent's knob processes and fork server answer the parent only."""
    knob_process.cache_clear()
    fork_server.cache_clear()


os.register_at_fork(after_in_child=_forget_processes)
