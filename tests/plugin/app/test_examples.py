"""examples/: three UPMEM applications (C host on dpu.h, DPU C, PrIM's Makefile layout) built by their
own Makefiles and verified by their own host code on the simulator, through `cnmtune app`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cnmtune.plugin.app import AppProject
from cnmtune.plugin.cli import app as cli
from cnmtune.runtime import Kernel
from cnmtune.runtime.target import SimTarget
from cnmtune.runtime.toolchain import Variant

# (example, host arguments): sizes that do not divide over 4 DPUs, so the last DPU gets fewer elements
RUNS = [("va", ["-i", "4099"]), ("red", ["-i", "65541"]), ("gemv", ["-m", "101", "-n", "301"])]


@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("name, args", RUNS, ids=[name for name, _ in RUNS])
def test_example_builds_and_verifies(example, name, args, dpus):
    project = AppProject(example(name))
    project.build({"NR_DPUS": str(dpus), "NR_TASKLETS": "16"})
    run = project.run(args)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[OK] results match" in run.stdout
    (times,) = run.sets
    assert (times.nr_dpus, times.launches) == (dpus, 1)
    kernel_line = next(line for line in run.stdout.splitlines() if line.startswith("DPU Kernel Time (ms):"))
    printed_ms = float(kernel_line.split(":")[1])
    # the host's own timer reads simulated time inside dpu_launch (plus its real work around the call)
    assert times.kernel_s * 1e3 <= printed_ms + 0.0005 < times.kernel_s * 1e3 + 5.0


@pytest.mark.parametrize("dpus", [1, 4])
def test_the_report_kernel_time_is_cnmtune_runs_for_the_twin(example, dpus):
    """va's workload.py twin: same DPU binary, DPUs, tasklets and inputs give the same kernel time."""
    root = example("va")
    project = AppProject(root)
    project.build({"NR_DPUS": str(dpus), "NR_TASKLETS": "16", "BL": "10"})
    run = project.run(["-i", "4099"])
    assert run.returncode == 0, run.stderr
    result = SimTarget().run(Variant.of(Kernel.load(root), "O2", 16, {"BL": 10}), dpus, 4099)
    assert result.verified
    assert run.sets[0].kernel_per_launch_s == (result.kernel_s,)
    assert run.sets[0].host_to_dpu_s == pytest.approx(result.host_to_dpu_s, rel=1e-12)
    assert run.sets[0].dpu_to_host_s == pytest.approx(result.dpu_to_host_s, rel=1e-12)


def test_app_run_cli_prints_the_program_and_the_times(example):
    root = example("va")
    runner = CliRunner()
    done = runner.invoke(cli, ["app", "run", str(root), "--dpus", "2", "--json", "--", "-i", "512"],
                         env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert record["returncode"] == 0 and "[OK] results match" in record["stdout"]
    assert record["sets"][0]["nr_dpus"] == 2 and record["kernel_s"] > 0
    table = runner.invoke(cli, ["app", "run", str(root), "--dpus", "2", "--no-build", "--", "-i", "512"],
                          env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "DPU kernel (ms)" in table.stdout and "[OK] results match" in table.stdout


def test_a_directory_without_a_makefile_is_one_clear_error(tmp_path):
    done = CliRunner().invoke(cli, ["app", "build", str(tmp_path)])
    assert done.exit_code != 0
    assert "has no Makefile" in str(done.exception)
