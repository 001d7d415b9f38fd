"""PrIM's CPU-DPU microbenchmark, unmodified, on the simulator next to PrIM's published bandwidths.

PrIM's Microbenchmarks/CPU-DPU (a PrIM checkout, `--prim`) built by its own Makefile with
TRANSFER=SERIAL (one dpu_copy_to / dpu_copy_from per DPU), PUSH (dpu_prepare_xfer +
dpu_push_xfer) or BROADCAST (dpu_broadcast_to), 1 tasklet and BL=10 as its run.sh, and run
through `cnmtune app run` (prim_apps.app_run): the host times its own calls with gettimeofday,
which reads simulated time during DPU calls, and prints `DPU count x bytes per DPU / time` as
"CPU-DPU Bandwidth (GB/s)" and "DPU-CPU Bandwidth (GB/s)"; this script parses those lines.
One timed repetition (`-w 0 -e 1`): the simulated time of a call does not vary between repetitions.

Default runs: every mode at 1, 4, 16 and 64 DPUs at 2 MiB per DPU, and serial on 1 DPU at each
of PrIM's sizes (8 B ... 32 MiB per DPU; Fig. 10 (a) of the paper); `--full` runs PrIM's run.sh
grid instead (1 ... 64 DPUs x 3 modes x 8 B ... 32 MiB: hours, and 32 MiB at 64 DPUs takes about
100 s and 6.5 GB of memory in one run). In BROADCAST builds the DPU-CPU step is the PUSH retrieve
(PrIM's app.c), so broadcast rows are CPU-DPU only.

PrIM's published bandwidths (docs/transfer_facts.md F1-F5, at 32 MiB per DPU) are compared with
rows of at least COMPARED_FROM bytes per DPU of the same mode, direction and DPU count; target:
within 25 %. Their tag is printed with them: [U] = UNCONFIRMED (recalled or third-party quote, not
re-read in the paper). The simulator prices transfers with the constants of `--sim-config`
(default calibrated: fitted on the calibration machine's rows, which is not PrIM's machine, G7).

    python benchmarks/prim_cpu_dpu.py [--prim DIR] [--dpus 1,4,16,64] [--modes serial,parallel,broadcast]
        [--elements 262144] [--sizes 1,4,...,4194304] [--full] [--sim-config calibrated] [--json] [--out PATH]

Exit status: 0 every compared row within 25 %; 1 a row missed it or a run failed; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

import prim_apps
import script_io
from cnmtune.display import Table
from cnmtune.runtime.sim.config import NAMED_CONFIGS, DpuConfig

APP = "Microbenchmarks/CPU-DPU"
#: the modes of PrIM's figure and the TRANSFER make variable that builds each
MODES = {"serial": "SERIAL", "parallel": "PUSH", "broadcast": "BROADCAST"}
DIRECTIONS = ("CPU-DPU", "DPU-CPU")
TASKLETS, BL = 1, 10  # run.sh's; the kernel is never launched (app.c comments dpu_launch out)
#: run.sh's grid: DPU counts and uint64 elements per DPU (8 B ... 32 MiB)
RUN_SH_DPUS = (1, 2, 4, 8, 16, 32, 64)
RUN_SH_ELEMENTS = tuple(4 ** k for k in range(12))
DPUS = (1, 4, 16, 64)
ELEMENTS = 1 << 18  # 2 MiB per DPU: one of PrIM's sizes, cheap at 64 DPUs
TARGET = 25.0  # % from a published value
#: the smallest transfer compared with a published value: PrIM quotes its values at 32 MiB per
#: DPU; below about 1 MiB a call's fixed costs, not its sustained rate, set the bandwidth
COMPARED_FROM = 1 << 20
BANDWIDTH = re.compile(r"(CPU-DPU|DPU-CPU) Bandwidth \(GB/s\): ([0-9.]+)")
PASSED = "Outputs are equal"


@dataclass(frozen=True)
class Published:
    """A bandwidth PrIM's paper publishes: GB/s, bytes per DPU, its fact in docs/transfer_facts.md and tag."""

    gbps: float
    nbytes: int
    fact: str
    tag: str


