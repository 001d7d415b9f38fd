"""Does cnmtune's in-process link still write ld.lld's bytes? Every kernel, a few builds each, both ways.

The proxy toolchain links in-process (cnmtune/runtime/toolchain/linker.py) where it supports the
inputs and trusts the result to be what `zig ld.lld` writes; tests/runtime/test_linker.py checks
eight kernels. Run this after changing zig, llvmlite, the DPU runtime or dpu.ld: per kernel, the
builds (pipelines x tasklet counts) whose ELFs are identical, those the linker declines (ld.lld
links them; the reason is listed) and those that differ (the first differing byte).

    python benchmarks/link_equivalence.py [--kernels prim,pim-ml,benchmarks/unseen/stencil,...]
        [--pipelines O0,O2,O3,unroll-count=4;...] [--tasklets 1,4,16] [--json PATH]

Exit status: 0 no build differs; 1 one does.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import script_io
from rich.console import Console
from rich.progress import track

from cnmtune.display import Table
from cnmtune.errors import CnmtuneError
from cnmtune.passes import random_pipeline
from cnmtune.runtime.registry import expand_kernels, find_kernel
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant, linker, zig

UNSEEN = Path(__file__).resolve().parent / "unseen"
PIPELINES = ("O0", "O2", "O3,unroll-count=4", random_pipeline(20, seed=7).text)


def compare(toolchain: ProxyToolchain, variant: Variant, scratch: Path) -> str:
    """'same', 'declined: <why>', 'differs at <offset>' or 'not built: <why>' for one build."""
    try:
        objects = toolchain.objects(variant)
        toolchain.link_with_lld(objects, scratch / "lld.elf", variant.nr_tasklets, variant.stack_size, variant.label)
    except CnmtuneError as exc:
        return f"not built: {str(exc).splitlines()[0]}"
    try:
        image = linker.link([p.read_bytes() for p in objects], toolchain.runtime_objects(),
                            zig.compiler_rt_archive(), variant.nr_tasklets, variant.stack_size)
    except linker.Unsupported as exc:
        return f"declined: {exc}"
    expected = (scratch / "lld.elf").read_bytes()
    if image == expected:
        return "same"
    first = next((i for i, (a, b) in enumerate(zip(image, expected)) if a != b), min(len(image), len(expected)))
    return f"differs at byte {first:#x} ({len(image)} vs {len(expected)} bytes)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    unseen = sorted(str(d) for d in UNSEEN.iterdir() if (d / "workload.py").is_file())
    parser.add_argument("--kernels", default=",".join(["prim", "pim-ml", *unseen]),
                        help="kernels, suites or kernel directories (default: the suites and benchmarks/unseen)")
    parser.add_argument("--pipelines", default=";".join(PIPELINES), help="pipelines, ';'-separated")
    parser.add_argument("--tasklets", default="1,4,16", help="tasklet counts")
    script_io.json_option(parser, "link_equivalence.json")
    args = parser.parse_args()
    kernels = [find_kernel(name) for name in expand_kernels([k for k in args.kernels.split(",") if k])]
    builds = [(kernel, pipeline, int(t)) for kernel in kernels for pipeline in args.pipelines.split(";") if pipeline
              for t in args.tasklets.split(",") if t]
    results: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="cnmtune-links-") as tmp:
        toolchain = ProxyToolchain(BuildCache(Path(tmp) / "cache"))
        for kernel, pipeline, tasklets in track(builds, description="linking both ways", transient=True):
            variant = Variant.of(kernel, pipeline, tasklets)
            results.setdefault(kernel.name, {})[variant.label] = compare(toolchain, variant, Path(tmp))
    table = Table(title="in-process link against ld.lld")
    for column in ("kernel", "builds", "same", "declined", "different", "first reason"):
        table.add_column(column, justify="left" if column in ("kernel", "first reason") else "right")
    counts = {"same": 0, "declined": 0, "differs": 0}
    for name, found in results.items():
        kinds = {kind: [o for o in found.values() if o.startswith(kind)] for kind in counts}
        for kind in counts:
            counts[kind] += len(kinds[kind])
        reason = next(iter(kinds["differs"] + kinds["declined"] + [o for o in found.values() if o.startswith("not")]),
                      "")
        table.add_row(name, str(len(found)), str(len(kinds["same"])), str(len(kinds["declined"])),
                      str(len(kinds["differs"])), reason)
    console = Console()
    console.print(table)
    console.print(f"{counts['same']} identical, {counts['declined']} linked by ld.lld instead, {counts['differs']} "
                  f"different: " + script_io.verdict(counts["differs"] == 0))
    console.print(f"wrote {script_io.write_json(args.json, {'builds': results, 'counts': counts})}")
    return 0 if counts["differs"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
