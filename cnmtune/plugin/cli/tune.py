"""`cnmtune tune KERNEL`: the autotuner on the command line (see cnmtune.plugin.tune.tuner)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Optional

import typer

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError, UsageError
from cnmtune.plugin.cli.options import (DEFINES, PARAMS, check_device, int_list, kernel_size, parse_defines,
                                       parse_params)
from cnmtune.plugin.cli.output import (console, emit_json, milliseconds, note, phase_bars, print_pipeline_legend,
                                      warn)
from cnmtune.plugin.tune import TUNE_TASKLETS, TuneReport, TuneSpec, tune
from cnmtune.plugin.tune.report import Candidate
from cnmtune.runtime.executor import make_executor
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.workload import define_text
from cnmtune.store import Store
from cnmtune.wording import counted


#: Options of a kernel's tune that a tune of an application (--app) has no use for, and the reverse.
KERNEL_ONLY = frozenset({"size", "objective", "tasklets", "define", "param", "rounds", "exploration", "screen",
                         "adapt", "budget_s", "max_runs", "tune_defines", "device", "sdk_dir", "exhaustive",
                         "build_all", "db", "workers", "scheduler"})
APP_ONLY = frozenset({"run", "var"})


def _check_mode(ctx: typer.Context, app: Optional[Path]) -> None:
    """Refuse options the chosen mode would ignore: a kernel's with --app, --run and --var without it."""
    # typer carries its own click, whose ParameterSource is not importable by a public name
    given = {name for name in ctx.params
             if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"}
    ignored = given & (KERNEL_ONLY if app is not None else APP_ONLY)
    if ignored:
        flags = ", ".join(sorted(next(o for o in ctx.command.params if o.name == n).opts[0] for n in ignored))
        raise UsageError(f"{flags}: not used when tuning {'an application (--app)' if app else 'a kernel'}")


def tune_command(
    ctx: typer.Context,
    kernel: Optional[str] = typer.Argument(None, help="kernel name (see `cnmtune kernels`) or directory"),
    size: str = typer.Option("default", "--size", "-s", help="problem size, or a preset: small, default, large"),
    pipelines: int = typer.Option(200, "--pipelines", help="pipelines: O0..O3 + seeded random sequences"),
    knobs: bool = typer.Option(True, "--knobs/--no-knobs", help="also O2 and O3 with LLVM's unroll knobs (counts 1..16, runtime unrolling)"),
    seed: int = typer.Option(0, "--seed", help="seed of the random pass sequences"),
    dpus: Optional[str] = typer.Option(None, "--dpus",
                                       help="the DPU count to tune on (default: one rank, 64, or the most the "
                                            "size allows); several with --objective end-to-end"),
    objective: str = typer.Option("kernel", "--objective",
                                  help="kernel: DPU kernel time; end-to-end: kernel + host transfers"),
    tasklets: str = typer.Option(",".join(map(str, TUNE_TASKLETS)), "--tasklets",
                                 help="tasklet counts to consider (a DPU runs up to 24)"),
    define: list[str] = DEFINES,
    param: list[str] = PARAMS,
    top_k: int = typer.Option(10, "--top-k", "-k", help="candidates to execute per round of the search"),
    rounds: int = typer.Option(5, "--rounds", help="rounds of the search at most (it also stops after three "
                                                   "rounds without a better run)"),
    exploration: float = typer.Option(0.5, "--exploration",
                                      help="share of a round's runs taken from the best run's neighbours "
                                           "(other define values, tasklets, unroll knobs) instead of the "
                                           "model's picks"),
    screen: bool = typer.Option(True, "--screen/--no-screen",
                                help="from 16 DPUs, run the search on 2 simulated DPUs (first and last) and "
                                     "confirm the default and the 3 best on every DPU, verified"),
    adapt: bool = typer.Option(True, "--adapt/--no-adapt",
                               help="fine-tune the model on the tune's runs after each round (needs the "
                                    "model's .pt checkpoint beside it; without it the model is used as is)"),
    budget_s: Optional[float] = typer.Option(None, "--budget-s", help="stop executing candidates after this long"),
    max_runs: Optional[int] = typer.Option(None, "--max-runs", help="stop executing candidates after this many runs"),
    tune_defines: bool = typer.Option(True, "--tune-defines/--no-tune-defines",
                                      help="search the kernel's speed-only defines (`cnmtune kernels` marks "
                                           "them *), those -D does not fix"),
    device: str = typer.Option("sim", "--device", help="where to execute: sim, upmem-sim or upmem-hw"),
    sdk_dir: Optional[Path] = typer.Option(None, "--sdk-dir", help="UPMEM SDK directory (upmem-* devices)"),
    model: Optional[Path] = typer.Option(None, "--model", help="cost model .onnx, 'shipped' (the default), or a "
                                                              "baseline: analytical, random[:SEED]"),
    exhaustive: bool = typer.Option(False, "--exhaustive", help="also run every candidate; report the regret"),
    build_all: bool = typer.Option(False, "--build-all",
                                   help="build every pipeline at every tasklet count first (default: every "
                                        "pipeline at the default build's, the model's best 2 x top-k at all)"),
    db: Optional[Path] = typer.Option(None, "--db", help="record everything here; reuse recorded runs"),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", help="local worker processes (default: all cores)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="Dask scheduler, e.g. tcp://HOST:8786"),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    save: bool = typer.Option(True, "--save/--no-save",
                              help="record the choice in the tuning cache, for cnmtune-cc"),
    app: Optional[Path] = typer.Option(None, "--app", help="tune the DPU program of this UPMEM application "
                                                           "(PrIM layout, see `cnmtune app`) instead of a kernel"),
    run: str = typer.Option("", "--run", help="with --app: the host program's arguments for every measurement"),
    var: list[str] = typer.Option([], "--var", "-V", metavar="NAME=VALUE", help="with --app: a make variable NAME=VALUE, repeatable"),
) -> None:
    """Tune a kernel: compile pipelines x configs, score all with the cost model, then rounds of an
    evolutionary search that run the model's picks and the best run's neighbours and fine-tune the
    model on what ran; pick the fastest (never slower than the default build). Exits non-zero when
    no candidate verified."""
    for option, value, least in (("--pipelines", pipelines, 1), ("--top-k", top_k, 1), ("--workers", workers, 1),
                                 ("--rounds", rounds, 1), ("--max-runs", max_runs, 1)):
        if value is not None and value < least:
            raise UsageError(f"{option} must be >= {least}, got {value}")
    if not 0 <= exploration <= 1:
        raise UsageError(f"--exploration must be between 0 and 1, got {exploration}")
    _check_mode(ctx, app)
    if app is not None:
        from cnmtune.plugin.cli.application import tune_app_command

        if kernel is not None:  # the application's DPU program is what is tuned: a kernel too is ambiguous
            raise UsageError(f"give a kernel ({kernel}) or --app {app}, not both")
        tune_app_command(app, run, var, dpus, pipelines, seed, knobs, top_k, model, save, as_json)
        return
    if kernel is None:
        raise UsageError("give a kernel to tune (see `cnmtune kernels`), or an application with --app DIR")
    found = find_kernel(kernel)
    spec = TuneSpec(kernel=kernel, size=kernel_size(found, size), pipelines=pipelines, seed=seed,
                    dpus=int_list(dpus, "dpus") if dpus else None, tasklets=int_list(tasklets, "tasklets"),
                    top_k=top_k, objective=objective, max_runs=max_runs, tune_defines=tune_defines, knobs=knobs,
                    model=str(model) if model else None,
                    exhaustive=exhaustive, build_all=build_all, budget_s=budget_s, device=check_device(device),
                    sdk_dir=str(sdk_dir) if sdk_dir else None, rounds=rounds, exploration=exploration, adapt=adapt, screen=screen,
                    defines=tuple(parse_defines(define, found).items()),
                    params=tuple(parse_params(found, param).items()))
    with Store(db) if db is not None else nullcontext() as store, make_executor(workers, scheduler) as executor, \
            phase_bars() as progress:
        report = tune(spec, executor, store, progress)
    if report.finetune and "skipped" in report.finetune:  # asked for (--adapt), and not done: the tune is weaker
        warn(f"warning: model not adapted: {report.finetune['skipped']}")
    recorded = _save(spec, report) if save else None
    failed = report.chosen is None
    if not as_json:
        _print(report, recorded)
    elif not failed:  # a failed tune's JSON is its error line alone: one document on stdout
        saved = {"recorded": {"cache": str(recorded[0]), "pipelines": recorded[1]}} if recorded else {}
        emit_json({**report.to_dict(), **saved})
    if failed:
        raise CnmtuneError(f"{report.kernel}: no candidate verified; the first failure: "
                           f"{report.first_failure or 'none ran (time budget spent)'}")


