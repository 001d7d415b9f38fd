"""Driving an external LLVM `opt` (the UPMEM SDK's) with a cnmtune Pipeline.

cnmtune spells passes as llvmlite's new pass manager (LLVM 22) does. An older opt may know a
pass under another name or only through the legacy pass manager, so the opt is asked first:
- `opt --version` gives the LLVM major. From NEW_PM_MIN_MAJOR on, the pipeline goes through the
  new pass manager as one `-passes=<text>` argument; before it, as legacy flags (`-sroa
  -instcombine`, `-O2`).
- new PM: `opt --print-passes` lists every pass by level (module, CGSCC, function, loop); each
  cnmtune pass is mapped to the first of its candidate names that opt lists, and consecutive
  passes are nested by level (`function(sroa,loop(loop-rotate)),globalopt`), which every
  new-PM opt parses, whatever its rules for a flat list.
- legacy PM: the "Optimizations available:" section of `opt --help` lists the pass flags.
A pass the opt does not list is a PipelineError naming the pass, the opt and its version. If the
opt cannot list its passes, the names are passed on as they are and an "unknown pass" from opt
itself becomes the PipelineError. O0 runs no opt at all (as in the proxy toolchain).
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cnmtune.errors import PipelineError, ToolchainMissing
from cnmtune.passes import Pipeline
from cnmtune.passes.knobs import llvm_options
from cnmtune.passes.vocabulary import BY_NAME

# opt 12 has --print-passes, which cnmtune needs to check names and levels; from opt 13 on the
# new pass manager is also opt's default (the legacy one was removed from opt after LLVM 16).
NEW_PM_MIN_MAJOR = 12

MODULE, CGSCC, FUNCTION, LOOP = "module", "cgscc", "function", "loop"

# Candidate spellings, preferred first: the new PM renamed a few passes over the releases
# (lowerinvoke -> lower-invoke, ...); the legacy PM kept the old flag names.
_NEW_PM_NAMES: dict[str, tuple[str, ...]] = {
    "lower-atomic": ("lower-atomic", "loweratomic"),
    "lower-invoke": ("lower-invoke", "lowerinvoke"),
    "lower-switch": ("lower-switch", "lowerswitch"),
    "unify-function-exit-nodes": ("mergereturn", "unify-function-exit-nodes"),
    "loop-unroll": ("loop-unroll", "unroll"),
    "loop-unroll-and-jam": ("loop-unroll-and-jam", "unroll-and-jam"),
    "rpo-function-attrs": ("rpo-function-attrs", "rpo-functionattrs"),
}
_LEGACY_NAMES: dict[str, tuple[str, ...]] = {
    "function-attrs": ("functionattrs", "function-attrs"),
    "rpo-function-attrs": ("rpo-functionattrs", "rpo-function-attrs"),
    "lower-atomic": ("loweratomic", "lower-atomic"),
    "lower-invoke": ("lowerinvoke", "lower-invoke"),
    "lower-switch": ("lowerswitch", "lower-switch"),
    "unify-function-exit-nodes": ("mergereturn", "unify-function-exit-nodes"),
}
# Levels used only when opt cannot list its passes (module_only passes are module level).
_CGSCC_PASSES = frozenset({"argpromotion", "function-attrs"})
_LOOP_PASSES = frozenset({"loop-deletion", "loop-reduce", "loop-rotate", "loop-unroll-and-jam"})

_UNKNOWN_PASS = re.compile(r"unknown (?:\w+ )?pass|unknown command line argument|does not exist in pass", re.I)


def is_unknown_pass_error(stderr: str) -> bool:
    """True when opt's diagnostics say a pass name (or pass flag) is unknown."""
    return bool(_UNKNOWN_PASS.search(stderr))


def _run(path: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(path), *args], capture_output=True, text=True, timeout=120)
    except OSError as exc:
        raise ToolchainMissing(f"cannot run {path}: {exc}") from exc


def parse_print_passes(text: str) -> dict[str, str]:
    """Pass name -> level from `opt --print-passes` ("Function passes:" then indented names)."""
    levels: dict[str, str] = {}
    level = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            head = line.strip().rstrip(":").lower().split()
            # "Module passes:", "Function passes with params:", "LoopNest passes:"; analyses skipped
            level = {"module": MODULE, "cgscc": CGSCC, "function": FUNCTION, "loop": LOOP,
                     "loopnest": LOOP}.get(head[0]) if len(head) > 1 and head[1] == "passes" else None
            continue
        if level is not None:
            name = line.strip().split("<", 1)[0]
            levels.setdefault(name, level)
    return levels


