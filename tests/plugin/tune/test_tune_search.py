"""The tuner's search beyond pipelines: the workload's speed-only defines measured choice by choice,
the DPU count a user has (the kernel objective) or several under the end-to-end objective, the run
limit. Real compiles and simulations at small sizes, with the shipped model."""

from __future__ import annotations

import pytest

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune import TuneSpec, explore, tune
from cnmtune.plugin.tune.space import RANK_DPUS, search_space
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import Variant

VA = {"size": "small", "pipelines": 2, "tasklets": (4, 16), "top_k": 2, "knobs": False}


@pytest.fixture(scope="module")
def searched():
    return tune(TuneSpec("va", dpus=(4,), **VA), InlineExecutor())


def test_every_choice_of_a_tuned_define_is_run_and_times_are_those_of_its_build(searched, toolchain):
    report = searched
    stages = [s["stage"] for s in report.stages]
    assert stages[:2] == ["pipelines", "define BL"]
    define_stage = report.stages[1]
    # every BL from 3 to 11 ran with the first stage's best pipeline (the base, BL=10, ran there)
    first = report.stages[0]["runs"]
    defined = report.runs[first:first + define_stage["runs"]]
    assert all(c.defines for c in defined) and define_stage["verified"] > 0
    # va does not refuse what WRAM cannot hold (mem_alloc faults, as on a DPU): 16 tasklets x two
    # 2 KiB blocks; the search records the fault and goes on
    failed = [c for c in defined if c.status != "verified"]
    assert len(failed) == define_stage["runs"] - define_stage["verified"]
    assert all((dict(c.defines)["BL"], c.tasklets) == (11, 16) and "HEAP_EXHAUSTED" in c.status for c in failed)
    assert {dict(c.defines)["BL"] for c in defined} == set(range(3, 12)) - {10}
    assert len({c.pipeline for c in defined}) == 1 and report.runs[0] is report.default
    runs = report.runs
    va = find_kernel("va")
    bl = dict(report.chosen.defines).get("BL", 10)
    binary = toolchain.compile(Variant.of(va, report.chosen.pipeline, report.chosen.tasklets, {"BL": bl}))
    assert binary.elf_hash == report.chosen.elf_hash
    assert run_binary(binary, 4, report.size).kernel_s == pytest.approx(report.chosen.measured_s, rel=1e-12)
    assert all(c.dpus == 4 for c in runs)


def test_the_choice_is_never_slower_than_the_default_and_says_where_its_gain_comes_from(searched):
    report = searched
    default, chosen = report.default, report.chosen
    assert default.defines == () and "O2" in default.pipelines and default.tasklets == 16
    assert chosen.measured_s <= default.measured_s and report.speedup_vs_default >= 1
    wins = report.wins
    assert bool(wins) == (chosen is not default)
    for name, value in chosen.defines:
        assert f"{name}={value}" in wins
    assert (f"{chosen.tasklets} tasklets" in wins) == (chosen.tasklets != default.tasklets)
    # the best after each stage never gets slower
    bests = [s["best"]["measured_s"] for s in report.stages]
    assert bests == sorted(bests, reverse=True) and bests[-1] == chosen.measured_s


def test_the_kernel_objective_takes_one_dpu_count_and_defaults_to_a_rank():
    va = find_kernel("va")
    with pytest.raises(CnmtuneError, match="one DPU count .*--objective end-to-end"):
        search_space(va, 4096, 2, 0, 10, (1, 4), (16,))
    space = search_space(va, va.workload.size_of("default"), 2, 0, 10, None, (16,))
    assert space.dpu_counts == (RANK_DPUS,) and space.dpus(16) == (RANK_DPUS,)
    assert dict(space.tuned) == {"BL": va.workload.define_choices["BL"]}
    assert search_space(va, 4096, 2, 0, 10, (4,), (16,), defines=(("BL", 8),)).tuned == ()  # -D fixes it


def test_the_end_to_end_objective_adds_the_transfers_and_compares_dpu_counts():
    report = tune(TuneSpec("va", dpus=(1, 4), objective="end-to-end", tune_defines=False, **VA), InlineExecutor())
    assert report.objective == "end-to-end"
    measured = [c for c in [report.default, *report.top] if c.measured_s is not None]
    assert {c.dpus for c in measured} <= {1, 4} and measured
    for c in measured:  # the estimate is the host program's transfers priced as a run prices them
        assert c.transfer_s > 0 and c.predicted_transfer_s == pytest.approx(c.transfer_s, rel=1e-9)
    chosen = report.chosen
    assert chosen.objective_s("end-to-end") == min(c.measured_s + c.transfer_s for c in measured)
    assert report.speedup_vs_default == pytest.approx(
        report.default.objective_s("end-to-end") / chosen.objective_s("end-to-end"))


def test_the_run_limit_stops_the_search():
    report = tune(TuneSpec("va", dpus=(4,), max_runs=3, **VA), InlineExecutor())
    assert report.executed == len(report.runs) == 3 and report.chosen is not None
    assert report.runs[0] is report.default and report.default.status == "verified"  # first, whatever the limit
    assert sum(s["runs"] for s in report.stages) == 3


def test_explore_runs_a_uniform_sample_of_the_whole_space():
    spec = TuneSpec("va", dpus=(4,), **VA)
    sample = explore(spec, InlineExecutor(), 12, seed=1)
    # 2 pipelines + O2 (the default, always in the set), 9 block sizes, 2 tasklet counts
    assert (sample.points, sample.space_points) == (12, 3 * 9 * 2)
    assert 0 < len(sample.runs) <= 12 and all(c.dpus == 4 and c.status != "not run" for c in sample.runs)
    assert sample.best.measured_s == min(c.measured_s for c in sample.runs if c.measured_s is not None)
    again = explore(spec, InlineExecutor(), 12, seed=1)
    assert [(c.elf_hash, c.measured_s) for c in again.runs] == [(c.elf_hash, c.measured_s) for c in sample.runs]