def _save(spec: TuneSpec, report: TuneReport) -> tuple[Path, dict[int, str]] | None:
    """Record the tuned pipelines in the tuning cache (cnmtune-cc applies them): the cache's path
    and the pipeline recorded per tasklet count; None (and a warning) when nothing verified."""
    from cnmtune.plugin.tune.cache import TuningCache, record_tune
    from cnmtune.runtime.toolchain import ProxyToolchain

    if report.chosen is None:
        warn("nothing recorded in the tuning cache: no verified variant")
        return None
    cache = TuningCache()
    recorded = record_tune(cache, find_kernel(spec.kernel), spec, report, ProxyToolchain().identity)
    return cache.path, dict(sorted((entry.tasklets, entry.pipeline) for _, entry in recorded))


def _print(report: TuneReport, recorded: tuple[Path, dict[int, str]] | None) -> None:
    """The top-k table, the result, the pipelines they name (by short id) and what was recorded."""
    named = [c.pipeline for c in [*report.top, report.chosen, report.default] if c]
    if report.exhaustive:
        named.append(report.exhaustive["best"]["pipeline"])
    named += recorded[1].values() if recorded else []
    ids = {pipeline: f"P{i}" for i, pipeline in enumerate(dict.fromkeys(named), 1)}
    console.print(_top_table(report, ids))
    if report.stages:
        console.print(_stages_table(report))
    console.print(_summary_table(report, ids))
    print_pipeline_legend(ids)
    if recorded:
        path, by_tasklets = recorded
        # the default build is recorded too: a later cnmtune-cc build applies it instead of tuning again
        fastest = "the default build was fastest; " if report.chosen_is_default else ""
        shown = ", ".join(f"{ids[pipeline]} ({counted(t, 'tasklet')})" for t, pipeline in by_tasklets.items())
        note(f"{fastest}recorded {shown} in the tuning cache {path}")


