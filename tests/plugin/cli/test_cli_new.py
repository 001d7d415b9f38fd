"""`cnmtune new`: the generated kernel compiles, runs on the embedded simulator and verifies as
generated, by name and by path, and declares BL tuned, as docs/own_kernel.md shows it; bad names,
names of registered kernels and existing targets are refused in one line; and `cnmtune offload`
decides for it although it has no `large` preset (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cnmtune.errors import OffloadError
from cnmtune.plugin.cli.new import create_kernel
from cnmtune.plugin.offload.decide import OffloadSpec, decide
from cnmtune.runtime.kernel import Kernel
from tests.conftest import one_line_error, run_cnmtune as cnmtune

DOC = Path(__file__).resolve().parents[3] / "docs" / "own_kernel.md"


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


VA = Path(__file__).resolve().parents[3] / "benchmarks" / "prim" / "va"


@pytest.mark.parametrize("name, exit_code, cause", [
    ("mykernel", 1, "mykernel already exists; choose another name or --dir"),
    ("my-kernel", 2, "invalid kernel name 'my-kernel': use letters, digits and '_', not starting with a digit"),
    # a path wins over a name: the new kernel would shadow the built-in one in this directory only
    ("VA", 2, f"'VA' is the name of the kernel in {VA}; `cnmtune run VA` would run one or the other depending "
              "on the directory: choose another name"),
])
def test_an_existing_target_an_invalid_or_a_registered_name_is_refused(workdir, name, exit_code, cause):
    before = sorted(p.relative_to(workdir) for p in workdir.rglob("*"))
    assert one_line_error(cnmtune("new", name, cwd=workdir), exit_code) == cause
    assert sorted(p.relative_to(workdir) for p in workdir.rglob("*")) == before  # nothing written


def test_the_new_kernel_declares_its_block_size_tuned_as_the_guide_shows(workdir):
    workload = Kernel.load(workdir / "mykernel").workload
    assert workload.tuned_defines == ("BL",) and set(workload.define_choices) == {"BL"}
    # the guide's copy of the class attributes is the template's, tuned_defines included
    doc = DOC.read_text()
    shown = doc[doc.index("class ScaledAdd(Workload):"):].split("```")[0].splitlines()[1:]
    generated = {line.split("#")[0].strip() for line in (workdir / "mykernel" / "workload.py").read_text().splitlines()}
    assert 'tuned_defines = ("BL",)' in {line.strip() for line in shown} and len(shown) >= 7
    assert {line.strip() for line in shown if line.strip()} <= generated
    assert "| `tuned_defines` |" in doc


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
