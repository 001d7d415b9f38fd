"""Simulator speed: simulated instructions and segments per second on one core, jitted and reference.

Runs kernels end to end on the embedded simulator (verification included), each launch once as
the simulator runs it (one jitted call per DPU and launch, runtime/sim/cosim.py) and once on the
reference path (DpuTimeline driving the interpreter from Python per segment), and reports
simulated rv32i instructions, DPU issue slots and segments per wall-clock second. The two must
give the same cycles; the run fails if they do not.

- va at 16 tasklets on one DPU streams long segments: it measures the interpreter. Target
  (issues 3 and 15): >= 15 M simulated instructions per second.
- nw on 4 DPUs has many short segments between DMAs and barriers (about 30 instructions each),
  the kind of kernel whose simulation time the per-segment cost sets.

    python benchmarks/sim_speed.py [--va-size 4194304] [--nw-size 512] [--json benchmarks/results/sim_speed.json]

Exit status: 0 the va target met; 1 missed, or the two paths disagree on cycles.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import script_io
from rich.console import Console

from cnmtune.display import Table
from cnmtune.runtime import Kernel
from cnmtune.runtime.execute import run_on_device
from cnmtune.runtime.sim.device import SimDevice
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant

PRIM = Path(__file__).resolve().parent / "prim"
TARGET = 15e6  # simulated rv32i instructions per second on va (issue 15)


def _measure(binary, dpus: int, size: int, reference: bool) -> dict:
    device = SimDevice(dpus, reference=reference)
    start = time.perf_counter()
    result = run_on_device(binary, device, size)
    wall = time.perf_counter() - start
    segments = sum(len(trace) for record in device.launches for trace in record.traces)
    return {"wall_s": round(wall, 3), "cycles": result.cycles, "instructions": result.instructions,
            "segments": segments, "instructions_per_s": round(result.instructions / wall),
            "slots_per_s": round(result.slots / wall), "segments_per_s": round(segments / wall)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--va-size", type=int, default=4_194_304, help="va elements (one DPU)")
    parser.add_argument("--nw-size", type=int, default=512, help="nw sequence length (4 DPUs)")
    script_io.json_option(parser, "sim_speed.json")
    args = parser.parse_args()

    cases = [("va", "O2", 16, {"BL": 10}, 1, args.va_size), ("nw", "O2", None, None, 4, args.nw_size)]
    records = []
    with tempfile.TemporaryDirectory(prefix="cnmtune-simspeed-") as tmp:
        toolchain = ProxyToolchain(BuildCache(Path(tmp)))
        for name, pipeline, tasklets, defines, dpus, size in cases:
            kernel = Kernel.load(PRIM / name)
            binary = toolchain.compile(Variant.of(kernel, pipeline, tasklets, defines))
            small = kernel.workload.preset("small")
            for reference in (False, True):  # warm-up: numba's JIT cache, the program decode
                run_on_device(binary, SimDevice(1, reference=reference), small)
            jitted, reference = (_measure(binary, dpus, size, r) for r in (False, True))
            if jitted["cycles"] != reference["cycles"]:
                raise SystemExit(f"{name}: the jitted launch gives {jitted['cycles']} cycles, "
                                 f"the reference path {reference['cycles']}")
            records.append({"kernel": name, "pipeline": pipeline, "tasklets": binary.variant.nr_tasklets,
                             "dpus": dpus, "size": size, "jitted": jitted, "reference": reference,
                             "speedup": round(reference["wall_s"] / jitted["wall_s"], 2)})

    table = Table(title="simulator speed on one core: the jitted launch and the reference path",
                  caption="; ".join(f"{r['kernel']}: {r['dpus']} DPUs x {r['tasklets']} tasklets, size {r['size']:,}, "
                                    f"{r['jitted']['instructions'] / max(r['jitted']['segments'], 1):.0f} instructions "
                                    "per segment" for r in records))
    for column in ("kernel", "path", "wall s", "M instr/s", "k segments/s", "speedup"):
        table.add_column(column, justify="left" if column in ("kernel", "path") else "right")
    for record in records:
        for path in ("jitted", "reference"):
            measured, first = record[path], path == "jitted"
            table.add_row(record["kernel"] if first else "", path, f"{measured['wall_s']:.2f}",
                          f"{measured['instructions_per_s'] / 1e6:.1f}", f"{measured['segments_per_s'] / 1e3:.0f}",
                          f"{record['speedup']:.1f}x" if first else "")
    console = Console()
    console.print(table)
    va_rate = records[0]["jitted"]["instructions_per_s"]
    console.print(f"va: {va_rate / 1e6:.1f} M simulated instructions / s, target >= {TARGET / 1e6:g} M: "
                  + script_io.verdict(va_rate >= TARGET))
    console.print(f"wrote {script_io.write_json(args.json, {'cases': records, 'target_instructions_per_s': TARGET})}")
    return 0 if va_rate >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
