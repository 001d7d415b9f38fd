"""Validate the calibrated simulator: real UPMEM kernel and transfer times, and microbenchmark shapes.

1. The 62 rows of upmem_hw_prim_times.csv (VA, RED, BS, GEMV, 1..64 DPUs, 16 tasklets, O2) and
   the 30 rows of upmem_hw_validation_times.csv (MLP, SCAN-SSA), from --data (by default the
   copy shipped in cnmtune/data/calibration), are simulated from scratch with
   DpuConfig.calibrated() (full co-simulation, every DPU, results verified) and compared with
   the measured times. The kernel constants are fitted on the first file's rows only ("fitted"
   in the kernel table), the transfer constants on every transfer column of both.
   - Kernel: MAPE of kernel_ms per workload (target <= 15 % each; uPIMulator reaches 24.8 % on
     real kernel times).
   - Where the kernel error lives, per workload: the least-MAPE line (a fixed part and a cost per
     unit of the work per DPU: the size over the DPUs, MLP's n x n) through the real times and
     through the simulated ones; their fixed parts, the ratio of their slopes, and how far the real
     times stray from their own line. A fixed part off is a cost per run (launch, boot, final
     reduction); a slope off is a cost per element. Beside them, the launch cost the workload's
     rows ask for: the per-launch overhead at which its kernel MAPE would be least, the other
     constants as they are (exact: a launch overhead adds the same time to each launch).
   - Transfers: MAPE per direction, CPU->DPU, DPU->CPU and Inter-DPU (PrIM's timed steps: the
     CSVs' cpu_to_dpu_ms, dpu_to_cpu_ms and dpu_to_dpu_ms; Inter-DPU only where a workload has
     one, MLP and SCAN-SSA), over all rows (targets <= 30, 15 and 20 %: issue 41) and per
     workload, each next to the floor of that direction and workload, and next to what
     uPIMulator's bytes-per-DPU link model reaches on the same rows.

   The floor is how far the measured times stray from the best line in their bytes.
   Group the rows of one direction by (workload, DPU count): the rows of a group differ only in
   the problem size. For a group of at least 3 rows, with x = the bytes per DPU of the step's
   calls (as the simulated host program issues them) and y = the measured time, take the line
   y = a + b x of least MAPE over that group alone (exact: such a line passes through two of its
   rows, or is the constant of one). The floor of a workload is the MAPE of those lines over the
   rows of its groups; groups of fewer than 3 rows (the 1-DPU rows) are not in it. Two free
   constants per group and direction, fitted in sample: any model whose time at one workload and
   DPU count is a line in those bytes, whatever its constants, errs at least this much on those
   rows. The simulator's time is close to such a line (fixed costs per call, costs per byte,
   bent by its host-cache knee); what no line follows is the data's own spread: the host's
   cache and NUMA placement, one timed run per row (cnmtune/data/calibration/README.md). The
   simulator's MAPE on the floor's rows is printed with each direction's verdict.
2. The microbenchmarks (benchmarks/micro_sim.py): arithmetic throughput vs tasklets (must
   saturate at 11), MRAM DMA latency vs size (must be linear), STREAM bandwidth.

Writes validate_sim.json and PNG plots into --out (default benchmarks/results, which git ignores).
``--param NAME=VALUE`` (repeatable; `cnmtune sweep`'s design parameters, in their units, one value
each: ``launch_overhead_us=130``, ``dma_overhead=45``) validates that design point instead of
DpuConfig.calibrated() (the microbenchmarks too): what a constant would do to the errors against
real UPMEM, from a full simulation.

    python benchmarks/validate_sim.py [--skip-micro] [--param NAME=VALUE ...] [--data DIR] [--out DIR]

Exit status: 0 every target met and every shape check passed; 1 a target missed or a check
failed; 2 a usage error (such as --data without the CSVs).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import script_io
from rich.console import Console
from rich.progress import Progress

from cnmtune.display import Table
from cnmtune.errors import SweepError
from cnmtune.plugin.sweep import design
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_on_device
from cnmtune.runtime.sim import calibration
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import ProxyToolchain, Variant

HERE = Path(__file__).resolve().parent
KERNEL_TARGET = 15.0  # MAPE %, per workload
#: MAPE % over all rows per transfer direction (issue 41), in calibration.TRANSFER_COLUMNS order
TRANSFER_TARGETS = {"cpu_to_dpu_ms": 30.0, "dpu_to_cpu_ms": 15.0, "dpu_to_dpu_ms": 20.0}
DIRECTIONS = {"cpu_to_dpu_ms": "CPU->DPU", "dpu_to_cpu_ms": "DPU->CPU", "dpu_to_dpu_ms": "Inter-DPU"}
UPIMULATOR_MAPE = 24.8  # FACTS.md section 6.1, recomputed from the uPIMulator artifact
#: uPIMulator's host-link model (tools/upmem_reg_model/src/main.py, FACTS.md section 5.4): a
#: transfer's time = bytes per DPU / one fitted bandwidth per direction in GiB/s, nothing else.
UPIMULATOR_LINK_GIBPS = {"to": 0.2957, "from": 0.0627}
FLOOR_GROUP = 3  # rows of one (workload, DPU count) a line can miss at all


def simulate(rows, config, console, fitted: bool) -> list[dict]:
    """Run every row with `config`; one record per row with predicted and measured times, and the
    bytes per DPU each step's calls move to and from the DPUs."""
    toolchain, binaries, records = ProxyToolchain(), {}, []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("simulating the calibration rows", total=len(rows))
        for row in rows:
            name = calibration.KERNELS[row.benchmark]
            if name not in binaries:
                kernel = Kernel.load(HERE / "prim" / name)
                binaries[name] = toolchain.compile(Variant.of(kernel, "O2", calibration.TASKLETS))
            device = SimDevice(row.nr_dpus, config)
            result = run_on_device(binaries[name], device, row.size, params=calibration.row_params(row))
            record = {"benchmark": row.benchmark, "fitted": fitted, "dpus": row.nr_dpus, "size": row.size,
                      "kernel_ms": 1e3 * result.kernel_s, "kernel_ms_real": row.kernel_ms,
                      "launches": result.launches, "verified": result.verified, "ipc": result.ipc}
            simulated = (result.host_to_dpu_s, result.dpu_to_host_s, result.inter_dpu_s)
            for k, (column, measured) in enumerate(zip(calibration.TRANSFER_COLUMNS,
                                                       calibration.measured_transfer_ms(row))):
                calls = [t for t in device.transfers if calibration.step_of(t) == k]
                record |= {column: 1e3 * simulated[k], column + "_real": measured,
                           column + "_bytes_to": sum(t.nbytes for t in calls if t.to_dpu),
                           column + "_bytes_from": sum(t.nbytes for t in calls if not t.to_dpu)}
            records.append(record)
            progress.advance(task)
    return records


