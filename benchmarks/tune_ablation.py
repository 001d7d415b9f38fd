"""Does the cost model earn its place? The same tuner search, scored four ways, at equal run budgets.

Arms (issue 40): ``model``, the shipped cost model fine-tuned on the tune's runs after every round;
``model-static``, the same model never fine-tuned (tune --no-adapt); ``heuristic``, the static
analytical prior from the same features with nothing learnt (tune --model analytical); ``random``,
seeded random scores (tune --model random:SEED, ``--seeds`` seeds). Per kernel and arm ONE tune
runs with the largest budget as its run limit; the best run within each budget is read from the
order the runs executed in (the default build is run 1). The speedup at a budget is the default
build's time over that best run's, both as the search compared them (screening runs from 16 DPUs:
the confirmation of the best happens after the search, beyond its budget), so it is never below
1. Runs to 2 %: the runs an arm needed to come within 2 % of the best run any arm found on the
kernel. Per arm: the geometric mean over the kernels (random: per kernel, the geometric mean of
its seeds' speedups and the median of their runs to 2 %).

Default kernels: the prim and pim-ml suites and the four in benchmarks/unseen (never in a dataset),
at their default presets on one rank (64 DPUs, or the most the size allows).

    python benchmarks/tune_ablation.py [--kernels prim,pim-ml,benchmarks/unseen/stencil,...]
        [--arms model,model-static,heuristic,random] [--budgets 10,20,40] [--size default] [--dpus 64]
        [--seeds 3] [--model M.onnx] [--pipelines 100] [--top-k 10] [--rounds 5] [--workers 2]
        [--reuse EARLIER.json [--reuse LATER.json ...]] [--json benchmarks/results/tune_ablation.json]

``--reuse`` takes the tunes of the arms not in ``--arms`` from earlier outputs of this script with
the same budgets and search settings (for example the baselines, after a change to the model arms
only: the heuristic and random arms do not use the model; a later file's tune replaces an earlier
one's, and ``--arms ''`` runs nothing but the tables); the tables and the target then cover every
arm.

Exit status: 0 every tune ran and, when the model, heuristic and random arms all ran, the model
arm's geomean beats the other two at every budget but the largest (issue 40's target at 10 and 20
runs); 1 a tune failed or the target is missed; 2 a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError
from cnmtune.plugin.tune import TUNE_TASKLETS, TuneReport, TuneSpec, tune
from cnmtune.runtime.executor import make_executor
from cnmtune.runtime.registry import expand_kernels, find_kernel

ARMS = ("model", "model-static", "heuristic", "random")
UNSEEN = Path(__file__).resolve().parent / "unseen"
WITHIN = 0.02  # runs to come within 2 % of the best any arm found


def main() -> int:
    unseen = sorted(str(d) for d in UNSEEN.iterdir() if (d / "workload.py").is_file())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=",".join(["prim", "pim-ml", *unseen]),
                        help="kernels, suites or kernel directories (default: prim, pim-ml, benchmarks/unseen/*)")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"arms to run, of {', '.join(ARMS)}")
    parser.add_argument("--budgets", default="10,20,40", help="run budgets (the default build is a run)")
    parser.add_argument("--size", default="default", help="size preset (or element count) of every kernel")
    parser.add_argument("--dpus", type=int, help="DPUs (default: one rank of 64, or the most the size allows)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the random arm")
    parser.add_argument("--model", help="cost model .onnx of the model arms (default: the shipped model)")
    parser.add_argument("--pipelines", type=int, default=100)
    parser.add_argument("--top-k", type=int, default=10, help="runs per round (tune --top-k)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the search at most (tune --rounds)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reuse", type=Path, action="append", default=[], metavar="EARLIER.json",
                        help="take the tunes of the arms not in --arms from this earlier --json (repeatable: "
                             "a later file's tune of an arm replaces an earlier one's; --arms '' runs none)")
    script_io.json_option(parser, "tune_ablation.json")
    args = parser.parse_args()
    budgets, arms = _budgets(parser, args.budgets), _arms(parser, args.arms)
    for option, value in (("--seeds", args.seeds), ("--pipelines", args.pipelines), ("--top-k", args.top_k),
                          ("--rounds", args.rounds), ("--workers", args.workers), ("--dpus", args.dpus or 1)):
        if value < 1:
            parser.error(f"{option} must be >= 1, got {value}")
    try:
        kernels = [find_kernel(k) for k in expand_kernels(args.kernels.split(","))]
    except CnmtuneError as exc:
        parser.error(str(exc))
    size = int(args.size) if args.size.isdigit() else args.size
    tunes = [(arm, label, model, adapt) for arm in arms for label, model, adapt in _settings(arm, args)]
    reused = _reused(parser, args, budgets, arms, [k.name for k in kernels])
    arms += [a for a in ARMS if a not in arms and any(t["arm"] == a for k in reused.values() for t in k.values())]
    if not arms:
        parser.error("no arm to run (--arms) or to read (--reuse)")

    console = Console(width=None if sys.stdout.isatty() else 160)  # a log file gets the whole table
    results: dict[str, dict] = {}
    with make_executor(args.workers) as executor, Progress(console=console, transient=True) as bar:
        for kernel in kernels:
            found: dict[str, dict] = dict(reused.get(kernel.name, {}))
            for arm, label, model, adapt in tunes:
                task = bar.add_task(f"{kernel.name} {label}", total=None)
                spec = TuneSpec(str(kernel.root), size=size, pipelines=args.pipelines, top_k=args.top_k,
                                rounds=args.rounds, model=model, adapt=adapt, max_runs=budgets[-1],
                                dpus=(args.dpus,) if args.dpus else None,
                                tasklets=tuple(sorted({*TUNE_TASKLETS, kernel.workload.nr_tasklets})))
                start = time.perf_counter()
                try:
                    found[label] = {"arm": arm, **_trace(tune(spec, executor, None, lambda phase, done, total,
                                    t=task, k=f"{kernel.name} {label}": bar.update(
                                        t, description=f"{k}: {phase}", completed=done, total=total)))}
                except CnmtuneError as exc:  # one tune's failure is a row, not the end of the benchmark
                    found[label] = {"arm": arm, "error": str(exc)}
                found[label]["wall_s"] = time.perf_counter() - start
                bar.remove_task(task)
                console.print(f"{kernel.name} {label}: {_progress_line(found[label], budgets)}")
            results[kernel.name] = _kernel_result(found, budgets)
            _write(args, budgets, arms, results)  # after every kernel: a long run keeps what it has measured
    summary = _summary(arms, budgets, results)
    console.print(_kernel_table(arms, budgets, results))
    console.print(_arm_table(budgets, summary, len(results)))
    met = _target(console, arms, budgets, summary)
    failed = sum("error" in t for r in results.values() for t in r["tunes"].values())
    if failed:
        console.print(f"[red]{failed} tune(s) failed[/]")
    console.print(f"wrote {args.json}")
    return 0 if met and not failed else 1


def _budgets(parser: argparse.ArgumentParser, text: str) -> list[int]:
    try:
        budgets = sorted({int(b) for b in text.split(",")})
    except ValueError:
        parser.error(f"--budgets takes run counts such as 10,20,40, got {text!r}")
    if budgets[0] < 1:
        parser.error(f"--budgets must be >= 1 runs, got {text!r}")
    return budgets


def _arms(parser: argparse.ArgumentParser, text: str) -> list[str]:
    arms = [a for a in dict.fromkeys(text.split(",")) if a]  # '': none (every arm from --reuse)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        parser.error(f"unknown arm(s) {', '.join(unknown)}; valid: {', '.join(ARMS)}")
    return arms


# what must match for an earlier run's tunes to stand beside this run's
SETTINGS = ("size", "dpus", "pipelines", "top_k", "rounds")


def _reused(parser: argparse.ArgumentParser, args: argparse.Namespace, budgets: list[int], arms: list[str],
            kernels: list[str]) -> dict[str, dict[str, dict]]:
    """Per kernel, the tunes of the arms not in `arms` that the --reuse files hold (as run there)."""
    out: dict[str, dict[str, dict]] = {}
    for path in args.reuse:
        try:
            earlier = json.loads(path.read_text())
            kept, held = earlier["args"], earlier["kernels"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--reuse {path}: not an output of this script ({exc})")
        model_arms = any(t["arm"].startswith("model") and t["arm"] not in arms
                         for k in held.values() for t in k.get("tunes", {}).values())
        differ = [name for name in (*SETTINGS, *(("model",) if model_arms else ()))
                  if kept.get(name) != getattr(args, name)] + (["budgets"] if earlier.get("budgets") != budgets else [])
        if differ:
            parser.error(f"--reuse {path}: run with other {', '.join(differ)} than this run")
        for kernel in kernels:
            tunes = {label: t for label, t in held.get(kernel, {}).get("tunes", {}).items() if t["arm"] not in arms}
            out.setdefault(kernel, {}).update(tunes)
    wanted = {t["arm"] for k in out.values() for t in k.values()}
    for kernel in kernels:
        missing = sorted(wanted - {t["arm"] for t in out.get(kernel, {}).values()})
        if missing:
            parser.error(f"--reuse: no {', '.join(missing)} tunes of {kernel} in {', '.join(map(str, args.reuse))}")
    return {k: {label: {key: v for key, v in t.items() if key not in ("speedup", "runs_to_2pct")}
                for label, t in tunes.items()} for k, tunes in out.items()}


def _settings(arm: str, args: argparse.Namespace) -> list[tuple[str, str | None, bool]]:
    """The tunes of an arm: (label, TuneSpec.model, TuneSpec.adapt) each."""
    if arm == "random":
        return [(f"random:{seed}", f"random:{seed}", False) for seed in range(args.seeds)]
    return [(arm, "analytical" if arm == "heuristic" else args.model, arm == "model")]


def _trace(report: TuneReport) -> dict:
    """The default build's time and every run's in execution order, as the search compared them
    (None: a failed run); a tune whose default build has no time raises."""
    default = report.default.compared_s(report.objective) if report.default else None
    if default is None:
        raise CnmtuneError(f"the default build has no time: {report.first_failure or 'it did not run'}")
    return {"default_s": default, "times": [c.compared_s(report.objective) for c in report.runs],
            "speedup_vs_default": report.speedup_vs_default, "finetune": report.finetune}


def _best(times: list[float | None], runs: int) -> float | None:
    known = [t for t in times[:runs] if t is not None]
    return min(known) if known else None


def _runs_to(times: list[float | None], target: float) -> int | None:
    """The runs until one came within `target` (None: none did)."""
    return next((i + 1 for i, t in enumerate(times) if t is not None and t <= target), None)


def _kernel_result(found: dict[str, dict], budgets: list[int]) -> dict:
    """Per tune: the speedup at each budget and the runs to 2 % of the best any tune found."""
    ran = {label: t for label, t in found.items() if "error" not in t}
    best = min((b for t in ran.values() if (b := _best(t["times"], budgets[-1])) is not None), default=None)
    for t in ran.values():
        t["speedup"] = _speedups(t, budgets)
        t["runs_to_2pct"] = _runs_to(t["times"], (1 + WITHIN) * best)
    return {"best_s": best, "tunes": found}


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _arm_kernel(result: dict, arm: str, budgets: list[int]) -> dict | None:
    """An arm's outcome on one kernel (random: its seeds combined); None if a tune of it failed."""
    tunes = [t for t in result["tunes"].values() if t["arm"] == arm]
    if not tunes or any("error" in t for t in tunes):
        return None
    runs = sorted((t["runs_to_2pct"] or math.inf for t in tunes))[len(tunes) // 2]  # the median
    return {"speedup": {str(b): _geomean([t["speedup"][str(b)] for t in tunes]) for b in budgets},
            "runs_to_2pct": None if runs == math.inf else runs}


def _summary(arms: list[str], budgets: list[int], results: dict[str, dict]) -> dict[str, dict]:
    """The JSON's "arms": per arm, its geomean and per-kernel speedups by budget, runs to 2 %."""
    out = {}
    for arm in arms:
        per = {k: o for k, r in results.items() if (o := _arm_kernel(r, arm, budgets)) is not None}
        reached = [o["runs_to_2pct"] for o in per.values() if o["runs_to_2pct"] is not None]
        out[arm] = {"geomean": {str(b): _geomean([o["speedup"][str(b)] for o in per.values()]) for b in budgets},
                    "kernels": {k: o["speedup"] for k, o in per.items()},
                    "runs_to_2pct": {k: o["runs_to_2pct"] for k, o in per.items()},
                    "runs_to_2pct_median": statistics.median(reached) if reached else None,
                    "reached_2pct": len(reached), "failed": len(results) - len(per)}
    return out


def _speedups(t: dict, budgets: list[int]) -> dict[str, float]:
    """A tune's speedup over the default build within each budget (JSON keys: strings)."""
    return {str(b): t["default_s"] / _best(t["times"], b) for b in budgets}


def _progress_line(t: dict, budgets: list[int]) -> str:
    if "error" in t:
        return f"[red]error[/]: {t['error'][:120]} ({t['wall_s']:.0f} s)"
    speedups = ", ".join(f"{s:.2f}x at {b}" for b, s in _speedups(t, budgets).items())
    return f"{speedups} runs ({len(t['times'])} runs in {t['wall_s']:.0f} s)"


def _kernel_table(arms: list[str], budgets: list[int], results: dict[str, dict]) -> Table:
    table = Table(title=f"speedup over the default build within {'/'.join(map(str, budgets))} runs "
                        f"(runs to {100 * WITHIN:g} % of the best any arm found)",
                  caption="random: the geometric mean of its seeds (the median of their runs); -: a tune failed; "
                          "never: not within 2 % in the largest budget")
    table.add_column("kernel", justify="left")
    for arm in arms:
        table.add_column(arm, justify="right")
    for kernel, result in results.items():
        cells = []
        for arm in arms:
            o = _arm_kernel(result, arm, budgets)
            cells.append("-" if o is None else "/".join(f"{o['speedup'][str(b)]:.2f}" for b in budgets) +
                         f" ({o['runs_to_2pct'] or 'never'})")
        table.add_row(kernel, *cells)
    return table


def _arm_table(budgets: list[int], summary: dict[str, dict], kernels: int) -> Table:
    table = Table(title=f"per arm, the geometric mean over {kernels} kernel(s)",
                  caption="runs to 2 %: the median over the kernels that reached it")
    for column in ("arm", *(f"{b} runs" for b in budgets), "runs to 2 %", "reached", "failed"):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for arm, s in summary.items():
        table.add_row(arm, *(f"{g:.3f}x" if (g := s["geomean"][str(b)]) else "-" for b in budgets),
                      f"{s['runs_to_2pct_median']:g}" if s["runs_to_2pct_median"] is not None else "-",
                      str(s["reached_2pct"]), str(s["failed"]))
    return table


def _target(console: Console, arms: list[str], budgets: list[int], summary: dict[str, dict]) -> bool:
    """Issue 40's target, where the model, heuristic and random arms ran: the model arm's geomean
    ahead of both at every budget but the largest; True where it does not apply."""
    if not {"model", "heuristic", "random"} <= set(arms) or len(budgets) < 2:
        return True
    met = True
    for b in map(str, budgets[:-1]):
        model = summary["model"]["geomean"][b]
        others = [summary[a]["geomean"][b] for a in ("heuristic", "random")]
        met &= model is not None and all(o is None or model > o for o in others)
    console.print(f"the model ahead of the heuristic and random at {', '.join(map(str, budgets[:-1]))} runs: "
                  f"{script_io.verdict(met)}")
    return met


def _write(args: argparse.Namespace, budgets: list[int], arms: list[str], results: dict[str, dict]) -> None:
    given = vars(args) | {"json": str(args.json), "reuse": list(map(str, args.reuse))}
    script_io.write_json(args.json, {"args": given, "budgets": budgets, "arms": _summary(arms, budgets, results),
                                     "kernels": results})


if __name__ == "__main__":
    raise SystemExit(main())
