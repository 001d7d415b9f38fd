"""PrIM's own applications, unmodified, pass their own checks on the simulator: code cnmtune did not
write. BFS hands 0-based MRAM heap offsets to mram_read (the DMA engine's address decoding,
cnmtune.dpu.memory_map.MRAM_OFFSET_MASK); SCAN-SSA's fully unrolled add() over 128 int64 fits the
default 1 KiB stack at its Makefile's BL=10 (the code generator's bottom-up scheduling,
cnmtune.passes.target.CODEGEN_OPTIONS). benchmarks/prim_apps.py runs all sixteen."""

from __future__ import annotations

import pytest

ONE_RUN = ("-w", "0", "-e", "1")


def _passed(record: dict) -> None:
    assert "Outputs are equal" in record["stdout"], record["stdout"]
    assert record["kernel_s"] > 0 and all(s["launches"] > 0 for s in record["sets"])


@pytest.mark.parametrize("dpus", [1, 4])
@pytest.mark.parametrize("name", ["VA", "SEL", "SCAN-SSA"])
def test_prim_app_passes_its_own_check(prim_app, run_app, name, dpus):
    record = run_app(prim_app(name), "--dpus", str(dpus), args=(*ONE_RUN, "-i", "16384"))
    assert f"Allocated {dpus} DPU(s)" in record["stdout"]
    _passed(record)


@pytest.mark.parametrize("dpus", [1, 4])
def test_prim_bfs_reads_mram_at_heap_offsets(prim_app, run_app, tmp_path, dpus):
    """BFS's DPU code reads its arrays at 0-based MRAM offsets; PrIM verified it on UPMEM hardware."""
    nodes = 256  # a ring with chords, in BFS's format: "nodes nodes edges", then "src dst" pairs
    edges = sorted({(a, b) for i in range(nodes) for j in ((i + 1) % nodes, (i * 7 + 3) % nodes) if j != i
                    for a, b in ((i, j), (j, i))})
    graph = tmp_path / "graph.txt"
    graph.write_text(f"{nodes} {nodes} {len(edges)}\n" + "".join(f"{a} {b}\n" for a, b in edges))
    record = run_app(prim_app("BFS"), "--dpus", str(dpus), args=("-f", str(graph)))
    assert "Mismatch" not in record["stdout"] and "Verifying the result" in record["stdout"]
    assert record["kernel_s"] > 0