def summarise(records: list[dict]) -> dict:
    """MAPE per benchmark and overall for the kernel and each transfer direction, over the rows that
    measured it (None where a benchmark has none)."""
    out = {}
    for key in ("kernel_ms", *calibration.TRANSFER_COLUMNS):
        out[key] = {}
        for g in sorted({r["benchmark"] for r in records}) + ["all"]:
            pairs = [(r[key], r[key + "_real"]) for r in records
                     if g in ("all", r["benchmark"]) and r[key + "_real"] is not None]
            out[key][g] = calibration.mape(pairs) if pairs else None
    return out


def best_line(x: list[float], y: list[float]) -> tuple[float, float, list[float]]:
    """The line a + b x of least MAPE through the points (x, y), as (a, b, the points' absolute
    relative errors): the best among the lines through two points of distinct x and the constants
    of one point, which holds a least-MAPE line (a weighted least-absolute-deviations fit: a linear
    programme whose optimum lies at such a vertex)."""
    lines = [(y[i], 0.0) for i in range(len(y))]
    lines += [(y[i] - x[i] * (y[j] - y[i]) / (x[j] - x[i]), (y[j] - y[i]) / (x[j] - x[i]))
              for i in range(len(x)) for j in range(i + 1, len(x)) if x[j] != x[i]]
    errors = [[abs(a + b * xk - yk) / yk for xk, yk in zip(x, y)] for a, b in lines]
    k = min(range(len(lines)), key=lambda i: sum(errors[i]))
    return lines[k][0], lines[k][1], errors[k]


