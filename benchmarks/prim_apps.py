"""PrIM's own applications, unmodified, as the fidelity benchmark: code cnmtune did not write.

1. Suite: each of PrIM's 16 applications (a PrIM checkout, `--prim`) built by its own Makefile
   with cnmtune-cc and run through `cnmtune app run` at 1 and 4 DPUs, 16 tasklets, small inputs;
   an application passes when its host exits 0 and prints its own verdict (target: 16/16 at both).
2. Hardware: every row of the calibration CSVs (VA, RED, BS, GEMV fitted; MLP, SCAN-SSA held out)
   run through PrIM's application and through cnmtune's own kernel of the same workload, both on
   DpuConfig.calibrated(): per workload the measured kernel time, both simulated times, their
   MAPE against the hardware (target <= 15 % through the app) and the app-vs-own difference per
   row (target: within 5 %).

The applications run from a temporary copy (their Makefiles write bin/ and .conf files); BS's
sorted-array length is a constant in its support/common.h (INPUT_SIZE), so a row of another length
sets that constant in the copy, as PrIM's own scripts vary it. BFS and SpMV read input files that
PrIM's repository does not store: the suite writes a random graph and a random sparse matrix in
their formats (seeded).

    python benchmarks/prim_apps.py [--prim DIR] [--data DIR]
        [--parts suite,hardware] [--workloads VA,MLP] [--max-dpus 16] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

import script_io
from cnmtune.display import Table
from cnmtune.runtime.sim import calibration
from cnmtune.runtime.sim.config import DpuConfig

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
PRIM = SHARED / "prim-benchmarks"
TASKLETS = 16
APP_TARGET, OWN_GAP_TARGET = 15.0, 5.0  # % kernel-time MAPE through the app; % app vs own per row
ONE_RUN = ("-w", "0", "-e", "1")  # no warm-up, one timed repetition, as the hardware rows
#: The 16 applications and their small-input arguments (PrIM's params.h); {graph} and {matrix}
#: are the generated inputs.
SUITE: dict[str, tuple[str, ...]] = {
    "BFS": ("-f", "{graph}"),
    "BS": (*ONE_RUN, "-i", "4096"),
    "GEMV": (*ONE_RUN, "-m", "1024", "-n", "64"),
    "HST-L": (*ONE_RUN, "-i", "65536"),
    "HST-S": (*ONE_RUN, "-i", "65536"),
    "MLP": (*ONE_RUN, "-m", "256", "-n", "256"),
    "NW": (*ONE_RUN, "-n", "2048"),  # rows: with its Makefile's BL of 1024, 512 rows launch nothing
    "RED": (*ONE_RUN, "-i", "65536"),
    "SCAN-RSS": (*ONE_RUN, "-i", "65536"),
    "SCAN-SSA": (*ONE_RUN, "-i", "65536"),
    "SEL": (*ONE_RUN, "-i", "65536"),
    "SpMV": ("-f", "{matrix}"),
    "TRNS": (*ONE_RUN, "-m", "4", "-n", "8", "-o", "16", "-p", "16"),
    "TS": (*ONE_RUN, "-n", "16384", "-m", "64"),
    "UNI": (*ONE_RUN, "-i", "65536"),
    "VA": (*ONE_RUN, "-i", "65536"),
}
#: What an application prints when its own check fails (PrIM's hosts print no verdict on success
#: where they print per-element mismatches instead).
FAILED = re.compile(r"ERROR|Mismatch|differ", re.IGNORECASE)
#: Host arguments of a hardware row (shared/prim-benchmarks/README.cnmtune.md: uPIMulator's
#: artifact, strong scaling, one timed repetition).
ROW_ARGS = {
    "VA": lambda size: (*ONE_RUN, "-x", "1", "-i", str(size)),
    "RED": lambda size: (*ONE_RUN, "-x", "1", "-i", str(size)),
    "SCAN-SSA": lambda size: (*ONE_RUN, "-x", "1", "-i", str(size)),
    "GEMV": lambda size: (*ONE_RUN, "-m", str(size), "-n", "64"),
    "MLP": lambda size: (*ONE_RUN, "-m", str(size), "-n", str(size)),
    "BS": lambda size: (*ONE_RUN, "-i", str(size // 8)),
}
BS_LENGTH = re.compile(r"^#define INPUT_SIZE \d+$", re.MULTILINE)


@dataclass(frozen=True)
class AppRun:
    """One `cnmtune app run`: what the host printed and the simulated times (seconds)."""

    returncode: int
    stdout: str
    stderr: str
    kernel_s: float
    host_to_dpu_s: float
    dpu_to_host_s: float

    @property
    def passed(self) -> bool:
        """Exit 0, no failed check printed, and at least one launch (else nothing was tested)."""
        return self.returncode == 0 and not FAILED.search(self.stdout) and self.kernel_s > 0

    def failure(self) -> str:
        """The line that says why a run failed (empty when it passed)."""
        if self.passed:
            return ""
        if self.returncode == 0 and not FAILED.search(self.stdout):
            return "no DPU launch: the inputs are too small to test anything"
        lines = [line for line in (self.stdout + "\n" + self.stderr).splitlines() if FAILED.search(line)]
        return (lines[0] if lines else f"exit {self.returncode}").strip()[:400]


def app_run(app: Path, dpus: int, args: tuple[str, ...], tasklets: int = TASKLETS,
            variables: tuple[str, ...] = ()) -> AppRun:
    """Build `app` for `dpus` DPUs and `tasklets` tasklets (and the make `variables`, NAME=VALUE)
    with its Makefile and run it on the simulator."""
    command = [sys.executable, "-m", "cnmtune", "app", "run", str(app), "--dpus", str(dpus),
               "--tasklets", str(tasklets), *(f"--var={v}" for v in variables), "--json", "--", *args]
    done = subprocess.run(command, capture_output=True, text=True)
    try:
        record = json.loads(done.stdout)
    except json.JSONDecodeError:  # a build or usage error: cnmtune printed one line, no record
        return AppRun(done.returncode or 1, "", done.stderr.strip(), 0.0, 0.0, 0.0)
    if "error" in record:  # cnmtune's one-line error as JSON (a fault, a build error, a timeout)
        return AppRun(done.returncode or 1, "", f"error: {record['error']}", 0.0, 0.0, 0.0)
    sets = record.get("sets", [])
    return AppRun(record["returncode"], record["stdout"], record["stderr"], record["kernel_s"],
                  sum(s["host_to_dpu_s"] for s in sets), sum(s["dpu_to_host_s"] for s in sets))


def prim_option(parser: argparse.ArgumentParser) -> None:
    """--prim DIR: a PrIM checkout (default ../shared/prim-benchmarks)."""
    parser.add_argument("--prim", type=Path, default=PRIM, help="a PrIM checkout (default ../shared/prim-benchmarks)")


def check_prim(parser: argparse.ArgumentParser, prim: Path, app: str = "VA") -> Path:
    """PrIM's application folder `app` of checkout `prim`; a usage error naming what to pass when it has no Makefile."""
    if not (prim / app / "Makefile").is_file():
        parser.error(f"--prim {prim}: not a PrIM checkout (no {app}/Makefile); pass the folder holding PrIM's "
                     "applications (github CMU-SAFARI/prim-benchmarks)")
    return prim / app


