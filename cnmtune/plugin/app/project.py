"""An unmodified UPMEM application in PrIM's layout: built by its own Makefile, run on the simulator.

The layout: a Makefile (with NR_DPUS / NR_TASKLETS / BL-style variables) that builds a host
program with `$(CC) ... $(dpu-pkg-config --cflags --libs dpu)` and the DPU program with
`dpu-upmem-dpurte-clang`. `plan` reads what the Makefile would run (`make -n -B`): the host
program is the output of the line that calls dpu-pkg-config, the DPU program the output of
the last line that calls the DPU compiler (PrIM's bin/host_code and bin/dpu_code, or BS's
bin/bs_host and bin/bs_dpu). `build` runs the Makefile with cnmtune's host library and shims
first on PATH (runtime.hostapi.build), never leaving a build made for other parameters in place
(AppProject.build); `run` starts the host program in the directory with a report file and, by
default, the host clock on simulated time, and returns what it printed with the simulated times
of its DPU sets.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from cnmtune.atomic import atomic_write
from cnmtune.errors import CnmtuneError, UsageError
from cnmtune.runtime.hostapi import host_environment

DPU_COMPILER = "dpu-upmem-dpurte-clang"
BUILD_STAMP = ".cnmtune-build.json"  # beside the host program: what its build was made with


class AppError(CnmtuneError):
    """An application that cannot be built or run (the message names the step and the cause)."""


@dataclass(frozen=True)
class SetTimes:
    """Simulated seconds of one DPU set of a run (totals of report.SetReport)."""

    nr_dpus: int
    simulated_dpus: int
    launches: int
    kernel_s: float
    host_to_dpu_s: float
    dpu_to_host_s: float
    kernel_per_launch_s: tuple[float, ...]
    host_to_dpu_bytes: int = 0

    @classmethod
    def from_report(cls, entry: Mapping) -> "SetTimes":
        """One entry of the report file's "sets"."""
        totals = entry["totals"]
        return cls(entry["nr_dpus"], entry["simulated_dpus"], len(entry["launches"]), totals["kernel_s"],
                   totals["host_to_dpu_s"], totals["dpu_to_host_s"],
                   tuple(launch["kernel_s"] for launch in entry["launches"]), totals["host_to_dpu_bytes"])


@dataclass
class AppRun:
    """One run of an application's host program."""

    command: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    sets: list[SetTimes] = field(default_factory=list)

    @property
    def killed_by(self) -> str | None:
        """The signal that ended the host program ('SIGSEGV'); None when it exited."""
        if self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:  # a real-time signal has no name
            return f"signal {-self.returncode}"

    @property
    def kernel_s(self) -> float:
        """Simulated DPU kernel seconds of every launch of every set."""
        return sum(s.kernel_s for s in self.sets)

    def to_dict(self) -> dict:
        """The JSON form (what `cnmtune app run --json` prints)."""
        return {"command": self.command, "returncode": self.returncode, "killed_by": self.killed_by,
                "wall_s": self.wall_s, "kernel_s": self.kernel_s,
                "sets": [vars(s) | {"kernel_per_launch_s": list(s.kernel_per_launch_s)} for s in self.sets]}


def make_variables(dpus: int | None, tasklets: int | None, extra: Sequence[str]) -> dict[str, str]:
    """NR_DPUS / NR_TASKLETS and NAME=VALUE items, as given on the command line, as make variables;
    a DPU count the simulator cannot allocate is refused before anything is built."""
    from cnmtune.runtime.hostapi.server import MAX_DPUS

    variables: dict[str, str] = {}
    if dpus is not None:
        variables["NR_DPUS"] = str(dpus)
    if tasklets is not None:
        variables["NR_TASKLETS"] = str(tasklets)
    for item in extra:
        name, equals, value = item.partition("=")
        if not equals or not name.strip().isidentifier():
            raise UsageError(f"make variable {item!r}: expected NAME=VALUE")
        variables[name.strip()] = value
    nr_dpus = variables.get("NR_DPUS", "").strip()
    if nr_dpus.lstrip("-").isdigit() and not 1 <= int(nr_dpus) <= MAX_DPUS:
        raise UsageError(f"NR_DPUS={nr_dpus}: an application allocates 1 to {MAX_DPUS:,} DPUs (a whole UPMEM "
                         "system, the most the simulator serves)")
    return variables


