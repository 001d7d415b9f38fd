"""The Workload base class: what a kernel's workload.py declares and how its host side runs.

Compile-time side (class attributes): the defines the kernel understands with their defaults
and valid values. A define's value is an int, a string, or None for a bare flag (`-DINT32`,
PrIM's TYPE style). Host side (methods): seeded inputs for a problem size, the steps through
the Device API (pushes, launches, pulls), a numpy reference and the verification. One
instance describes one run: size, DPUs, tasklets and the variant's defines.
"""

from __future__ import annotations

import functools
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ClassVar

import numpy as np

from cnmtune.dpu.memory_map import DEFAULT_STACK_SIZE, MAX_TASKLETS, WRAM_SIZE
from cnmtune.errors import KernelError, VerificationError
from cnmtune.wording import counted

if TYPE_CHECKING:
    from cnmtune.runtime.device import Device

DefineValue = int | str | None
Arrays = dict[str, np.ndarray]


def define_text(name: str, value: DefineValue) -> str:
    """A define as a user writes it after -D: NAME (bare) or NAME=VALUE."""
    return name if value is None else f"{name}={value}"


def define_value(text: str | None) -> DefineValue:
    """The value of a -D as a workload reads it: None for a bare define, an int when the text is one."""
    if text is None:
        return None
    return int(text) if text.lstrip("-").isdigit() else text


def parse_define(text: str) -> tuple[str, DefineValue]:
    """NAME or NAME=VALUE, as after -D, as (name, value): the inverse of ``define_text``."""
    name, sep, value = text.partition("=")
    return name, define_value(value if sep else None)


# PrIM's element types, selected by a bare define (-DINT64) in the kernels that have a TYPE
ELEMENT_TYPES: dict[str, type] = {
    "INT32": np.int32, "UINT32": np.uint32, "INT64": np.int64, "UINT64": np.uint64,
    "FLOAT": np.float32, "DOUBLE": np.float64, "CHAR": np.int8, "SHORT": np.int16,
}


