"""The tuner's search beyond pipelines: the workload's speed-only defines measured choice by choice,
the DPU count a user has (the kernel objective) or several under the end-to-end objective, the run
limit. Real compiles and simulations at small sizes, with the shipped model."""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import pytest

from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune import TuneSpec, explore, tune
from cnmtune.plugin.tune.report import Candidate
from cnmtune.plugin.tune.select import batch, ranked_neighbours
from cnmtune.plugin.tune.space import RANK_DPUS, search_space
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import Variant

VA = {"size": "small", "pipelines": 2, "tasklets": (4, 16), "top_k": 4, "knobs": False}


@pytest.fixture(scope="module")
def searched():
    return tune(TuneSpec("va", dpus=(4,), **VA), InlineExecutor())


def test_rounds_run_the_models_picks_and_the_best_runs_neighbours(searched, toolchain):
    report = searched
    assert [s["stage"] for s in report.stages] == [f"round {n}" for n in range(1, len(report.stages) + 1)]
    assert report.runs[0] is report.default and sum(s["runs"] for s in report.stages) == len(report.runs)
    # half of each round's 4 runs comes from the best run's neighbours: in round 1, the default's,
    # among them another block size (the binaries' features hardly see it: it is measured, not predicted)
    assert all(s["explored"] <= 2 for s in report.stages) and report.stages[0]["explored"] == 2
    first = report.runs[1:1 + report.stages[0]["runs"]]
    assert any(c.defines and c.pipeline == "O2" and c.tasklets == 16 for c in first)
    # the shipped network's zero-shot trees score the first round; rounds after the first score with the
    # network fine-tuned on every verified run before them (the fine-tunings after the first go on from the
    # last fine-tuned network)
    assert [s["scored_by"] for s in report.stages] == ["trees"] + ["l2p"] * (len(report.stages) - 1)
    verified = [c for c in report.runs if c.measured_s is not None]
    adapted = [s["adapted_on"] for s in report.stages[1:]]
    assert None not in adapted and adapted == sorted(adapted) and 2 <= adapted[0] and adapted[-1] <= len(verified)
    assert report.finetune["rounds"] == len(adapted) and report.finetune["samples"] == adapted[-1]
    assert report.finetune["shortened"] == len(adapted) - 1
    # va does not refuse what WRAM cannot hold (mem_alloc faults, as on a DPU): 16 tasklets x two
    # 2 KiB blocks; a run that faults is recorded and the search goes on
    for c in report.runs:
        assert c.status == "verified" or ((dict(c.defines)["BL"], c.tasklets) == (11, 16)
                                          and "HEAP_EXHAUSTED" in c.status)
    assert len({(c.elf_hash, c.dpus) for c in report.runs}) == len(report.runs) and all(c.dpus == 4 for c in report.runs)
    va = find_kernel("va")  # the chosen run's time is that of its own build
    bl = dict(report.chosen.defines).get("BL", 10)
    binary = toolchain.compile(Variant.of(va, report.chosen.pipeline, report.chosen.tasklets, {"BL": bl}))
    assert binary.elf_hash == report.chosen.elf_hash
    assert run_binary(binary, 4, report.size).kernel_s == pytest.approx(report.chosen.measured_s, rel=1e-12)


def test_the_same_tune_makes_the_same_choices_however_long_its_steps_take(searched, monkeypatch):
    # the fine-tunings' epochs follow from the runs, never from a clock: on a clock where every step takes
    # ten minutes (runs as long as fine-tunings, where here runs take less), the search does the same
    ticks = itertools.count(step=600.0)
    monkeypatch.setattr(time, "perf_counter", lambda: next(ticks))
    again = tune(TuneSpec("va", dpus=(4,), **VA), InlineExecutor())
    assert [(c.elf_hash, c.defines, c.tasklets) for c in again.runs] == \
           [(c.elf_hash, c.defines, c.tasklets) for c in searched.runs]
    assert again.finetune["epochs"] == searched.finetune["epochs"] and again.chosen.elf_hash == searched.chosen.elf_hash
    assert again.seconds["fine-tuning"] % 600 == 0  # the clock was the fake one


def test_the_choice_is_never_slower_than_the_default_and_says_where_its_gain_comes_from(searched):
    report = searched
    default, chosen = report.default, report.chosen
    assert default.defines == () and "O2" in default.pipelines and default.tasklets == 16
    assert chosen.measured_s <= default.measured_s and report.speedup_vs_default >= 1
    assert chosen.measured_s == min(c.measured_s for c in report.runs if c.measured_s is not None)
    wins = report.wins
    assert bool(wins) == (chosen is not default)
    for name, value in chosen.defines:
        assert f"{name}={value}" in wins
    assert (f"{chosen.tasklets} tasklets" in wins) == (chosen.tasklets != default.tasklets)
    # the best after each round never gets slower
    bests = [s["best"]["measured_s"] for s in report.stages]
    assert bests == sorted(bests, reverse=True) and bests[-1] == chosen.measured_s


