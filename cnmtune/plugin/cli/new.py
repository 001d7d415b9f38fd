"""`cnmtune new NAME`: a new kernel directory from cnmtune's template, ready to run, verify and tune.

The template (cnmtune/templates/kernel: workload.py, dpu/task.c, support/common.h) is a scaled
vector add that verifies as generated; every `{{name}}` in it becomes NAME.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import typer

from cnmtune.errors import KernelError, UsageError
from cnmtune.plugin.cli.output import console, note
from cnmtune.runtime.registry import kernel_dirs, list_kernels

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "kernel"
PLACEHOLDER = "{{name}}"
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _registered(name: str) -> Path | None:
    """The directory of the kernel that `name` already names (a suite's or one on CNMTUNE_KERNEL_PATH),
    matched as the registry matches names: by directory, then workload name, case-insensitively."""
    wanted = name.lower()
    for directory in kernel_dirs():
        if directory.name.lower() == wanted:
            return directory
    return next((k.root for k in list_kernels() if k.name.lower() == wanted), None)


def create_kernel(name: str, parent: Path) -> Path:
    """Write the template as kernel directory `parent/name`; refuse an invalid name, the name of a
    registered kernel or an existing path."""
    if not _VALID_NAME.fullmatch(name):
        raise UsageError(f"invalid kernel name {name!r}: use letters, digits and '_', not starting with a digit")
    taken = _registered(name)
    if taken is not None:  # a path wins over a name: `cnmtune run NAME` would run either, by directory
        raise UsageError(f"{name!r} is the name of the kernel in {taken}; `cnmtune run {name}` would run one or "
                         "the other depending on the directory: choose another name")
    target = parent / name
    try:
        target.mkdir(parents=True)
    except FileExistsError:
        raise KernelError(f"{target} already exists; choose another name or --dir") from None
    except OSError as exc:
        raise KernelError(f"cannot create {target}: {exc.strerror}") from None
    try:
        for source in sorted(TEMPLATE.rglob("*")):
            if source.is_file() and "__pycache__" not in source.parts:
                written = target / source.relative_to(TEMPLATE)
                written.parent.mkdir(parents=True, exist_ok=True)
                written.write_text(source.read_text().replace(PLACEHOLDER, name))
    except BaseException:  # nothing half-written is kept
        shutil.rmtree(target, ignore_errors=True)
        raise
    return target


def new_command(
    name: str = typer.Argument(..., help="kernel name: letters, digits and '_', not starting with a digit"),
    parent: Path = typer.Option(Path("."), "--dir", help="directory to create the kernel directory in"),
) -> None:
    """Create kernel directory NAME from a template (Y = alpha * X + Y) that compiles, runs and verifies."""
    target = create_kernel(name, parent)
    console.print(f"created {target}/ (workload.py, dpu/task.c, support/common.h)", highlight=False, markup=False,
                  soft_wrap=True)  # a long path stays on one line, copyable
    note(f"next: cnmtune run {target} --size small")