_PAPER = 32 << 20
#: (mode, direction, DPUs) -> PrIM's value (Gomez-Luna et al., IEEE Access 2022; section 3.4, Fig. 10 as recalled)
PUBLISHED = {
    ("serial", "CPU-DPU", 1): Published(0.33, _PAPER, "F1", "U"),
    ("serial", "DPU-CPU", 1): Published(0.12, _PAPER, "F2", "U"),
    ("parallel", "CPU-DPU", 64): Published(6.68, _PAPER, "F3", "U"),
    ("parallel", "DPU-CPU", 64): Published(4.74, _PAPER, "F4", "U"),
    ("broadcast", "CPU-DPU", 64): Published(16.88, _PAPER, "F5", "U"),
}
TAGS = {"U": "UNCONFIRMED: recalled or quoted by a third party, not re-read in the paper"}


def runs(modes: list[str], dpus: list[int], elements: int, sizes: list[int], full: bool) -> list[tuple[str, int, int]]:
    """(mode, DPUs, elements per DPU) of each run, once each, in build order (one build per mode and
    DPU count): run.sh's grid when `full`, else every mode at each of `dpus` at `elements` and
    serial on 1 DPU at each of `sizes`."""
    if full:
        chosen = {(m, d, n) for m in modes for d in RUN_SH_DPUS for n in RUN_SH_ELEMENTS}
    else:
        chosen = {(m, d, elements) for m in modes for d in dpus}
        chosen |= {("serial", 1, n) for n in sizes if "serial" in modes}
    return sorted(chosen, key=lambda run: (list(MODES).index(run[0]), run[1], run[2]))


def measure(app: Path, mode: str, dpus: int, elements: int) -> dict[str, float]:
    """Run PrIM's CPU-DPU app once: the bandwidth it prints per direction (GB/s); SystemExit naming
    the cause when the app fails or prints no bandwidth."""
    run = prim_apps.app_run(app, dpus, (*prim_apps.ONE_RUN, "-i", str(elements)), tasklets=TASKLETS,
                            variables=(f"TRANSFER={MODES[mode]}", f"BL={BL}"))
    printed = dict(BANDWIDTH.findall(run.stdout))
    wrong = [what for what, bad in ((f"exit {run.returncode}", run.returncode != 0),
                                    (f"no '{PASSED}'", PASSED not in run.stdout),
                                    ("no bandwidth of each direction", set(printed) != set(DIRECTIONS))) if bad]
    if wrong:
        text = (run.stdout + "\n" + run.stderr).strip().splitlines()
        raise SystemExit(f"PrIM's CPU-DPU, {mode} at {dpus} DPU(s), -i {elements}: {', '.join(wrong)}; its last "
                         f"words: {' | '.join(line.strip() for line in text[-3:])}")
    return {direction: float(value) for direction, value in printed.items()}


def rows_of(mode: str, dpus: int, elements: int, measured: dict[str, float]) -> list[dict]:
    """The table rows of one run: its bandwidth per direction next to PrIM's where one is published."""
    out = []
    for direction in DIRECTIONS:
        if mode == "broadcast" and direction == "DPU-CPU":
            continue  # the PUSH retrieve: the parallel rows show it
        nbytes, gbps = 8 * elements, measured[direction]
        published = PUBLISHED.get((mode, direction, dpus))
        compared = published is not None and nbytes >= COMPARED_FROM
        error = 100.0 * (gbps / published.gbps - 1) if compared else None
        out.append({"mode": mode, "direction": direction, "dpus": dpus, "bytes_per_dpu": nbytes, "gbps": gbps,
                    "published_gbps": published.gbps if published else None,
                    "published_bytes_per_dpu": published.nbytes if published else None,
                    "published_fact": published.fact if published else None,
                    "published_tag": published.tag if published else None,
                    "error_pct": error, "within": None if error is None else abs(error) <= TARGET})
    return out