def _top_table(report: TuneReport, ids: dict[str, str]) -> Table:
    """The fastest runs of the search beside the model's prediction; the chosen one marked *."""
    given = "".join(f", {define_text(k, v)}" for k, v in [*report.defines.items(), *report.params.items()])
    table = Table(title=f"{report.kernel}{given}, size {report.size:,}: the fastest {len(report.top)} of "
                        f"{len(report.runs)} runs, {report.candidates} candidates ({report.variants} variants)",
                  caption_justify="left",
                  caption="model: the cost model's prediction (as adapted by the last round); speedup: over the "
                          "default build" + (" (kernel + transfers)" if report.objective == "end-to-end" else "")
                          + "; +N: N more pipelines built the same binary")
    # short headers, every cell wraps (never cut to an ellipsis): the table fits 80 columns
    for column in ("#", "variant", "DPUs", "tasklets", "model ms", "measured ms", "speedup", "status"):
        table.add_column(column, justify="left" if column in ("variant", "status") else "right", overflow="fold")
    base = report.default.objective_s(report.objective) if report.default else None
    for rank, c in enumerate(report.top, 1):
        mine = c.objective_s(report.objective)
        speedup = f"{base / mine:.2f}x" if base and mine else "-"
        mark = " *" if c is report.chosen else ""
        same = f" +{len(c.pipelines) - 1}" if len(c.pipelines) > 1 else ""
        table.add_row(f"{rank}{mark}", _variant(c, ids) + same, str(c.dpus), str(c.tasklets),
                      milliseconds(c.predicted_s), milliseconds(c.measured_s), speedup, c.status)
    return table


def _variant(c: Candidate, ids: dict[str, str]) -> str:
    """A candidate's pipeline id and its tuned defines: 'P3 BL=8'."""
    return " ".join([ids[c.pipeline], *(define_text(name, value) for name, value in c.defines)])


def _times(c: Candidate, objective: str) -> str:
    """A run's kernel time, and under the end-to-end objective its transfers and the sum."""
    kernel = f"{milliseconds(c.measured_s)} ms"
    if objective != "end-to-end" or c.transfer_s is None or c.measured_s is None:
        return kernel
    return f"{milliseconds(c.measured_s + c.transfer_s)} ms ({kernel} kernel + {milliseconds(c.transfer_s)} ms transfers)"


def _stages_table(report: TuneReport) -> Table:
    """Per search stage: candidates, runs, the model's error on them, the best run after it."""
    table = Table(title="search", caption="built: new candidates scored; explored: runs taken from the best run's "
                                          "neighbours, the rest are the model's picks; model: MAPE and Kendall tau "
                                          "of its kernel times on the round's runs, predicted before they ran "
                                          "(adapted on: the runs it was fine-tuned on first)",
                  caption_justify="left")
    for column in ("round", "built", "runs", "explored", "adapted on", "model MAPE", "tau", "best ms"):
        table.add_column(column, justify="left" if column == "stage" else "right", overflow="fold")
    for stage in report.stages:
        best = stage["best"]
        shown = (best["measured_s"] + (best["transfer_s"] or 0.0) * (report.objective == "end-to-end")) if best else None
        table.add_row(stage["stage"].removeprefix("round "), str(stage["candidates"]), str(stage["runs"]),
                      str(stage.get("explored", "-")), str(stage.get("adapted_on") or "-"),
                      f"{stage['model_mape']:.1f} %" if stage["model_mape"] is not None else "-",
                      f"{stage['model_kendall_tau']:.2f}" if stage["model_kendall_tau"] is not None else "-",
                      milliseconds(shown))
    return table


