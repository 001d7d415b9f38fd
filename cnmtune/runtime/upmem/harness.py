"""cnmtune's C host harness: built once against the SDK, driven over a pipe (protocol.py).

Used when the SDK's Python bindings cannot be imported (e.g. the SDK ships them for another
Python than cnmtune's). The harness is compiled on demand with
`cc -O2 -o harness host_harness.c $(dpu-pkg-config --cflags --libs dpu)` (FACTS.md §8, the
host build PrIM uses) plus an rpath to the SDK's library directories, and kept in the build
cache under a key of its source, the compiler and the SDK's flags.
"""

from __future__ import annotations

import os
import select
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from cnmtune.errors import DeviceError, ToolchainMissing
from cnmtune.runtime.toolchain.cache import BuildCache, content_key
from cnmtune.runtime.upmem.host import HostLibrary
from cnmtune.runtime.upmem.protocol import OK, Op, ProtocolError, Reader, Writer, frame
from cnmtune.runtime.upmem.sdk import HOW_TO, UpmemSdk

HARNESS_SOURCE = Path(__file__).with_name("host_harness.c")
WIRE_HEADER = HARNESS_SOURCE.with_name("wire.h")  # included by the harness: part of its cache key


def _compiler() -> str:
    cc = os.environ.get("CC") or "cc"
    found = shutil.which(cc)
    if found is None:
        raise ToolchainMissing(f"no C compiler to build cnmtune's UPMEM host harness: {cc!r} is not on PATH "
                               "(install gcc or set CC), or make the SDK's Python module `dpu` importable")
    return found


def build_harness(sdk: UpmemSdk, cache: BuildCache | None = None) -> tuple[Path, dict[str, str]]:
    """The harness executable (built on first use) and the environment to run it in."""
    cache = cache or BuildCache()
    pkg_config = sdk.pkg_config
    try:
        proc = subprocess.run([str(pkg_config), "--cflags", "--libs", "dpu"], capture_output=True, text=True,
                              timeout=60)
    except OSError as exc:
        raise ToolchainMissing(f"cannot run {pkg_config}: {exc}") from exc
    if proc.returncode != 0:
        raise ToolchainMissing(f"`{pkg_config} --cflags --libs dpu` failed: "
                               f"{(proc.stderr or proc.stdout).strip() or 'no output'}; {HOW_TO}")
    flags = shlex.split(proc.stdout)
    lib_dirs = [flag[2:] for flag in flags if flag.startswith("-L") and len(flag) > 2]
    cc = _compiler()
    source = HARNESS_SOURCE.read_bytes()
    key = content_key("host-harness-1", source, WIRE_HEADER.read_bytes(), cc, *flags)
    target = cache.path("upmem-harness", key, "")
    if not target.is_file():
        with tempfile.TemporaryDirectory(prefix="cnmtune-harness-") as tmp:
            out = Path(tmp) / "harness"
            args = [cc, "-O2", "-o", str(out), str(HARNESS_SOURCE), *flags, *(f"-Wl,-rpath,{d}" for d in lib_dirs)]
            built = subprocess.run(args, capture_output=True, text=True, timeout=300)
            if built.returncode != 0:
                raise ToolchainMissing(f"cannot build cnmtune's UPMEM host harness against the SDK in "
                                       f"{sdk.bin_dir} ({shlex.join(args)}): {built.stderr.strip()[-1500:]}")
            out.chmod(0o755)
            target.parent.mkdir(parents=True, exist_ok=True)
            staged = target.with_name(f".{target.name}.{os.getpid()}.{Path(tmp).name}")
            shutil.move(str(out), staged)
            staged.replace(target)
        cache.added(target)
    env = dict(os.environ)
    if lib_dirs:  # the SDK loads its backends (libdpufsim, libdpuhw) from its library directory
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*lib_dirs, *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return target, env