def floor(records: list[dict]) -> dict:
    """Per transfer direction and benchmark (and 'all'): the floor's MAPE (see the module docstring),
    its row count and the simulator's MAPE on the same rows; None where no group has 3 rows."""
    out = {}
    for column in calibration.TRANSFER_COLUMNS:
        groups: dict[tuple[str, int], list[dict]] = {}
        for r in records:
            if r[column + "_real"] is not None:
                groups.setdefault((r["benchmark"], r["dpus"]), []).append(r)
        floors: dict[str, list[float]] = {}
        simulated: dict[str, list[float]] = {}
        for (bench, _), chosen in groups.items():
            if len(chosen) < FLOOR_GROUP:
                continue
            x = [r[column + "_bytes_to"] + r[column + "_bytes_from"] for r in chosen]
            errors = best_line(x, [r[column + "_real"] for r in chosen])[2]
            for key in (bench, "all"):
                floors.setdefault(key, []).extend(errors)
                simulated.setdefault(key, []).extend(abs(r[column] / r[column + "_real"] - 1) for r in chosen)
        out[column] = {bench: {"floor": 100 * float(np.mean(floors[bench])), "rows": len(floors[bench]),
                               "simulated_on_rows": 100 * float(np.mean(simulated[bench]))} if bench in floors else None
                       for bench in sorted({r["benchmark"] for r in records}) + ["all"]}
    return out


def work_per_dpu(record: dict) -> float:
    """What one DPU's kernel work grows with in a row: the size per DPU (MLP: n x n per layer,
    cnmtune/data/calibration/README.md says what each size counts). BS's searches also lengthen
    with the log of the size, which shows in how far its real times stray from a line."""
    size = record["size"] ** 2 if record["benchmark"] == "MLP" else record["size"]
    return size / record["dpus"]


def best_launch_ms(records: list[dict], launch_ms: float) -> float:
    """The per-launch overhead (ms, >= 0) at which the records' kernel MAPE is least, their
    simulated times priced with `launch_ms` a launch. A row of n launches then takes
    kernel_ms + n (L - launch_ms), off its real time r by n / r |L - L_row|, L_row the overhead
    that row alone asks for: the MAPE is least at the median of the L_row weighted by n / r."""
    asks = sorted((launch_ms + (r["kernel_ms_real"] - r["kernel_ms"]) / r["launches"],
                   r["launches"] / r["kernel_ms_real"]) for r in records)
    half, total = sum(weight for _, weight in asks) / 2, 0.0
    for overhead, weight in asks:
        total += weight
        if total >= half:
            return max(overhead, 0.0)
    raise ValueError("best_launch_ms: no records")


def kernel_split(records: list[dict], launch_ms: float) -> dict[str, dict]:
    """Per workload, where the kernel-time error lives: the least-MAPE line (fixed + per unit of
    work_per_dpu) through the real times and through the simulated ones, its fixed parts, the
    ratio of its slopes, how far the real times stray from their own line (no model of a fixed
    cost and a cost per unit does better on them), and the launch overhead its rows ask for
    (`best_launch_ms`; the simulated times were priced with `launch_ms` a launch)."""
    out = {}
    for bench in sorted({r["benchmark"] for r in records}):
        chosen = [r for r in records if r["benchmark"] == bench]
        x = [work_per_dpu(r) for r in chosen]
        fixed_real, slope_real, errors = best_line(x, [r["kernel_ms_real"] for r in chosen])
        fixed_sim, slope_sim, _ = best_line(x, [r["kernel_ms"] for r in chosen])
        out[bench] = {"fixed_ms_real": fixed_real, "fixed_ms_sim": fixed_sim,
                      "slope_ratio": slope_sim / slope_real if slope_real else None,
                      "line_mape_real": 100 * float(np.mean(errors)),
                      "launch_ms_asked": best_launch_ms(chosen, launch_ms)}
    return out