class Workload:
    """A kernel's compile-time description and host program; subclass it in workload.py."""

    name: ClassVar[str] = ""
    defines: ClassVar[dict[str, DefineValue]] = {}
    define_choices: ClassVar[dict[str, tuple[DefineValue, ...]]] = {}
    # defines that change only how fast the kernel runs, never what it computes (a block size, a
    # synchronisation scheme): the tuner searches their define_choices
    tuned_defines: ClassVar[tuple[str, ...]] = ()
    nr_tasklets: ClassVar[int] = 16
    sizes: ClassVar[dict[str, int]] = {}  # presets: small, default, large (total problem size)
    # groups of mutually exclusive bare defines (an element type, an operation); giving one
    # replaces the group's default, giving two is refused
    flag_groups: ClassVar[dict[str, tuple[str, ...]]] = {}
    # what `size` counts (PrIM's strong-scaling problem size) and the other run parameters
    size_unit: ClassVar[str] = "elements, total over all DPUs"
    params: ClassVar[dict[str, object]] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unchoosable = [d for d in cls.tuned_defines if d not in cls.define_choices]
        if unchoosable:
            raise KernelError(f"{cls.name or cls.__name__}: tuned define {unchoosable[0]} has no define_choices")
        if "inputs" in vars(cls):  # every workload's inputs, whichever caller asks for them
            cls.inputs = _allocating(cls.inputs)

    def __init__(self, size: int, nr_dpus: int, nr_tasklets: int,
                 defines: dict[str, DefineValue] | None = None, seed: int = 0, **params):
        if size < 1:
            raise KernelError(f"{self.name}: problem size must be positive, got {size}")
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            known = ", ".join(self.params) or "none"
            raise KernelError(f"{self.name}: unknown parameter {unknown[0]!r}; parameters: {known}")
        self.param_values = {**self.params, **params}
        self.size = size
        self.nr_dpus = nr_dpus
        self.tasklets = check_tasklets(nr_tasklets)
        self.config = self.resolve_defines(defines)
        self.seed = seed

    @classmethod
    def resolve_defines(cls, overrides: dict[str, DefineValue] | None = None) -> dict[str, DefineValue]:
        """The defaults updated with `overrides`, each checked against `define_choices`."""
        overrides = overrides or {}
        resolved = dict(cls.defines)
        for members in cls.flag_groups.values():
            if any(key in members for key in overrides):
                for member in members:
                    resolved.pop(member, None)
        for key, value in overrides.items():
            if key == "NR_TASKLETS":
                raise KernelError("set NR_TASKLETS with --tasklets, not as a define")
            resolved[key] = value
        for group, members in cls.flag_groups.items():
            given = [m for m in members if m in resolved]
            if len(given) > 1:
                raise KernelError(f"{cls.name}: give at most one {group} ({', '.join(given)} given)")
            if given and resolved[given[0]] is not None:
                raise KernelError(f"{cls.name}: {given[0]} is a bare define; use -D {given[0]} without a value")
        for key, choices in cls.define_choices.items():
            if key in resolved and resolved[key] not in choices:
                shown = ", ".join(str(c) for c in choices)
                raise KernelError(f"{cls.name}: {key}={resolved[key]} is not valid; choose one of {shown}")
        return resolved

    @classmethod
    def parse_param(cls, text: str) -> tuple[str, object]:
        """Parse 'K=V' into (K, V) with V converted to the type of K's default."""
        key, sep, value = text.partition("=")
        if not sep or key not in cls.params:
            known = ", ".join(cls.params) or "none"
            raise KernelError(f"{cls.name}: bad parameter {text!r}; use NAME=VALUE with NAME one of: {known}")
        default = cls.params[key]
        try:
            return key, type(default)(value) if default is not None else value
        except ValueError:
            raise KernelError(f"{cls.name}: parameter {key} expects {type(default).__name__}, got {value!r}") from None

    def check_wram(self, per_tasklet: int, reserved: int = 1024) -> None:
        """Refuse a tasklet count whose stacks and per-tasklet WRAM buffers exceed the WRAM left
        after `reserved` bytes of globals (mem_alloc would fault on the DPU)."""
        each = DEFAULT_STACK_SIZE + per_tasklet
        budget = WRAM_SIZE - reserved
        if self.tasklets * each > budget:
            raise KernelError(f"{self.name}: {counted(self.tasklets, 'tasklet')} with {per_tasklet} bytes of WRAM "
                              f"buffers each do not fit in WRAM; at most {counted(budget // each, 'tasklet')} with "
                              "these defines")

    def flag(self, group: str) -> str:
        """The bare define chosen in a flag group (the group's first member if none is set)."""
        members = self.flag_groups[group]
        return next((m for m in members if m in self.config), members[0])

    @classmethod
    def summary(cls) -> str:
        """What the kernel computes, in one line: the first paragraph of its workload.py docstring
        or, without one, of the Workload class docstring ('' when neither exists)."""
        module = sys.modules.get(cls.__module__)
        from_workload_py = Path(getattr(module, "__file__", None) or "").name == "workload.py"
        doc = (module.__doc__ if from_workload_py else None) or vars(cls).get("__doc__") or ""
        return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())

    @classmethod
    def preset(cls, name: str) -> int:
        """The problem size of a named preset ('small', 'default', 'large')."""
        if name not in cls.sizes:
            raise KernelError(f"{cls.name}: no size preset {name!r}; presets: {', '.join(cls.sizes) or 'none'}")
        return cls.sizes[name]

    @classmethod
    def size_of(cls, value: int | str, what: str = "size") -> int:
        """A problem size given as a positive integer (or its digits) or a preset name, resolved; `what`
        names the input in the error, which lists the presets with their sizes."""
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, int) and value > 0:
            return value
        if value in cls.sizes:
            return cls.sizes[value]
        named = ", ".join(f"{name} ({size:,})" for name, size in cls.sizes.items()) or "none"
        raise KernelError(f"{what} {value!r}: the size must be a positive integer or a preset name of "
                          f"{cls.name}: {named}")

    def launch_count(self) -> int:
        """DPU launches one run of the host program makes (1 unless the workload says otherwise).

        Part of the cost model's input: a binary launched three times (MLP's three layers of GEMV's
        program) runs about three times as long. A run checks it against the device's count."""
        return 1

    def part_per_dpu(self, multiple: int = 1) -> int:
        """Elements a DPU gets when the size is split evenly: ceil(size / DPUs), rounded up to a
        multiple of `multiple` (whole 8-byte words, whole blocks)."""
        return -(-(-(-self.size // self.nr_dpus)) // multiple) * multiple

    def processed_size(self) -> int:
        """The problem size the DPUs process in one run, in the size's unit: the nominal size
        after the host's padding or rounding (the nominal size unless the workload says otherwise).

        Part of the cost model's input instead of the nominal size: a host that pads every DPU's
        part to whole rounds of tasklet blocks makes a small problem on many DPUs cost as much as
        a far larger one (PrIM's TS pads its series to a multiple of DPUs x tasklets x 256)."""
        return self.size

    def inputs(self) -> Arrays:
        """Seeded input arrays for this size."""
        raise KernelError(f"{self.name}: workload.py defines no host side (inputs)")

    def execute(self, device: "Device", inputs: Arrays) -> Arrays:
        """Run the host program on `device` (a fresh device with the kernel loaded); return outputs."""
        raise KernelError(f"{self.name}: workload.py defines no host side (execute)")

    def reference(self, inputs: Arrays) -> Arrays:
        """The expected outputs, computed on the host with numpy."""
        raise KernelError(f"{self.name}: workload.py defines no host side (reference)")

    def verify(self, outputs: Arrays, expected: Arrays) -> None:
        """Exact comparison for integers, relative tolerance for floats; VerificationError otherwise."""
        for key, want in expected.items():
            got = outputs.get(key)
            if got is None or got.shape != want.shape:
                raise VerificationError(f"{self.name}: output {key!r} missing or of shape "
                                        f"{None if got is None else got.shape}, expected {want.shape}")
            if np.issubdtype(want.dtype, np.floating):
                bad = ~np.isclose(got, want, rtol=1e-4, atol=1e-6)
            else:
                bad = got != want
            if bad.any():
                first = int(np.flatnonzero(bad.ravel())[0])
                raise VerificationError(
                    f"{self.name}: {int(bad.sum())} of {want.size} elements of {key!r} differ; first at "
                    f"index {first}: got {got.ravel()[first].item()!r}, expected {want.ravel()[first].item()!r}")


def _allocating(inputs: Callable[[Workload], Arrays]) -> Callable[[Workload], Arrays]:
    """`inputs` with a size whose arrays cannot be made (numpy: MemoryError, or ValueError for a
    shape past its limits) reported as one KernelError naming the size."""
    @functools.wraps(inputs)
    def allocating(self: Workload) -> Arrays:
        try:
            return inputs(self)
        except (MemoryError, ValueError) as exc:
            raise KernelError(f"{self.name}: cannot make the inputs of size {self.size:,} ({exc})") from exc
    return allocating


def parse_report(log: str, tag: str) -> list[dict[str, int]]:
    """The `tag: key=value key=value` lines a kernel printed (integers), in order; none is an error."""
    rows = []
    for line in log.splitlines():
        head, sep, rest = line.partition(": ")
        if sep and head == tag:
            rows.append({key: int(value) for key, _, value in (f.partition("=") for f in rest.split())})
    if not rows:
        raise VerificationError(f"{tag}: no report line in the DPU log {log!r}")
    return rows


def check_tasklets(nr_tasklets: int) -> int:
    """Refuse tasklet counts a DPU cannot run (1..24)."""
    if not 1 <= nr_tasklets <= MAX_TASKLETS:
        raise KernelError(f"NR_TASKLETS={nr_tasklets} is out of range; a DPU runs 1..{MAX_TASKLETS} tasklets")
    return nr_tasklets