def write_inputs(folder: Path, seed: int = 7) -> dict[str, str]:
    """A random graph in BFS's format and a random sparse matrix in SpMV's (support/graph.h,
    support/matrix.h): the inputs PrIM's repository does not store."""
    rng = random.Random(seed)
    nodes = 2048
    edges = sorted({pair for i in range(nodes) for j in (rng.randrange(nodes) for _ in range(4)) if j != i
                    for pair in ((i, j), (j, i))})
    graph = folder / "graph.txt"
    graph.write_text(f"{nodes} {nodes} {len(edges)}\n" + "".join(f"{a} {b}\n" for a, b in edges))
    rows = 1024
    entries = sorted({(i + 1, rng.randrange(rows) + 1) for i in range(rows) for _ in range(8)})
    matrix = folder / "matrix.mtx"
    matrix.write_text(f"{rows} {rows} {len(entries)}\n" + "".join(f"{r} {c}\n" for r, c in entries))
    return {"graph": str(graph), "matrix": str(matrix)}


def run_suite(prim: Path, work: Path, console: Console) -> list[dict]:
    """Every application at 1 and 4 DPUs on small inputs: passed or the reason it did not."""
    inputs = write_inputs(work)
    records = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("PrIM's applications", total=2 * len(SUITE))
        for name, args in SUITE.items():
            app = work / name
            shutil.copytree(prim / name, app, ignore=shutil.ignore_patterns("bin"))
            for dpus in (1, 4):
                run = app_run(app, dpus, tuple(a.format(**inputs) for a in args))
                records.append({"app": name, "dpus": dpus, "passed": run.passed, "why": run.failure(),
                                "kernel_ms": 1e3 * run.kernel_s})
                progress.advance(task)
    return records


