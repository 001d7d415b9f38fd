"""`cnmtune new`: the generated kernel compiles, runs on the embedded simulator and verifies as
generated, by name and by path; bad names and existing targets are refused in one line (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def cnmtune(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`cnmtune ARGS...` run from `cwd` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "cnmtune", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, check=False)


def one_line_error(result: subprocess.CompletedProcess) -> str:
    """The error line of a refused command, after checking it is all it printed on stderr."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0].removeprefix("error: ")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A directory in which `cnmtune new mykernel` has run."""
    cwd = tmp_path_factory.mktemp("new")
    result = cnmtune("new", "mykernel", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("created mykernel")
    return cwd


def test_the_new_kernel_runs_by_name_and_verifies(workdir):
    kernel = workdir / "mykernel"
    assert {p.relative_to(kernel).as_posix() for p in kernel.rglob("*") if p.is_file()} == \
           {"workload.py", "dpu/task.c", "support/common.h"}
    assert 'name = "mykernel"' in (kernel / "workload.py").read_text()
    assert "{{name}}" not in "".join(p.read_text() for p in kernel.rglob("*") if p.is_file())
    result = cnmtune("run", "mykernel", "--size", "small", "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["verified"] and record["size"] == 4096 and record["cycles"] > 0
    assert record["variant"].startswith("mykernel[O2, 16 tasklets, BL=10")


def test_the_new_kernel_runs_by_path_with_its_define_and_parameter(workdir):
    # an odd size over 3 DPUs pads the last chunk; BL=3 moves 8-byte blocks; a negative alpha
    result = cnmtune("run", "./mykernel", "--size", "1001", "--dpus", "3", "-D", "BL=3", "--param", "alpha=-7",
                     "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["verified"] and record["size"] == 1001 and "BL=3" in record["variant"]


@pytest.mark.parametrize("name, cause", [("mykernel", "mykernel already exists; choose another name or --dir"),
                                         ("my-kernel", "invalid kernel name 'my-kernel': use letters, digits "
                                                       "and '_', not starting with a digit")])
def test_an_existing_target_or_an_invalid_name_is_refused(workdir, name, cause):
    before = sorted(p.relative_to(workdir) for p in workdir.rglob("*"))
    assert one_line_error(cnmtune("new", name, cwd=workdir)) == cause
    assert sorted(p.relative_to(workdir) for p in workdir.rglob("*")) == before  # nothing written
