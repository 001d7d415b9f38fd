"""`cnmtune tune --app`: the DPU program of an unmodified application tuned by running the application."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cnmtune.plugin.app import AppProject
from cnmtune.plugin.app.tune import tune_app
from cnmtune.plugin.cli import app as cli
from cnmtune.plugin.tune.cache import TuningCache

PIPELINES = ["O0", "O2", "O3", "O2,unroll-count=4", "O2,unroll-count=8"]


def test_tuning_an_application_measures_records_and_rebuilds_the_winner(example):
    project = AppProject(example("va"))
    variables = {"NR_DPUS": "2", "NR_TASKLETS": "16"}
    plan = project.plan(variables)
    (line,) = plan.dpu_lines
    assert line[0] == "dpu-upmem-dpurte-clang" and "dpu/task.c" in line and "-DNR_TASKLETS=16" in line
    assert (plan.host_binary, plan.dpu_binary) == (project.root / "bin/host_code", project.root / "bin/dpu_code")
    report = tune_app(project, ["-i", "8192"], variables, PIPELINES, top_k=3)
    by_pipeline = {c.pipeline: c for c in report.candidates}
    assert by_pipeline["O3"].same_as == "O2"  # one binary, scored and run once
    # the model is told the size at which it predicts the measured time of the default build (the Makefile's
    # -O2), not the words sent to the DPUs (2 vectors: twice va's elements)
    assert report.model_size_from.startswith("fitted") and report.model_size > 0
    assert by_pipeline["O2"].predicted_s == pytest.approx(report.default_s, rel=0.01)
    measured = [c for c in report.candidates if c.measured_s is not None]
    assert len(measured) == 3 and all(c.predicted_s > 0 for c in measured)
    # the knobs unroll va's loop: a real win over the Makefile's -O2, and the fastest measured one is chosen
    assert report.chosen is not None and report.chosen.pipeline.startswith("O2,unroll-count=")
    assert report.chosen.measured_s == min(c.measured_s for c in measured) < report.default_s
    # recorded for cnmtune-cc: the rebuild through the Makefile's own line picks it from the tuning cache
    assert report.recorded == ["dpu/task.c"]
    assert report.final_s == report.chosen.measured_s
    (entry,) = [e for _, e in TuningCache().entries() if e.tuner.get("app") == str(project.root)]
    assert (entry.pipeline, entry.tasklets, entry.dpus) == (report.chosen.pipeline, 16, 2)


def test_tune_app_cli_reports_json(example):
    root = example("va")
    done = CliRunner().invoke(cli, ["tune", "--app", str(root), "--run", "-i 4096", "--dpus", "1", "--pipelines", "2",
                                    "--no-knobs", "--top-k", "2", "--no-save", "--json"], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    record = json.loads(done.stdout)
    assert record["nr_dpus"] == 1 and record["tasklets"] == 16 and record["launches"] == 1 and record["default_s"] > 0
    assert [c["pipeline"] for c in record["candidates"]] == ["O0", "O1"]
    assert record["recorded"] == [] and record["speedup"] >= 1.0
    assert record["model_size"] > 0 and record["model_size_from"]