class HarnessHost(HostLibrary):
    """The protocol client: one harness subprocess holding one DPU set."""

    name = "harness"

    def __init__(self, command: Sequence[str], env: dict[str, str] | None = None, timeout_s: float | None = None):
        self.command = [str(c) for c in command]
        self.timeout_s = timeout_s
        self.nr_dpus = 0
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, env=env, bufsize=0)
        except OSError as exc:
            self._stderr.close()
            raise ToolchainMissing(f"cannot start the UPMEM host harness {self.command[0]}: {exc}") from exc

    # ------------------------------------------------------------ framing
    def _call(self, op: Op, fields: Writer | None = None) -> Reader:
        if self.proc.poll() is not None:
            raise self._exited(op)
        payload = bytes([op]) + (fields.payload() if fields else b"")
        try:
            self.proc.stdin.write(frame(payload))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._exited(op) from None
        head = self._read(4, op)
        body = self._read(int.from_bytes(head, "little"), op)
        reader = Reader(body)
        try:
            status = reader.u8()
        except ProtocolError:
            raise DeviceError(f"UPMEM host harness sent an empty response to {op.name}") from None
        if status != OK:
            raise DeviceError(f"UPMEM host library: {op.name} failed: {reader.rest().decode(errors='replace').strip()}")
        return reader

    def _read(self, n: int, op: Op) -> bytes:
        fd = self.proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            ready, _, _ = select.select([fd], [], [], self.timeout_s)
            if not ready:
                self._stop()
                raise DeviceError(f"UPMEM {op.name} did not answer within {self.timeout_s} s; "
                                  "the host harness was stopped")
            chunk = os.read(fd, min(n - got, 1 << 20))
            if not chunk:
                raise self._exited(op)
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _exited(self, op: Op) -> DeviceError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace").strip()[-1500:]
        return DeviceError(f"UPMEM host harness {self.command[0]} exited (code {code}) during {op.name}: "
                           f"{tail or 'no message on stderr'}")

    def _stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # ------------------------------------------------------------ HostLibrary
    def alloc(self, nr_dpus: int, profile: str) -> int:
        self.nr_dpus = self._call(Op.ALLOC, Writer().u32(nr_dpus).text(profile)).u32()
        return self.nr_dpus

    def load(self, elf_path: str) -> None:
        self._call(Op.LOAD, Writer().text(str(elf_path)))

    def copy_to(self, dpu: int, symbol: str, offset: int, data: bytes) -> int:
        return self._call(Op.COPY_TO, Writer().u32(dpu).text(symbol).u32(offset).blob(data)).u64()

    def copy_from(self, dpu: int, symbol: str, offset: int, nbytes: int) -> tuple[bytes, int]:
        reader = self._call(Op.COPY_FROM, Writer().u32(dpu).text(symbol).u32(offset).u32(nbytes))
        ns = reader.u64()
        return reader.raw(nbytes), ns

    def push_to(self, symbol: str, offset: int, buffers: list[bytes]) -> int:
        size = len(buffers[0]) if buffers else 0
        fields = Writer().text(symbol).u32(offset).u32(size).u32(len(buffers))
        for buffer in buffers:
            fields.raw(buffer)
        return self._call(Op.PUSH_TO, fields).u64()

    def push_from(self, symbol: str, offset: int, size: int) -> tuple[list[bytes], int]:
        reader = self._call(Op.PUSH_FROM, Writer().text(symbol).u32(offset).u32(size))
        ns = reader.u64()
        return [reader.raw(size) for _ in range(self.nr_dpus)], ns

    def broadcast(self, symbol: str, offset: int, data: bytes) -> int:
        return self._call(Op.BROADCAST, Writer().text(symbol).u32(offset).blob(data)).u64()

    def launch(self, cycles_symbol: str | None) -> tuple[int, tuple[int, ...]]:
        reader = self._call(Op.LAUNCH, Writer().text(cycles_symbol or ""))
        ns = reader.u64()
        return ns, tuple(reader.u64() for _ in range(reader.u32()))

    def log(self, dpu: int) -> str:
        return self._call(Op.LOG, Writer().u32(dpu)).blob().decode(errors="replace")

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                saved, self.timeout_s = self.timeout_s, 30.0
                try:
                    self._call(Op.QUIT)
                except DeviceError:
                    pass
                finally:
                    self.timeout_s = saved
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self._stop()
        finally:
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self._stderr.close()