def parse_legacy_help(text: str) -> frozenset[str]:
    """Pass flags from the "Optimizations available:" section of a legacy `opt --help`."""
    names: set[str] = set()
    indent = None
    for line in text.splitlines():
        if indent is None:
            if "Optimizations available:" in line:
                indent = len(line) - len(line.lstrip())
            continue
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        if match := re.match(r"^\s+--?([A-Za-z0-9][\w.-]*)\s+-\s", line):
            names.add(match.group(1))
    return frozenset(names)


@dataclass(frozen=True)
class OptTool:
    """One opt executable, its LLVM version and the pass-manager syntax it is driven with."""

    path: Path
    version: str

    @classmethod
    def probe(cls, path: Path) -> "OptTool":
        """Ask `opt --version` for the LLVM version."""
        proc = _run(path, "--version")
        match = re.search(r"LLVM version (\d+(?:\.\d+)*)", proc.stdout + proc.stderr)
        if proc.returncode != 0 or not match:
            raise ToolchainMissing(f"`{path} --version` did not report an LLVM version: "
                                   f"{(proc.stderr or proc.stdout).strip()[:300] or 'no output'}")
        return cls(Path(path), match.group(1))

    @property
    def major(self) -> int:
        """LLVM major version."""
        return int(self.version.split(".")[0])

    @property
    def new_pm(self) -> bool:
        """True when the pipeline is given as new-PM `-passes=` text."""
        return self.major >= NEW_PM_MIN_MAJOR

    @functools.cached_property
    def catalogue(self) -> dict[str, str] | frozenset[str] | None:
        """The passes this opt lists (new PM: name -> level; legacy: flag names); None if it cannot."""
        if self.new_pm:
            proc = _run(self.path, "--print-passes")
            levels = parse_print_passes(proc.stdout) if proc.returncode == 0 else {}
            return levels or None
        proc = _run(self.path, "--help")
        names = parse_legacy_help(proc.stdout) if proc.returncode == 0 else frozenset()
        return names or None

    def pipeline_args(self, pipeline: Pipeline) -> list[str]:
        """The opt arguments that run `pipeline`; [] for O0 (opt is not run)."""
        knobs = llvm_options(pipeline.knobs)
        if pipeline.is_level:
            if pipeline.level == "O0":
                return []
            return ([f"-passes=default<{pipeline.level}>"] if self.new_pm else [f"-{pipeline.level}"]) + knobs
        if not self.new_pm:
            return [f"-{self._spelling(name, _LEGACY_NAMES)}" for name in pipeline.passes] + knobs
        return [f"-passes={self._nested(pipeline.passes)}"] + knobs

    def _spelling(self, name: str, table: dict[str, tuple[str, ...]]) -> str:
        candidates = table.get(name, (name,))
        known = self.catalogue
        if known is None:
            return candidates[0]
        for candidate in candidates:
            if candidate in known:
                return candidate
        syntax = "new pass manager" if self.new_pm else "legacy pass manager"
        raise PipelineError(
            f"pass {name!r} is not available in the UPMEM SDK's opt (LLVM {self.version}, {syntax}, "
            f"{self.path}); it lists {len(known)} passes, none named {' or '.join(map(repr, candidates))}")

    def _level(self, spelled: str, name: str) -> str:
        known = self.catalogue
        if isinstance(known, dict):
            return known[spelled]
        if name in _CGSCC_PASSES:
            return CGSCC
        if name in _LOOP_PASSES:
            return LOOP
        return MODULE if BY_NAME[name].module_only else FUNCTION

    def _nested(self, names: tuple[str, ...]) -> str:
        items = [(spelled, self._level(spelled, name))
                 for name in names for spelled in [self._spelling(name, _NEW_PM_NAMES)]]
        parts: list[str] = []
        i = 0
        while i < len(items):
            name, level = items[i]
            if level == MODULE:
                parts.append(name)
                i += 1
                continue
            j = i
            if level == CGSCC:
                while j < len(items) and items[j][1] == CGSCC:
                    j += 1
                parts.append(f"cgscc({','.join(n for n, _ in items[i:j])})")
            else:
                while j < len(items) and items[j][1] in (FUNCTION, LOOP):
                    j += 1
                parts.append(f"function({_function_body(items[i:j])})")
            i = j
        return ",".join(parts)


def _function_body(items: list[tuple[str, str]]) -> str:
    """Function-level passes as they are, runs of loop passes wrapped in loop(...)."""
    parts: list[str] = []
    i = 0
    while i < len(items):
        if items[i][1] != LOOP:
            parts.append(items[i][0])
            i += 1
            continue
        j = i
        while j < len(items) and items[j][1] == LOOP:
            j += 1
        parts.append(f"loop({','.join(n for n, _ in items[i:j])})")
        i = j
    return ",".join(parts)
