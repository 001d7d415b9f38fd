"""`cnmtune tune -D NAME[=VALUE] --param NAME=VALUE`: the user's defines reach every compile, the grid
checks, the default build, the store and the tuning-cache key; the parameters reach the grid
checks and every run. Real compiles and simulations at tiny sizes, with the shipped model."""

from __future__ import annotations

import json

import pytest

from cnmtune.errors import CnmtuneError
from cnmtune.passes import knob_pipelines
from cnmtune.plugin.tune import Candidate, TuneReport, TuneSpec, tune
from cnmtune.plugin.tune.cache import TuningCache, key_for, record_tune
from cnmtune.plugin.tune.space import search_space
from cnmtune.runtime.executor import InlineExecutor
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.toolchain import Variant
from cnmtune.store import Store
from tests.conftest import run_cnmtune as cnmtune


def test_a_define_reaches_every_compile_the_default_build_and_the_store(toolchain, tmp_path):
    db = tmp_path / "tune.sqlite"
    result = cnmtune("tune", "gemv", "--size", "small", "-D", "BL=8", "--pipelines", "4", "--dpus", "1",
                     "--tasklets", "4,8", "--top-k", "2", "--rounds", "1", "--json", "--no-save", "-j", "1",
                     "--db", str(db))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["defines"] == {"BL": 8} and report["params"] == {}
    chosen = report["chosen"]
    assert chosen["status"] == "verified" and chosen["measured_s"] > 0
    # the chosen binary is the BL=8 build of its pipeline, not gemv's own BL=10 build
    gemv = find_kernel("gemv")
    built = toolchain.compile(Variant.of(gemv, chosen["pipeline"], chosen["tasklets"], {"BL": 8}))
    assert built.variant.label == f"gemv[{chosen['pipeline']}, {chosen['tasklets']} tasklets, BL=8]"
    assert chosen["elf_hash"] == built.elf_hash
    assert built.elf_hash != toolchain.compile(Variant.of(gemv, chosen["pipeline"], chosen["tasklets"])).elf_hash
    # the default build is O2 with BL=8 at the grid's tasklet count nearest below gemv's 16
    default = report["default"]
    o2 = toolchain.compile(Variant.of(gemv, "O2", 8, {"BL": 8}))
    assert (default["pipeline"], default["tasklets"], default["elf_hash"]) == ("O2", 8, o2.elf_hash)
    with Store(db) as store:
        compiles, runs = store.compiles(), store.runs()
    # every pipeline (4 and the knob pipelines) at the default build's 8 tasklets, and every compile BL=8:
    # a define given with -D is not tuned
    assert len({c.pipeline for c in compiles if c.tasklets == 8}) == 4 + len(knob_pipelines())
    assert {c.defines for c in compiles} == {"BL=8"}
    assert {r.elf_hash for r in runs} <= {c.elf_hash for c in compiles} and runs


def test_a_param_reaches_the_grid_checks_and_every_run(tmp_path):
    # one round without the knob pipelines: what is tested is where the parameter goes, not the search
    spec = TuneSpec("gemv", size="small", pipelines=1, dpus=(1,), tasklets=(8,), top_k=1, knobs=False, rounds=1)
    with Store(tmp_path / "tune.sqlite") as store:
        narrow = tune(spec, InlineExecutor(), store)
        wide = tune(TuneSpec(**{**spec.__dict__, "params": (("n_cols", 256),)}), InlineExecutor(), store)
        recorded = store.runs()
    assert wide.params == {"n_cols": 256} and wide.chosen.status == "verified"
    # the same binaries (parameters are not defines), 4x the columns to multiply: a longer kernel
    assert wide.default.elf_hash == narrow.default.elf_hash
    assert wide.default.measured_s > 2 * narrow.default.measured_s
    # the store keys runs by their parameters: the narrow runs are not re-used for the wide ones, and
    # both are recorded, each under its parameters; a second wide tune re-uses the wide runs
    assert wide.reused == 0 and wide.executed >= 1 and len(recorded) == narrow.executed + wide.executed
    assert {r.params for r in recorded} == {"", "n_cols=256"}
    with Store(tmp_path / "tune.sqlite") as store:
        again = tune(TuneSpec(**{**spec.__dict__, "params": (("n_cols", 256),)}), InlineExecutor(), store)
    assert again.executed == 0 and again.reused == wide.executed
    assert again.default.measured_s == wide.default.measured_s
    with pytest.raises(CnmtuneError, match="no valid .* at size 256: gemv: n_cols must be positive, got 0"):
        search_space(find_kernel("gemv"), 256, 1, 0, 10, (1,), (8,), params=(("n_cols", 0),))


def test_the_grid_is_checked_with_the_defines():
    sel = find_kernel("sel")  # 2 blocks of 2^BL bytes per tasklet: BL=11 leaves WRAM for 12 tasklets
    own = search_space(sel, 4096, 1, 0, 10, (1,), (12, 16))
    big = search_space(sel, 4096, 1, 0, 10, (1,), (12, 16), defines=(("BL", 11),))
    assert (own.tasklets, own.default_tasklets) == ((12, 16), 16)
    assert (big.tasklets, big.default_tasklets, big.defines) == ((12,), 12, (("BL", 11),))


@pytest.mark.parametrize("option, value, error", [
    ("-D", "BL=99", "gemv: BL=99 is not valid; choose one of 3, 4, 5, 6, 7, 8, 9, 10, 11"),
    ("-D", "NR_TASKLETS=4", "set NR_TASKLETS with --tasklets, not as a define"),
    ("--param", "rows=3", "gemv: bad parameter 'rows=3'; use NAME=VALUE with NAME one of: n_cols"),
])
def test_a_bad_define_or_param_is_one_line(option, value, error):
    result = cnmtune("tune", "gemv", "--size", "small", "--pipelines", "1", "--dpus", "1", "--tasklets", "4",
                     option, value, "--no-save")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0] == f"error: {error}", result.stderr


def test_the_tuning_cache_key_follows_the_defines(tmp_path):
    gemv, cache = find_kernel("gemv"), TuningCache(tmp_path / "tuning.sqlite")
    for defines, pipeline in (((("BL", 8),), "O1"), ((), "O3")):
        chosen = Candidate([pipeline], 8, 1, "elf", measured_s=1e-3, status="verified")
        report = TuneReport("gemv", 256, 1, 1, [chosen], chosen, None, defines=dict(defines))
        record_tune(cache, gemv, TuneSpec("gemv", defines=defines), report)
    [source] = gemv.sources

    def tuned(defines: dict) -> str:
        return cache.lookup(key_for(source, {**defines, "NR_TASKLETS": 8}, "proxy", gemv.include_dirs)).pipeline

    # BL=8's result is not returned for BL=10 (gemv's own, with or without -D BL=10), nor the other way
    assert (tuned({"BL": 8}), tuned({}), tuned({"BL": 10})) == ("O1", "O3", "O3")
    assert len(cache.entries()) == 2
