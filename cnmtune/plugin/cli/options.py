"""Options every command declares and parses the same way: defines, workload parameters, integer
lists, sizes, pipelines, devices.

A value that does not parse, or that the kernel does not accept, is a UsageError (exit code 2):
the command line is wrong, nothing ran.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from cnmtune.errors import CnmtuneError, KernelError, PipelineError, UsageError
from cnmtune.passes import Pipeline
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue, parse_define

DEFINES = typer.Option([], "-D", metavar="NAME[=VALUE]", help="preprocessor define NAME[=VALUE], repeatable")
PARAMS = typer.Option([], "--param", metavar="NAME=VALUE", help="workload parameter NAME=VALUE, repeatable")


@contextlib.contextmanager
def _usage(*causes: type[CnmtuneError]) -> Iterator[None]:
    """Turn the `causes` raised inside into UsageErrors: they refuse a value of the command line."""
    try:
        yield
    except causes as exc:
        raise UsageError(str(exc)) from exc


def parse_defines(items: list[str], kernel: Kernel | None = None) -> dict[str, DefineValue]:
    """Turn ['BL=10', 'INT32'] into {'BL': 10, 'INT32': None}, checked against `kernel`'s
    define_choices and flag groups when given."""
    defines: dict[str, DefineValue] = {}
    for item in items:
        key, value = parse_define(item)
        if not key.isidentifier():
            raise UsageError(f"malformed define {item!r}; use -D NAME or -D NAME=VALUE")
        defines[key] = value
    if kernel is not None:
        with _usage(KernelError):
            kernel.workload.resolve_defines(defines)
    return defines


def parse_params(kernel: Kernel, items: list[str]) -> dict[str, object]:
    """Turn ['n_cols=128'] into {'n_cols': 128}, typed as the parameter's default in `kernel`'s workload."""
    with _usage(KernelError):
        return dict(kernel.workload.parse_param(item) for item in items)


def parse_pipeline(text: str) -> Pipeline:
    """A --pipeline value as a Pipeline."""
    with _usage(PipelineError):
        return Pipeline.parse(text)


def check_device(name: str) -> str:
    """A --device value; an unknown one is a usage error here (make_target refuses it too, but deep in
    a run, where it is a failure)."""
    from cnmtune.runtime.target import TARGETS

    if name not in TARGETS:
        raise UsageError(f"unknown device {name!r}; choose {', '.join(TARGETS[:-1])} or {TARGETS[-1]}")
    return name


def int_list(text: str, option: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); anything else is one error naming `--option`."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--{option}: {text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise UsageError(f"--{option}: give positive integers")
    return values


def size_value(text: str) -> int | str:
    """A problem size as given: a number, or a preset name (small, default, large) kept as a name."""
    text = text.strip()
    return int(text) if text.isdigit() else text


def kernel_size(kernel: Kernel, text: str) -> int:
    """A --size of `kernel`: a positive integer, or one of its presets resolved."""
    with _usage(KernelError):
        return kernel.workload.size_of(size_value(text), what="--size")