def bs_copy(prim: Path, work: Path, length: int) -> Path:
    """A copy of PrIM's BS whose sorted array has `length` elements (its INPUT_SIZE constant)."""
    app = work / f"BS-{length}"
    if not app.exists():
        shutil.copytree(prim / "BS", app, ignore=shutil.ignore_patterns("bin"))
        header = app / "support" / "common.h"
        text, found = BS_LENGTH.subn(f"#define INPUT_SIZE {length}", header.read_text())
        if found != 1:
            raise SystemExit(f"{header}: no '#define INPUT_SIZE' line to set; is --prim a PrIM checkout?")
        header.write_text(text)
    return app


def run_hardware(prim: Path, work: Path, rows: list[calibration.Row], config: DpuConfig,
                 console: Console) -> list[dict]:
    """Each hardware row through PrIM's application and through cnmtune's own kernel."""
    from validate_sim import simulate  # the own kernels, exactly as validate_sim runs them

    own = {(r["benchmark"], r["dpus"], r["size"]): r for r in simulate(rows, config, console, fitted=True)}
    records = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("the hardware rows through PrIM's applications", total=len(rows))
        for row in rows:
            if row.benchmark == "BS":
                app = bs_copy(prim, work, row.size)
            else:
                app = work / row.benchmark
                if not app.exists():
                    shutil.copytree(prim / row.benchmark, app, ignore=shutil.ignore_patterns("bin"))
            run = app_run(app, row.nr_dpus, ROW_ARGS[row.benchmark](row.size))
            mine = own[(row.benchmark, row.nr_dpus, row.size)]
            records.append({
                "benchmark": row.benchmark, "dpus": row.nr_dpus, "size": row.size, "passed": run.passed,
                "why": run.failure(), "kernel_ms_real": row.kernel_ms, "kernel_ms_app": 1e3 * run.kernel_s,
                "kernel_ms_own": mine["kernel_ms"], "cpu_to_dpu_ms_app": 1e3 * run.host_to_dpu_s,
                "dpu_to_cpu_ms_app": 1e3 * run.dpu_to_host_s,
            })
            progress.advance(task)
    return records


def summarise_hardware(records: list[dict]) -> dict[str, dict]:
    """Per workload and overall: rows, failed runs, kernel MAPE through the app and the own kernel,
    and the largest app-vs-own difference of a row (passing rows only)."""
    out = {}
    for group in sorted({r["benchmark"] for r in records}) + ["all"]:
        chosen = [r for r in records if group in ("all", r["benchmark"])]
        good = [r for r in chosen if r["passed"]]
        out[group] = {
            "rows": len(chosen), "failed": len(chosen) - len(good),
            "app_mape": calibration.mape([(r["kernel_ms_app"], r["kernel_ms_real"]) for r in good]) if good else None,
            "own_mape": calibration.mape([(r["kernel_ms_own"], r["kernel_ms_real"]) for r in good]) if good else None,
            "max_app_vs_own": max((abs(r["kernel_ms_app"] / r["kernel_ms_own"] - 1) * 100 for r in good),
                                  default=None),
        }
    return out