def size_text(nbytes: int) -> str:
    """8 B, 2 KiB, 32 MiB."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def print_table(rows: list[dict], config: str, console: Console) -> None:
    """The rows, the published values with their tags, and the verdicts."""
    table = Table(title=f"PrIM's CPU-DPU microbenchmark through `cnmtune app run` (--sim-config {config}) "
                        "next to PrIM's published bandwidths")
    columns = ("mode", "direction", "DPUs", "bytes/DPU", "sim GB/s", "PrIM GB/s", "error %", f"within {TARGET:g} %")
    for column in columns:
        table.add_column(column, justify="left" if column in ("mode", "direction") else "right")
    for r in rows:
        published = "-" if r["published_gbps"] is None else \
            f"{r['published_gbps']:g} [{r['published_tag']}] at {size_text(r['published_bytes_per_dpu'])}"
        verdict = "-" if r["within"] is None else ("yes" if r["within"] else "NO")
        table.add_row(r["mode"], r["direction"], str(r["dpus"]), size_text(r["bytes_per_dpu"]), f"{r['gbps']:.3g}",
                      escape(published), "-" if r["error_pct"] is None else f"{r['error_pct']:+.0f}", verdict)
    console.print(table)
    for tag in sorted({r["published_tag"] for r in rows if r["published_tag"]}):
        console.print(f"[{tag}] {TAGS[tag]} (docs/transfer_facts.md)", highlight=False, markup=False)
    console.print(f"A published value is compared from {size_text(COMPARED_FROM)} per DPU on. GB/s = DPUs x bytes "
                  "per DPU / time, as PrIM's app.c prints it (for broadcast too). Broadcast's DPU-CPU step is the "
                  "parallel retrieve (not shown twice).", highlight=False)
    compared = [r for r in rows if r["within"] is not None]
    met = sum(r["within"] for r in compared)
    console.print(f"{met}/{len(compared)} compared rows within {TARGET:g} % of PrIM's published value "
                  f"({script_io.verdict(met == len(compared))})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    prim_apps.prim_option(parser)
    parser.add_argument("--dpus", default=",".join(map(str, DPUS)), help="DPU counts (default 1,4,16,64)")
    parser.add_argument("--modes", default=",".join(MODES), help="serial, parallel, broadcast (comma-separated)")
    parser.add_argument("--elements", type=int, default=ELEMENTS,
                        help=f"uint64 elements per DPU of the DPU-count runs (PrIM's -i; default {ELEMENTS}, "
                             f"{size_text(8 * ELEMENTS)})")
    parser.add_argument("--sizes", default=",".join(map(str, RUN_SH_ELEMENTS)),
                        help="elements per DPU of the serial 1-DPU runs (default run.sh's: 8 B ... 32 MiB)")
    parser.add_argument("--full", action="store_true", help="run.sh's whole grid instead (hours; see above)")
    parser.add_argument("--sim-config", default="calibrated", choices=list(NAMED_CONFIGS),
                        help="the simulator's constants (default calibrated)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    script_io.json_option(parser, "prim_cpu_dpu.json", "the report", flag="--out")
    args = parser.parse_args()
    app = prim_apps.check_prim(parser, args.prim, APP)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes: {args.modes!r}; choose among {', '.join(MODES)}")
    try:
        dpus = [int(d) for d in args.dpus.split(",") if d.strip()]
        sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    except ValueError as error:
        parser.error(f"--dpus and --sizes take comma-separated whole numbers ({error})")
    if not dpus or min(dpus) < 1 or max(dpus) > 64:
        parser.error(f"--dpus {args.dpus}: DPU counts from 1 to 64 (one rank, as PrIM's figure)")
    if min([args.elements, *sizes]) < 1:
        parser.error("--elements and --sizes: at least one element per DPU")
    console = Console(stderr=args.json)
    os.environ["CNMTUNE_SIM_CONFIG"] = args.sim_config  # the simulator processes `app run` starts read it
    chosen = runs(modes, dpus, args.elements, sizes, args.full)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="cnmtune-cpu-dpu-") as tmp, \
            Progress(console=console, transient=True) as progress:
        work = Path(tmp) / "CPU-DPU"
        shutil.copytree(app, work, ignore=shutil.ignore_patterns("bin"))  # its Makefile writes bin/ and .conf files
        task = progress.add_task("PrIM's CPU-DPU microbenchmark", total=len(chosen))
        for mode, count, elements in chosen:
            rows += rows_of(mode, count, elements, measure(work, mode, count, elements))
            progress.advance(task)
    report = {"sim_config": args.sim_config, "link_hash": DpuConfig.named(args.sim_config).link_hash,
              "target_pct": TARGET, "compared_from_bytes": COMPARED_FROM, "tags": TAGS, "rows": rows}
    script_io.write_json(args.out, report)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print_table(rows, args.sim_config, console)
        console.print(f"wrote {args.out}", highlight=False)
    return 0 if all(r["within"] is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
