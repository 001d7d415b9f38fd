"""`cnmtune app run` never runs a program built for other parameters (AppProject.build's stamp), and
PrIM's hosts built with ENERGY=1 (dpu_probe.h) run to their own check.

PrIM's applications are read from ../shared/prim-benchmarks beside the repository (other people's
code, test input only) and copied to tmp_path before building; those tests skip without it.
"""

from __future__ import annotations

from cnmtune.plugin.app import AppProject
from cnmtune.wording import counted

# examples/va with a Makefile whose rules name no parameter: make alone never rebuilds for another NR_DPUS
BLIND_MAKEFILE = """\
NR_DPUS ?= 1
NR_TASKLETS ?= 16
BL ?= 10

all: bin/host_code bin/dpu_code

bin/host_code: $(wildcard host/*.c)
\tmkdir -p bin
\t$(CC) -o $@ $^ -std=c11 -O2 -Isupport -I../common $$(dpu-pkg-config --cflags --libs dpu) \\
\t\t-DNR_DPUS=$(NR_DPUS) -DNR_TASKLETS=$(NR_TASKLETS) -DBL=$(BL)

bin/dpu_code: $(wildcard dpu/*.c)
\tmkdir -p bin
\tdpu-upmem-dpurte-clang -O2 -Isupport -I../common -DNR_TASKLETS=$(NR_TASKLETS) -DBL=$(BL) -o $@ $^
"""


def test_a_build_for_other_parameters_is_never_run(example, run_app):
    root = example("va")
    (root / "Makefile").write_text(BLIND_MAKEFILE)
    for dpus in (4, 1):
        record = run_app(root, "--dpus", str(dpus), args=("-i", "4099"))
        assert [s["nr_dpus"] for s in record["sets"]] == [dpus]
        assert f"cnmtune: {counted(dpus, 'DPU')}" in record["stderr"] and "[OK] results match" in record["stdout"]
    # the same parameters again: make's own incremental build, nothing remade
    assert "Nothing to be done" in AppProject(root).build({"NR_DPUS": "1"})


def test_prim_va_with_energy_probes_runs_to_its_check(prim_app, run_app):
    """VA, then VA with ENERGY=1 (a variable its .conf file name leaves out, so its Makefile alone keeps the first
    build): the second run is the ENERGY=1 build, and it passes its own check."""
    root = prim_app("VA")
    assert "DPU Energy" not in run_app(root, "--dpus", "2", args=("-i", "1024"))["stdout"]
    record = run_app(root, "--dpus", "2", "--var", "ENERGY=1", args=("-i", "1024"))
    assert "Allocated 2 DPU(s)" in record["stdout"]
    assert "DPU Energy (J): 0.000000" in record["stdout"] and "Outputs are equal" in record["stdout"]
    assert record["stderr"].count("cnmtune's simulator measures no energy") == 1


def test_prim_nw_runs_the_dpu_count_asked_for(prim_app, run_app):
    """NW's `BL ?= 1024 ` (a trailing space) splits its .conf file name, so its Makefile keeps the programs of a
    DPU count built before: `--dpus 1` after `--dpus 4` ran the 4-DPU build."""
    root = prim_app("NW")
    for dpus in (4, 1):
        record = run_app(root, "--dpus", str(dpus))
        assert f"Allocated {dpus} DPU(s)" in record["stdout"] and "Outputs are equal" in record["stdout"]