def _summary_table(report: TuneReport, ids: dict[str, str]) -> Table:
    """The choice against the default build, where the time went, and the exhaustive check."""
    summary = Table(show_header=False, title="result")
    summary.add_column(overflow="fold")
    summary.add_column(overflow="fold")
    default, chosen = report.default, report.chosen
    if report.chosen_is_default:
        summary.add_row("chosen", "the default build: nothing measured ran faster")
    elif chosen:
        summary.add_row("chosen (*)", f"{_variant(chosen, ids)} on {counted(chosen.dpus, 'DPU')} x "
                                      f"{counted(chosen.tasklets, 'tasklet')}: {_times(chosen, report.objective)}")
        summary.add_row("the gain comes from", ", ".join(report.wins))
        if chosen.defines:
            flags = " ".join(f"-D{define_text(name, value)}" for name, value in chosen.defines)
            summary.add_row("to adopt it", f"build the host and the DPU program with {flags} (the tuning cache "
                                           "keeps the best pipeline for the defines as given)")
    if default:
        summary.add_row(f"default ({ids[default.pipeline]}, {counted(default.tasklets, 'tasklet')})",
                        f"{counted(default.dpus, 'DPU')}: {_times(default, report.objective)}"
                        + ("" if default.status == "verified" else f" ({default.status.splitlines()[0]})"))
    if report.speedup_vs_default:
        summary.add_row("speedup over the default", f"{report.speedup_vs_default:.2f}x")
    zero_shot = [s["stage"].removeprefix("round ") for s in report.stages
                 if s.get("scored_by") == "trees" and s["stage"].startswith("round ")]
    if zero_shot:
        summary.add_row("ranked by the trees", f"round(s) {', '.join(zero_shot)}: the network's zero-shot trees, "
                                               "until it was fine-tuned on the kernel's runs")
    ft = report.finetune
    if ft and "skipped" in ft:
        summary.add_row("model not adapted", ft["skipped"])
    elif ft:
        summary.add_row("model adapted", f"{ft['rounds']} times; last on {ft['samples']} runs: MAPE on them "
                                         f"{ft['mape_before']:.1f} % -> {ft['mape_after']:.1f} %"
                        + (f"; {ft['shortened']} from the last fine-tuned network, for the new runs' share "
                           "of the epochs" if ft.get("shortened") else ""))
    summary.add_row("time spent (s)", ", ".join(f"{k} {v:.2f}" for k, v in report.seconds.items()))
    summary.add_row("runs", f"{report.executed} executed, {report.reused} reused from the store")
    confirmed = [c for c in report.runs if c.screened_s is not None and c.measured_s]
    if confirmed:
        error = max(abs(c.screened_s / c.measured_s - 1) for c in confirmed)
        summary.add_row("screening", f"{len(report.runs)} runs on the first and last DPU; {len(confirmed)} "
                                     f"confirmed on all {counted(confirmed[0].dpus, 'DPU')}, verified (stage confirm; "
                                     f"screening times within {100 * error:.1f} % of theirs)")
    if report.compile_failures:
        summary.add_row("compile failures", str(report.compile_failures))
    ex = report.exhaustive
    if ex:
        best = ex["best"]
        summary.add_row("exhaustive best", f"{ids[best['pipeline']]} on {counted(best['dpus'], 'DPU')} x "
                                           f"{counted(best['tasklets'], 'tasklet')}: "
                                           f"{milliseconds(best['measured_s'])} ms")
        summary.add_row("regret of the choice", f"{100 * ex['regret']:.2f} % (rank {ex['chosen_rank']} of "
                                                f"{ex['measured']})")
        summary.add_row("tuner vs exhaustive", f"{ex['tuner_seconds']:.1f} s vs {ex['exhaustive_seconds']:.1f} s "
                                               f"({ex['tuner_speedup']:.1f}x faster)")
        summary.add_row("model on all candidates", f"MAPE {ex['mape']:.1f} %, Kendall tau {ex['kendall_tau']:.2f}")
    return summary