def tail(text: str, limit: int) -> str:
    """The end of `text` in at most `limit` characters, for an error to quote: cut before a line,
    or in a longer last line before a word, never inside one; '...' marks the cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[-limit:]
    if text[-limit - 1] not in "\n ":  # the window starts inside a line: skip to the next line, or word
        for boundary in ("\n", " "):
            if boundary in window:
                window = window[window.index(boundary) + 1:]
                break
    return "..." + window.lstrip()


@dataclass(frozen=True)
class MakePlan:
    """What the Makefile builds with some variables: the host program, the DPU program and the
    command lines (argv) that build the DPU program."""

    host_binary: Path
    dpu_binary: Path
    dpu_lines: tuple[tuple[str, ...], ...]


def _output(argv: Sequence[str]) -> str | None:
    """The -o argument of a compiler command line."""
    for i, arg in enumerate(argv):
        if arg == "-o" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("-o") and len(arg) > 2:
            return arg[2:]
    return None


def _command_lines(dry_run: str) -> list[list[str]]:
    """The argv of each command line of `make -n` output (recipe lines continued with a backslash joined)."""
    lines = []
    for line in re.sub(r"\\\n\s*", " ", dry_run).splitlines():
        try:
            argv = shlex.split(line)
        except ValueError:  # not a command make runs as such (an unbalanced quote in an echo, ...)
            continue
        if argv:
            lines.append(argv)
    return lines


def _stamp(commands: str, library: str, outputs: Sequence[Path]) -> dict:
    """What a build was made with (see AppProject.build): the files as [path, size, mtime_ns], or null if absent."""
    files = []
    for path in outputs:
        try:
            info = path.stat()
        except OSError:
            files.append([str(path), None, None])
        else:
            files.append([str(path), info.st_size, info.st_mtime_ns])
    return {"commands_sha256": commands, "host_library": library, "outputs": files}


def _read_stamp(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # absent or unreadable: the build is not known to be current
        return None


class AppProject:
    """An application directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike, host_binary: str | None = None):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise AppError(f"{root} is not a directory")
        if not any((self.root / name).is_file() for name in ("Makefile", "makefile", "GNUmakefile")):
            raise AppError(f"{root} has no Makefile: an application in PrIM's layout is built by its Makefile")
        self._host_binary = self.root / host_binary if host_binary else None

    def _make(self, variables: Mapping[str, str], *options: str) -> subprocess.CompletedProcess:
        make = shutil.which("make")
        if make is None:
            raise AppError("cannot build: `make` is not on PATH")
        _, env = host_environment()
        args = [make, "-C", str(self.root), *options, *(f"{k}={v}" for k, v in variables.items())]
        return subprocess.run(args, env=env, capture_output=True, text=True)

    def _dry_run(self, variables: Mapping[str, str]) -> str:
        """Every command line of a full build with `variables` (`make -n -B`), as make prints them."""
        done = self._make(variables, "-n", "-B")
        if done.returncode != 0:
            raise AppError(f"`make -n -B` failed in {self.root}: {tail(done.stderr, 800)}")
        return done.stdout

    def plan(self, variables: Mapping[str, str]) -> MakePlan:
        """What `make` would run with `variables` (see the module docstring)."""
        return self._plan(self._dry_run(variables))

    def _plan(self, dry_run: str) -> MakePlan:
        host, dpu_lines = None, []
        for argv in _command_lines(dry_run):
            if Path(argv[0]).name == DPU_COMPILER:
                dpu_lines.append(tuple(argv))
            elif any("dpu-pkg-config" in arg for arg in argv) and _output(argv):
                host = _output(argv)
        dpu = _output(dpu_lines[-1]) if dpu_lines else None
        if host is None or dpu is None:
            missing = "a host program (a line that calls dpu-pkg-config)" if host is None else \
                f"a DPU program (a line that calls {DPU_COMPILER} with -o)"
            raise AppError(f"the Makefile in {self.root} builds no {missing}: not an application in PrIM's layout")
        return MakePlan(self.root / host, self.root / dpu, tuple(dpu_lines))

    @property
    def host_binary(self) -> Path:
        """The host program: as given, or as the Makefile's default build makes it."""
        if self._host_binary is None:
            self._host_binary = self.plan({}).host_binary
        return self._host_binary

    def build(self, variables: Mapping[str, str], jobs: int = 1) -> str:
        """Run the Makefile with `variables`; its output. Never leaves a build made for other parameters.

        make rebuilds what is older than its prerequisites, and parameters are not files: PrIM's
        Makefiles stand a `.NR_DPUS_<n>_..._BL_<b>.conf` file in for them, which misses variables
        its name leaves out (VA's ENERGY) and breaks on a trailing space (NW's `BL ?= 1024 ` splits
        the name, so old ones are never removed and a DPU count built before keeps the last
        count's programs). So each build leaves a stamp beside the host program (BUILD_STAMP):
        a digest of every command line of a full build (`make -n -B` with the variables: their
        values as the Makefile expands them, however they are set, with its own defaults and
        flags), cnmtune's host library, and the size and mtime of each file those lines write with
        -o. When the stamp is missing or differs (other variables, an edited Makefile, a new host
        library, programs rebuilt by hand), the build is `make -B`, every target remade by the
        Makefile's own rules; else plain `make`, whose rules still catch edited sources. The stamp
        is removed before make runs and written once it succeeds: a failed build is never current.
        """
        dry_run = self._dry_run(variables)
        if self._host_binary is None:
            self._host_binary = self._plan(dry_run).host_binary
        library, _ = host_environment()
        outputs = sorted({self.root / out for argv in _command_lines(dry_run) if (out := _output(argv))}
                         | {self.host_binary})
        commands = hashlib.sha256(dry_run.encode()).hexdigest()
        stamp = self.host_binary.parent / BUILD_STAMP
        current = _read_stamp(stamp) == _stamp(commands, str(library), outputs)
        stamp.unlink(missing_ok=True)
        done = self._make(variables, f"-j{jobs}", *([] if current else ["-B"]))
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise AppError(f"`make` failed in {self.root} (exit {done.returncode}):\n{tail}")
        if not self.host_binary.is_file():
            raise AppError(f"the Makefile did not build {self.host_binary.relative_to(self.root)} "
                           "(give the host program's path with --host-binary)")
        atomic_write(stamp, (json.dumps(_stamp(commands, str(library), outputs), indent=1) + "\n").encode())
        return done.stdout + done.stderr

    def run(self, args: Sequence[str], simulated_clock: bool = True, env: Mapping[str, str] | None = None,
            timeout_s: float | None = None, echo: bool = False) -> AppRun:
        """Run the built host program with `args` in the project directory; with `echo` its output is
        also written to this process's stdout and stderr line by line as it runs."""
        if not self.host_binary.is_file():
            raise AppError(f"{self.host_binary} does not exist: build the application first (cnmtune app build)")
        _, run_env = host_environment()
        run_env.update(env or {})
        if simulated_clock:
            run_env["CNMTUNE_HOST_CLOCK"] = "simulated"
        command = [str(self.host_binary), *args]
        with tempfile.TemporaryDirectory(prefix="cnmtune-app-") as tmp:
            report = Path(tmp) / "report.json"
            run_env["CNMTUNE_REPORT"] = str(report)
            start = time.perf_counter()
            # a C program buffers a pipe's output fully: stdbuf makes it line-buffered, so it shows as it comes
            line_buffered = ["stdbuf", "-oL", "-eL"] if echo and shutil.which("stdbuf") else []
            with subprocess.Popen(line_buffered + command, cwd=self.root, env=run_env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) as proc:
                outputs = [_Collector(proc.stdout, sys.stdout if echo else None),
                           _Collector(proc.stderr, sys.stderr if echo else None)]
                try:
                    returncode = proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired as exc:
                    proc.kill()
                    raise AppError(f"{' '.join(command)} did not finish within {timeout_s:.0f} s") from exc
                finally:
                    stdout, stderr = (collector.text() for collector in outputs)
            wall = time.perf_counter() - start
            sets = json.loads(report.read_text())["sets"] if report.is_file() else []
        return AppRun(command, returncode, stdout, stderr, wall, [SetTimes.from_report(s) for s in sets])


class _Collector:
    """Reads one of a child's pipes to its end in a thread, keeping it and echoing it line by line."""

    def __init__(self, pipe: TextIO, echo: TextIO | None):
        self._lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(pipe, echo), daemon=True)
        self._thread.start()

    def _read(self, pipe: TextIO, echo: TextIO | None) -> None:
        for line in pipe:
            self._lines.append(line)
            if echo is not None:
                echo.write(line)
                echo.flush()

    def text(self) -> str:
        """Everything read (waits for the end of the pipe)."""
        self._thread.join()
        return "".join(self._lines)
