"""`cnmtune new`: the generated kernel compiles, runs on the embedded simulator and verifies as
generated, by name and by path; bad names and existing targets are refused in one line; and
`cnmtune offload` decides for it although it has no `large` preset (issue 16)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cnmtune.errors import OffloadError
from cnmtune.plugin.cli.new import create_kernel
from cnmtune.plugin.offload.decide import OffloadSpec, decide


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
    assert record["params"] == {"alpha": 3}  # the workload's default, as run
    assert record["variant"].startswith("mykernel[O2, 16 tasklets, BL=10")


def test_the_new_kernel_runs_by_path_with_its_define_and_parameter(workdir):
    # an odd size over 3 DPUs pads the last chunk; BL=3 moves 8-byte blocks; a negative alpha
    result = cnmtune("run", "./mykernel", "--size", "1001", "--dpus", "3", "-D", "BL=3", "--param", "alpha=-7",
                     "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["verified"] and record["size"] == 1001 and "BL=3" in record["variant"]
    assert record["params"] == {"alpha": -7} and record["seed"] == 0  # the record says how it was run


@pytest.mark.parametrize("name, cause", [("mykernel", "mykernel already exists; choose another name or --dir"),
                                         ("my-kernel", "invalid kernel name 'my-kernel': use letters, digits "
                                                       "and '_', not starting with a digit")])
def test_an_existing_target_or_an_invalid_name_is_refused(workdir, name, cause):
    before = sorted(p.relative_to(workdir) for p in workdir.rglob("*"))
    assert one_line_error(cnmtune("new", name, cwd=workdir)) == cause
    assert sorted(p.relative_to(workdir) for p in workdir.rglob("*")) == before  # nothing written


def test_offload_sweeps_the_presets_a_kernel_has(workdir):
    result = cnmtune("offload", "./mykernel", "--dpus", "4,64", "--tasklets", "16", "--repeats", "1", "--bisect", "0",
                     "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["kernels"][0]
    # small (4096) to default (65536), the largest preset it has, in x4 steps
    assert report["size"] == 65536 and [p["size"] for p in report["decisions"]] == [4096, 16384, 65536]
    assert report["cpu"]["implementation"] == "numpy" and report["best"]["dpus"] in (4, 64)


def test_offload_without_presets_asks_for_the_sizes(tmp_path):
    kernel = create_kernel("nopresets", tmp_path)
    workload = kernel / "workload.py"
    workload.write_text(workload.read_text().replace('sizes = {"small": 4096, "default": 65536}', "sizes = {}"))
    with pytest.raises(OffloadError, match=r"^nopresets has no size presets: give the sizes to sweep"):
        decide(OffloadSpec(str(kernel), size=4096, dpus=(4,), tasklets=(16,)))