def split_table(split: dict[str, dict], launch_ms: float) -> Table:
    """`kernel_split` as a table (`launch_ms`: the launch overhead the simulated times were priced with)."""
    table = Table(title="kernel time split: fixed ms and per-unit slope of the least-MAPE line in the work "
                        "per DPU, real vs simulated (line %: how far the real times stray from theirs); "
                        f"launch ms: the launch overhead each workload's rows ask for (now {launch_ms:.3f})")
    for column in ("workload", "fixed real", "fixed sim", "slope sim/real", "line %", "launch ms"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for bench, part in split.items():
        ratio = part["slope_ratio"]
        table.add_row(bench, f"{part['fixed_ms_real']:.3f}", f"{part['fixed_ms_sim']:.3f}",
                      "-" if ratio is None else f"{ratio:.3f}", f"{part['line_mape_real']:.1f}",
                      f"{part['launch_ms_asked']:.3f}")
    return table


def upimulator_link_mape(records: list[dict]) -> dict[str, float]:
    """MAPE of uPIMulator's host-link model on the same rows, per direction: the yardstick a
    bytes-only model reaches (fed the bytes per DPU of cnmtune's calls for each step)."""
    out = {}
    for column in calibration.TRANSFER_COLUMNS:
        pairs = [(1e3 * sum(r[f"{column}_bytes_{way}"] / (gibps * 2**30)
                            for way, gibps in UPIMULATOR_LINK_GIBPS.items()), r[column + "_real"])
                 for r in records if r[column + "_real"] is not None]
        out[column] = calibration.mape(pairs) if pairs else None
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def kernel_table(records: list[dict], summary: dict, config: DpuConfig) -> Table:
    """Kernel-time MAPE per workload."""
    table = Table(title=f"kernel time, simulator vs real UPMEM ({len(records)} rows, 16 tasklets, "
                        f"config {config.hash})")
    for column in ("workload", "fitted", "rows", "kernel MAPE %"):
        table.add_column(column, justify="left" if column in ("workload", "fitted") else "right")
    for bench, error in summary["kernel_ms"].items():
        chosen = [r for r in records if bench in ("all", r["benchmark"])]
        fitted = "" if bench == "all" else ("yes" if chosen[0]["fitted"] else "no")
        table.add_row(bench, fitted, str(len(chosen)), _cell(error))
    return table


def transfer_table(summary: dict, floors: dict) -> Table:
    """Transfer MAPE per direction and workload, each next to its floor."""
    table = Table(title="transfers, simulator vs real UPMEM: MAPE % per direction, each next to its floor (what "
                        "the measured times vary by around a line in their bytes, per workload and DPU count)")
    table.add_column("workload")
    for name in DIRECTIONS.values():
        table.add_column(name, justify="right")
        table.add_column("floor", justify="right")
    for bench in summary["kernel_ms"]:
        cells = []
        for column in calibration.TRANSFER_COLUMNS:
            below = floors[column][bench]
            cells += [_cell(summary[column][bench]), _cell(None if below is None else below["floor"])]
        table.add_row(bench, *cells)
    return table


def plot(records: list[dict], summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("kernel_ms", *calibration.TRANSFER_COLUMNS)
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 4.8))
    for ax, key, title in zip(axes, keys, ("DPU kernel time", *(f"{d} transfers" for d in DIRECTIONS.values()))):
        measured = [r for r in records if r[key + "_real"] is not None]
        for bench in sorted({r["benchmark"] for r in measured}):
            chosen = [r for r in measured if r["benchmark"] == bench]
            ax.scatter([r[key + "_real"] for r in chosen], [r[key] for r in chosen], s=18,
                       label=f"{bench} ({summary[key][bench]:.1f} %)")
        low = min(min(r[key], r[key + "_real"]) for r in measured)
        high = max(max(r[key], r[key + "_real"]) for r in measured)
        ax.plot([low, high], [low, high], color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("real UPMEM (ms)")
        ax.set_ylabel("simulated (ms)")
        ax.set_title(f"{title}: MAPE {summary[key]['all']:.1f} %")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def design_config(items: list[str]) -> tuple[DpuConfig, dict[str, float]]:
    """DpuConfig.calibrated() with the design parameters ``items`` (NAME=VALUE, `cnmtune sweep`'s
    names and units, one value each) set, and those values; SweepError if one is not a parameter
    or has several values."""
    grid: dict[str, tuple[float, ...]] = {}
    for item in items:
        name, values = design.parse_param(item)
        if len(values) != 1:
            raise SweepError(f"--param {name}: give one value (validate_sim checks one design point)")
        if name in grid:
            raise SweepError(f"--param {name}: given twice")
        grid[name] = values
    point = design.design_points(DpuConfig.calibrated(), grid)[0]
    return point.config, dict(point.values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    script_io.data_option(parser)
    script_io.out_option(parser, "validate_sim.json and the PNGs")
    parser.add_argument("--skip-micro", action="store_true", help="only the real-hardware rows")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="validate this design point: a `cnmtune sweep` parameter at one value (e.g. "
                             "launch_overhead_us=130), the other constants calibrated; repeatable")
    args = parser.parse_args()
    fitted_csv, held_out_csv = script_io.data_files(parser, args.data, calibration.FITTED_CSV,
                                                    calibration.VALIDATION_CSV)
    try:
        config, changed = design_config(args.param)
    except SweepError as exc:
        parser.error(str(exc))
    console = Console()
    args.out.mkdir(parents=True, exist_ok=True)
    if changed:
        console.print("design point: " + ", ".join(f"{k}={v:g}" for k, v in changed.items())
                      + " (the other constants calibrated)")
    records = (simulate(calibration.load_rows(fitted_csv), config, console, fitted=True)
               + simulate(calibration.load_rows(held_out_csv), config, console, fitted=False))
    summary, floors, link = summarise(records), floor(records), upimulator_link_mape(records)
    launch_ms = 1e3 * config.launch_overhead_s
    split = kernel_split(records, launch_ms)
    console.print(kernel_table(records, summary, config))
    console.print(split_table(split, launch_ms))
    console.print(transfer_table(summary, floors))
    worst = max((v, b) for b, v in summary["kernel_ms"].items() if b != "all")
    met = {"kernel": worst[0] <= KERNEL_TARGET}
    console.print(f"worst workload kernel-time MAPE {worst[0]:.1f} % ({worst[1]}; target <= {KERNEL_TARGET:g} % "
                  f"each: {script_io.verdict(met['kernel'])}; uPIMulator {UPIMULATOR_MAPE} %)")
    for column, target in TRANSFER_TARGETS.items():
        error, below = summary[column]["all"], floors[column]["all"]
        if error is None:
            continue
        met[DIRECTIONS[column]] = error <= target
        against = [f"uPIMulator's link model {link[column]:.1f} %"]
        if below:
            against.insert(0, f"floor {below['floor']:.1f} % on its {below['rows']} rows, where the simulator "
                              f"reaches {below['simulated_on_rows']:.1f} %")
        console.print(f"{DIRECTIONS[column]} transfer MAPE {error:.1f} % over all rows (target <= {target:g} %: "
                      f"{script_io.verdict(met[DIRECTIONS[column]])}; {'; '.join(against)})")
    plot(records, summary, args.out / "validate_sim_calibration.png")
    report = {"config": config.hash, "design": changed, "data": str(args.data), "summary": summary,
              "kernel_split": split, "floor": floors,
              "targets_met": met, "upimulator_link_mape": link, "rows": records}
    if not args.skip_micro:
        import micro_sim

        report["micro"] = micro_sim.run_all(console, config=config, outdir=args.out)
        met["micro shape checks"] = not micro_sim.failed_checks(report["micro"], console)
    script_io.write_json(args.out / "validate_sim.json", report)
    console.print(f"wrote {args.out / 'validate_sim.json'} and plots in {args.out}")
    missed = [name for name, ok in met.items() if not ok]
    if missed:
        console.print(f"[red]missed: {', '.join(missed)}[/] (exit status 1)")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
