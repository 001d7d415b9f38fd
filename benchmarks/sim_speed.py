"""Simulator speed: simulated instructions per second on one core, va at 16 tasklets.

Runs va end to end on one simulated DPU (functional interpreter co-simulated with the timing
model, verification included) and reports simulated rv32i instructions and DPU issue slots per
wall-clock second, segments per second, and how the time splits between the jitted interpreter
and the Python side (services, timing events), which is what limits the rate. Target (issue 3):
>= 10 million simulated instructions per second.

    python benchmarks/sim_speed.py [--size 4194304] [--bl 10] [--json out/sim_speed.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim import dpu as dpu_module
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant
from cnmtune.atomic import atomic_write

VA = Path(__file__).resolve().parent / "prim" / "va"

TARGET = 15e6  # simulated rv32i instructions per second (issue 15: the DPU-slot charge must not cost more)


def _timed_interpreter():
    """Wrap the jitted entry the simulator calls per segment (dpu.run_segment: run_tasklet plus
    the services that need no Python) to measure the time spent inside it and count the calls."""
    spent = {"seconds": 0.0, "calls": 0}
    original = dpu_module.run_segment

    def run_segment(*args):
        start = time.perf_counter()
        try:
            return original(*args)
        finally:
            spent["seconds"] += time.perf_counter() - start
            spent["calls"] += 1
    dpu_module.run_segment = run_segment
    return spent, lambda: setattr(dpu_module, "run_segment", original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4_194_304, help="va elements")
    parser.add_argument("--tasklets", type=int, default=16)
    parser.add_argument("--bl", type=int, default=10, help="log2 of the DMA block in bytes")
    parser.add_argument("--pipeline", default="O2")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cnmtune-simspeed-") as tmp:
        binary = ProxyToolchain(BuildCache(Path(tmp))).compile(
            Variant.of(Kernel.load(VA), args.pipeline, args.tasklets, {"BL": args.bl}))
        run_binary(binary, 1, 4096)  # warm-up: numba's JIT cache, the program decode
        spent, restore = _timed_interpreter()
        start = time.perf_counter()
        result = run_binary(binary, 1, args.size)
        wall = time.perf_counter() - start
        restore()

    rate = result.instructions / wall
    record = {
        "kernel": "va", "size": args.size, "tasklets": args.tasklets, "bl": args.bl, "pipeline": args.pipeline,
        "wall_s": round(wall, 3), "proxy_instructions": result.instructions, "dpu_slots": result.slots,
        "instructions_per_s": round(rate), "slots_per_s": round(result.slots / wall),
        "interpreter_calls": spent["calls"], "interpreter_s": round(spent["seconds"], 3),
        "interpreter_share": round(spent["seconds"] / wall, 3),
        "python_us_per_call": round(1e6 * (wall - spent["seconds"]) / max(spent["calls"], 1), 2),
        "target_instructions_per_s": 10_000_000,
    }
    table = Table(title=f"simulator speed: va, {args.tasklets} tasklets, BL={args.bl}, {args.size:,} elements")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("wall time (s)", f"{wall:.2f}")
    table.add_row("simulated rv32i instructions / s", f"{rate / 1e6:.1f} M")
    table.add_row("simulated DPU issue slots / s", f"{result.slots / wall / 1e6:.1f} M")
    table.add_row("jitted segment calls (run_segment)", f"{spent['calls']:,}")
    table.add_row("time inside the jitted interpreter", f"{100 * record['interpreter_share']:.0f} %")
    table.add_row("Python per interpreter call (services, timing)", f"{record['python_us_per_call']:.1f} µs")
    table.add_row("target", f">= {TARGET / 1e6:g} M instr/s " + ("[green]met[/]" if rate >= TARGET else "[red]missed[/]"))
    Console().print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.json, (json.dumps(record, indent=2) + "\n").encode())


if __name__ == "__main__":
    main()
