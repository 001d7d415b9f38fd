"""Where the command line writes: rich consoles for tables and progress, JSON for machines, one
line per error.

The global flags set the verbosity once for every command: ``-q`` silences `err_console`
(progress bars, notes) and `note`; errors (`print_error`) and results always print.

What the consoles print shows as written: kernel names, paths, file contents and messages are the
user's data, never rich markup (`[bold]`) or emoji codes (`:x:`).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

USAGE_EXIT = 2  # the command line cannot run as written (cnmtune.errors.UsageError, typer's usage errors)
FAILURE_EXIT = 1  # the work failed
INTERRUPTED_EXIT = 130  # Ctrl-C (128 + SIGINT, as a shell reports it); typer exits so on KeyboardInterrupt

console = Console(markup=False, emoji=False)  # results: tables and lines a user reads
err_console = Console(stderr=True, markup=False, emoji=False)  # progress bars and notes on stderr; silent under -q
_error_console = Console(stderr=True, markup=False, emoji=False)  # errors and warnings: shown even under -q


@dataclass
class Verbosity:
    """The global -v / -q flags, set by the top-level command before any subcommand runs."""

    verbose: bool = False
    quiet: bool = False


verbosity = Verbosity()


def set_verbosity(verbose: bool, quiet: bool) -> None:
    """Apply -v (tracebacks with errors) and -q (no progress bars or notes) to every command."""
    verbosity.verbose, verbosity.quiet = verbose, quiet
    err_console.quiet = quiet


def emit_json(payload: object) -> None:
    """Print `payload` as indented, key-sorted JSON on stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def milliseconds(seconds: float | None) -> str:
    """Seconds as milliseconds for a table cell: 4 significant digits (at most 3 decimals, times span
    orders of magnitude), thousands separated; '-' for no time."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    ms = seconds * 1e3
    return f"{ms:,.{min(3, max(0, 3 - math.floor(math.log10(ms)))) if ms > 0 else 3}f}"


def note(text: str) -> None:
    """An informational line on stdout (e.g. 'wrote X'); silent under -q."""
    if not verbosity.quiet:
        console.print(text, highlight=False, markup=False, soft_wrap=True)


def warn(text: str) -> None:
    """A line about something that failed but did not stop the command; shown even under -q."""
    _error_console.print(text, highlight=False, markup=False, soft_wrap=True)


def print_error(line: str, as_json: bool) -> None:
    """An error as one line on stderr, and as {"error": line} on stdout for a --json command."""
    _error_console.print(Text.assemble(("error:", "bold red"), " ", line), highlight=False, soft_wrap=True)
    if as_json:
        emit_json({"error": line})


class PhaseBars:
    """The progress of the phase under way: a bar labelled with the phase (a new phase replaces the
    last one's bar: a finished bar never stands for work still running) and, off a terminal, plain
    lines (ProgressLines). Call it as progress(phase, done, total); a total of None (not known yet)
    shows a pulsing bar."""

    def __init__(self, bar: Progress, lines: ProgressLines):
        self._bar, self._lines = bar, lines
        self._phase: str | None = None
        self._task: int | None = None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if phase != self._phase:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._phase, self._task = phase, self._bar.add_task(phase, total=total)
        self._bar.update(self._task, completed=done, total=total)
        self._lines(phase, done, total)

    def of(self, item: str):
        """A progress(phase, done, total) whose phases are labelled `item: phase`."""
        return lambda phase, done, total: self(f"{item}: {phase}", done, total)


class ProgressLines:
    """Progress as a plain line per phase at most every `interval` seconds, and when a phase
    completes, on a console that is not a terminal (a log file under nohup, a pipe): rich's bars
    draw nothing there until they end. Call it as progress(phase, done, total[, detail]); on a
    terminal it prints nothing (the bars do) unless ``always`` (a caller without bars)."""

    def __init__(self, console: Console, interval: float = 60.0, clock=time.monotonic, always: bool = False):
        self._console, self._interval, self._clock = console, interval, clock
        self._enabled = always or not console.is_terminal
        self._first: dict[str, tuple[float, int]] = {}  # phase -> (time, done) of its first update
        self._last: dict[str, tuple[float, int]] = {}  # phase -> (time, done) of its last line

    def __call__(self, phase: str, done: int, total: int | None, detail: str = "") -> None:
        if not self._enabled:
            return
        now = self._clock()
        first_time, first_done = self._first.setdefault(phase, (now, done))
        last_time, last_done = self._last.get(phase, (first_time, None))
        finished = bool(total) and done >= total
        if done == last_done or (now - last_time < self._interval and not finished):
            return
        self._last[phase] = (now, done)
        elapsed = now - first_time
        rate = (done - first_done) / elapsed if elapsed > 0 else 0.0
        line = f"{phase}: {done:,}" + (f" / {total:,} ({100 * done / total:.0f} %)" if total else "")
        line += f", {rate:.1f}/s, elapsed {_clock_text(elapsed)}"
        if total and rate > 0 and not finished:
            line += f", eta {_clock_text((total - done) / rate)}"
        line += f", {detail}" if detail else ""
        self._console.print(line, highlight=False, markup=False, soft_wrap=True)


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


@contextlib.contextmanager
def phase_bars(label_width: int = 8) -> Iterator[PhaseBars]:
    """The progress of the phase under way on stderr while the block runs (silent under -q): a
    transient bar on a terminal, a line per phase elsewhere (a pipe, a log file)."""
    columns = (TextColumn(f"{{task.description:{label_width}}}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # off a terminal the bar draws nothing (but a blank line when it stops): the lines stand in for it
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        yield PhaseBars(bar, ProgressLines(err_console))


def print_pipeline_legend(ids: dict[str, str]) -> None:
    """Each pipeline in full after its short id (tables name pipelines by id), wrapped after a comma (a
    pass name is never cut)."""
    if not ids:
        return
    console.print("pipelines:", highlight=False)
    indent = 3 + max(len(i) for i in ids.values())
    for pipeline, pipeline_id in ids.items():
        lines = [""]
        for part in re.findall(r"[^,]+,?", pipeline):  # each pass with its comma
            if lines[-1] and indent + len(lines[-1]) + len(part) > console.width:
                lines.append("")
            lines[-1] += part
        console.print(f"  {pipeline_id:<{indent - 2}}" + f"\n{' ' * indent}".join(lines), highlight=False,
                      markup=False, soft_wrap=True)