def test_until_the_model_is_fine_tuned_the_prior_ranks_a_share_of_a_rounds_runs(searched):
    # model and prior rank ten candidates in opposite orders; 5 runs, 2 of them the best run's neighbours
    pool = [Candidate([f"O{i}"], 16, 4, f"elf{i}", predicted_s=i + 1.0, prior_s=10.0 - i) for i in range(10)]
    pool[7].defines = (("BL", 4),)  # the prior ranks pipelines and tasklets at the best run's defines only
    search = SimpleNamespace(spec=TuneSpec("va", top_k=5, exploration=0.4), pool=pool, run=[], last_adaptation={},
                             prior=object(), best=lambda: None, twin=lambda c: c.elf_hash)
    neighbours = {"tasklets": [pool[9], pool[0]], "pipeline": [pool[8]]}
    explored, exploited = batch(search, neighbours)
    assert explored == [pool[9], pool[8]]
    # one of the three runs left (PRIOR_SHARE 0.2 of them), the second: the prior's best not taken already
    assert exploited == [pool[0], pool[6], pool[1]]
    search.last_adaptation = {"samples": 6}  # fine-tuned on the kernel: the model ranks alone
    assert batch(search, neighbours)[1] == pool[:3]
    search.last_adaptation, search.prior = {}, None  # a baseline (heuristic, random) ranks alone
    assert batch(search, neighbours)[1] == pool[:3]
    # a real tune with the shipped model scores every candidate with the prior as well
    assert all(c.prior_s > 0 for c in searched.runs)


def test_until_the_model_is_fine_tuned_the_prior_orders_each_dimensions_neighbours_first():
    # model and prior rank five neighbours in opposite orders: the prior's best, then the two alternately
    found = [Candidate([f"O{i}"], 16, 4, f"elf{i}", predicted_s=i + 1.0, prior_s=10.0 - i) for i in range(5)]
    search = SimpleNamespace(prior=object(), last_adaptation={})
    assert ranked_neighbours(search, found) == [found[4], found[0], found[3], found[1], found[2]]
    search.last_adaptation = {"samples": 6}  # fine-tuned on the kernel: the model ranks alone
    assert ranked_neighbours(search, found) == found
    search.last_adaptation, search.prior = {}, None  # a baseline ranks alone
    assert ranked_neighbours(search, found[::-1]) == found


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
    # 2 pipelines + O2 (the default, always in the set), 9 block sizes x 2 tasklet counts but BL=11 at
    # 16 tasklets (two 2 KiB blocks and a stack each: more than WRAM)
    assert (sample.points, sample.space_points) == (12, 3 * (9 * 2 - 1))
    assert 0 < len(sample.runs) <= 12 and all(c.dpus == 4 and c.status != "not run" for c in sample.runs)
    assert sample.best.measured_s == min(c.measured_s for c in sample.runs if c.measured_s is not None)
    again = explore(spec, InlineExecutor(), 12, seed=1)
    assert [(c.elf_hash, c.measured_s) for c in again.runs] == [(c.elf_hash, c.measured_s) for c in sample.runs]


def test_on_many_dpus_the_search_screens_on_two_and_confirms_the_best_on_all(toolchain):
    spec = TuneSpec("va", dpus=(16,), rounds=2, **{**VA, "top_k": 3})
    report = tune(spec, InlineExecutor())
    assert [s["stage"] for s in report.stages][-1] == "confirm"
    confirmed = [c for c in report.runs if c.screened_s is not None]
    # the default and the 3 fastest screening runs, run again on all 16 DPUs and verified
    assert report.default in confirmed and len(confirmed) == 4 and report.stages[-1]["runs"] == 4
    assert all(c.status == "verified" for c in confirmed)
    others = [c for c in report.runs if all(c is not d for d in confirmed)]
    assert all(c.status == "screened" or "HEAP_EXHAUSTED" in c.status for c in others)  # BL=11 x 16 faults
    assert report.executed == len(report.runs) + len(confirmed)
    # va's blocks are equal on every DPU: the first and the last DPU time the whole run
    for c in confirmed:
        assert c.screened_s == pytest.approx(c.measured_s, rel=1e-9)
    # the choice is the fastest confirmed run, timed by a full verified run of its build
    assert report.chosen in confirmed and report.chosen.measured_s == min(c.measured_s for c in confirmed)
    bl = dict(report.chosen.defines).get("BL", 10)
    binary = toolchain.compile(Variant.of(find_kernel("va"), report.chosen.pipeline, report.chosen.tasklets,
                                          {"BL": bl}))
    assert run_binary(binary, 16, report.size).kernel_s == pytest.approx(report.chosen.measured_s, rel=1e-12)
    plain = tune(TuneSpec(**{**spec.__dict__, "screen": False}), InlineExecutor())
    assert all(c.screened_s is None and (c.status == "verified" or "HEAP_EXHAUSTED" in c.status) for c in plain.runs)
    assert plain.stages[-1]["stage"] != "confirm"
