"""Options every command declares and parses the same way: defines, workload parameters, integer
lists, sizes."""

from __future__ import annotations

import typer

from cnmtune.errors import CnmtuneError
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.workload import DefineValue, parse_define

DEFINES = typer.Option([], "-D", help="preprocessor define NAME[=VALUE], repeatable")
PARAMS = typer.Option([], "--param", help="workload parameter NAME=VALUE, repeatable")


def parse_defines(items: list[str]) -> dict[str, DefineValue]:
    """Turn ['BL=10', 'INT32'] into {'BL': 10, 'INT32': None}."""
    defines: dict[str, DefineValue] = {}
    for item in items:
        key, value = parse_define(item)
        if not key.isidentifier():
            raise CnmtuneError(f"malformed define {item!r}; use -D NAME or -D NAME=VALUE")
        defines[key] = value
    return defines


def parse_params(kernel: Kernel, items: list[str]) -> dict[str, object]:
    """Turn ['n_cols=128'] into {'n_cols': 128}, typed as the parameter's default in `kernel`'s workload."""
    return dict(kernel.workload.parse_param(item) for item in items)


def int_list(text: str, option: str, error: type[CnmtuneError] = CnmtuneError) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4); anything else is one `error` naming `--option`."""
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise error(f"--{option}: {text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise error(f"--{option}: give positive integers")
    return values


def size_value(text: str) -> int | str:
    """A problem size as given: a number, or a preset name (small, default, large) kept as a name."""
    text = text.strip()
    return int(text) if text.isdigit() else text


def kernel_size(kernel: Kernel, text: str) -> int:
    """A --size of `kernel`: a positive integer, or one of its presets resolved."""
    return kernel.workload.size_of(size_value(text), what="--size")
