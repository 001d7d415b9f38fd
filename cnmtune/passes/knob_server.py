"""The knob processes' program (the child side of cnmtune.runtime.toolchain.knob_process) and
their wire format.

A knob process's LLVM runs with one fixed set of knobs: it optimises the modules its parent sends
until its input closes (or its parent stops reading: an interrupted parent). Knob processes are
forked by one fork server per parent process (``fork_server``), which has imported llvmlite and
initialised LLVM's targets but set no knob: a fork costs milliseconds where a new interpreter took
0.2 s, and a tune starts one knob process per knob set (13) in every compile worker. The server
imports only llvmlite and cnmtune.passes, not the toolchain.

Fork server: its parent sends, over a Unix socket, one message per knob process to start (JSON:
the knobs and the codegen level) with two file descriptors (the process's input and output); the
server forks, and answers with the new process's pid. A message ``wait PID`` answers with that
process's exit status once it has ended (the server kills it if it lingers 10 s). The server ends
when the socket closes.

Knob process wire format, both directions: 4-byte little-endian length, then that many bytes. A
request is two messages (IR text, pipeline text); an answer is one message whose first byte is 0
(bitcode follows) or 1 (the error's text follows).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import time
from collections.abc import Sequence
from typing import BinaryIO

from cnmtune.passes.apply import optimize_ir
from cnmtune.passes.knobs import set_process_knobs
from cnmtune.passes.pipeline import Pipeline
from cnmtune.passes.target import initialise_targets, rv32_target_machine

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


def serve(knobs: Sequence[tuple[str, int]], codegen_level: int, requests: BinaryIO, answers: BinaryIO) -> None:
    """A knob process: set `knobs` once, then answer the requests read from `requests` until it
    closes."""
    set_process_knobs(knobs)
    target_machine = rv32_target_machine(codegen_level)
    while (ir := receive(requests)) is not None and (pipeline := receive(requests)) is not None:
        try:
            # the IR's own context: the bitcode is then the IR's and the pipeline's alone, where in
            # one shared context every parse renames the module's named types (%struct.t.0.12)
            module = optimize_ir(ir.decode(), Pipeline.parse(pipeline.decode()), target_machine, own_context=True)
            answer = b"\0" + module.as_bitcode()
        except Exception as exc:  # the parent raises it as a CompileError naming the pipeline
            answer = b"\1" + f"{type(exc).__name__}: {exc}".encode()
        try:
            send(answers, answer)
            answers.flush()
        except BrokenPipeError:  # the parent is gone: no one to answer, nothing to report
            return


def fork_server(control: int) -> None:
    """The fork server (see the module docstring), on the Unix socket `control` (a file
    descriptor); SIGINT is ignored (the caller sets that before its imports)."""
    initialise_targets()  # inherited by every knob process: the part of its start a fork saves
    channel = socket.socket(fileno=control)
    while True:
        message, fds, _, _ = socket.recv_fds(channel, 65536, 2)
        if not message:  # the parent is gone; knob processes end as their inputs close
            return
        if message.startswith(b"wait "):
            channel.sendall(str(_exit_status(int(message[5:]))).encode())
            continue
        knobs, codegen_level = json.loads(message)
        pid = os.fork()
        if pid == 0:  # the knob process: it never returns to the server's loop
            status = 1
            try:
                channel.close()
                with os.fdopen(fds[0], "rb") as requests, os.fdopen(fds[1], "wb") as answers:
                    serve([(name, value) for name, value in knobs], codegen_level, requests, answers)
                status = 0
            finally:
                os._exit(status)
        for fd in fds:
            os.close(fd)
        channel.sendall(str(pid).encode())


def _exit_status(pid: int) -> int:
    """A knob process's exit status as subprocess reports it (-N: killed by signal N), once it has
    ended; killed if it has not within 10 s."""
    deadline = time.monotonic() + 10
    while (ended := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            ended = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    return os.waitstatus_to_exitcode(ended[1])