def print_suite(records: list[dict], console: Console) -> int:
    """The pass/fail table; returns the number of failed runs."""
    table = Table(title=f"PrIM's applications through `cnmtune app run` ({TASKLETS} tasklets, small inputs)")
    for column in ("app", "1 DPU", "4 DPUs", "kernel ms (4 DPUs)"):
        table.add_column(column, justify="left" if column == "app" else "right")
    by_app: dict[str, dict[int, dict]] = {}
    for r in records:
        by_app.setdefault(r["app"], {})[r["dpus"]] = r
    for app, runs in by_app.items():
        table.add_row(app, *("pass" if runs[d]["passed"] else "FAIL" for d in (1, 4)), f"{runs[4]['kernel_ms']:.3f}")
    console.print(table)
    failed = [r for r in records if not r["passed"]]
    for r in failed:
        console.print(f"- {r['app']} at {r['dpus']} DPU(s): {r['why']}", highlight=False, markup=False)
    passing = sum(all(runs[d]["passed"] for d in (1, 4)) for runs in by_app.values())
    console.print(f"{passing}/{len(by_app)} applications pass at 1 and 4 DPUs (target: all)")
    return len(failed)


def print_hardware(records: list[dict], summary: dict[str, dict], console: Console) -> bool:
    """The per-workload table; returns whether both targets are met."""
    table = Table(title="kernel time: PrIM's app and cnmtune's own kernel vs real UPMEM (calibrated config)")
    for column in ("workload", "rows", "failed", "app MAPE %", "own MAPE %", "max |app/own-1| %"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for group, s in summary.items():
        table.add_row(group, str(s["rows"]), str(s["failed"]),
                      *("-" if s[k] is None else f"{s[k]:.1f}" for k in ("app_mape", "own_mape", "max_app_vs_own")))
    console.print(table)
    for r in records:
        if not r["passed"]:
            console.print(f"- {r['benchmark']} {r['dpus']} DPU(s) size {r['size']}: {r['why']}",
                          highlight=False, markup=False)
    worst_app = max((s["app_mape"] or 0.0 for g, s in summary.items() if g != "all"), default=0.0)
    gap = summary["all"]["max_app_vs_own"] or 0.0
    met = worst_app <= APP_TARGET and gap <= OWN_GAP_TARGET and summary["all"]["failed"] == 0
    console.print(f"worst workload through the app {worst_app:.1f} % (target <= {APP_TARGET:g} %); largest app-vs-own "
                  f"gap {gap:.1f} % (target <= {OWN_GAP_TARGET:g} %): {'met' if met else 'missed'}")
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    prim_option(parser)
    script_io.data_option(parser)
    parser.add_argument("--parts", default="suite,hardware", help="suite, hardware or both (comma-separated)")
    parser.add_argument("--workloads", default="", help="hardware rows of these workloads only (e.g. VA,MLP)")
    parser.add_argument("--max-dpus", type=int, default=64, help="hardware rows with at most this many DPUs")
    script_io.json_option(parser, "prim_apps.json", "the records and summaries")
    args = parser.parse_args()
    console = Console()
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    if not parts <= {"suite", "hardware"}:
        parser.error(f"--parts: unknown part(s) {', '.join(sorted(parts - {'suite', 'hardware'}))}")
    check_prim(parser, args.prim)
    if "hardware" in parts:  # before the suite's minutes, not after them
        csvs = script_io.data_files(parser, args.data, calibration.FITTED_CSV, calibration.VALIDATION_CSV)
    report: dict = {"config": DpuConfig.calibrated().hash}
    ok = True
    with tempfile.TemporaryDirectory(prefix="cnmtune-prim-") as tmp:
        work = Path(tmp)
        if "suite" in parts:
            (work / "suite").mkdir()
            suite = run_suite(args.prim, work / "suite", console)
            ok &= print_suite(suite, console) == 0
            report["suite"] = suite
        if "hardware" in parts:
            wanted = {w.strip().upper() for w in args.workloads.split(",") if w.strip()}
            rows = [r for path in csvs for r in calibration.load_rows(path)
                    if r.nr_dpus <= args.max_dpus and (not wanted or r.benchmark in wanted)]
            (work / "hardware").mkdir()
            hardware = run_hardware(args.prim, work / "hardware", rows, DpuConfig.calibrated(), console)
            summary = summarise_hardware(hardware)
            ok &= print_hardware(hardware, summary, console)
            report["hardware"] = {"summary": summary, "rows": hardware}
    console.print(f"wrote {script_io.write_json(args.json, report)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
