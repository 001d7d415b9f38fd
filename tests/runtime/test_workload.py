"""Workload defines: defaults, choices, exclusive bare-define groups, presets."""

import pytest

from cnmtune.errors import KernelError


def test_a_type_flag_replaces_the_default(va):
    assert va.workload.resolve_defines({"FLOAT": None}) == {"BL": 10, "FLOAT": None}
    run = va.workload(64, 1, 16, {"DOUBLE": None})
    assert run.flag("element type") == "DOUBLE" and run.dtype.name == "float64"
    assert va.workload(64, 1, 16).dtype.name == "int32"


def test_two_flags_of_a_group_or_a_valued_flag_are_refused(va):
    with pytest.raises(KernelError, match=r"at most one element type \(UINT32, FLOAT given\)"):
        va.workload.resolve_defines({"FLOAT": None, "UINT32": None})
    with pytest.raises(KernelError, match="INT64 is a bare define"):
        va.workload.resolve_defines({"INT64": 1})


def test_presets_and_bad_sizes(va):
    assert va.workload.preset("small") == 4096
    with pytest.raises(KernelError, match="no size preset 'huge'"):
        va.workload.preset("huge")
    with pytest.raises(KernelError, match="problem size must be positive"):
        va.workload(0, 1, 16)


def test_wram_check_refuses_tasklets_whose_buffers_do_not_fit():
    from cnmtune.runtime.registry import find_kernel

    sel = find_kernel("sel").workload
    sel(4096, 1, 12, {"BL": 11})  # 12 x (1 KiB stack + 4 KiB) = 60 KiB fits beside 1 KiB of globals
    with pytest.raises(KernelError, match=r"13 tasklets with 4096 bytes of WRAM buffers each do not fit in WRAM; "
                                          r"at most 12 tasklets"):
        sel(4096, 1, 13, {"BL": 11})


def test_size_of_resolves_numbers_and_presets_and_names_the_presets_otherwise(va):
    assert va.workload.size_of(1000) == va.workload.size_of("1000") == 1000
    assert va.workload.size_of("small") == va.workload.preset("small")
    for bad in (0, -5, "huge", "-5"):
        with pytest.raises(KernelError, match=r"^size .*: the size must be a positive integer or a preset "
                                              r"name of va: small \(4,096\), default"):
            va.workload.size_of(bad)


def test_launches_per_run_are_declared_by_the_host_program():
    """The cost model's launches input: MLP launches GEMV's binary once per layer, the scans twice,
    PIM-ML once per iteration, NW once per block anti-diagonal, TRNS twice per round of strips,
    BFS once per level of its graph; the others once."""
    from cnmtune.runtime.registry import declared_launches, find_kernel

    assert declared_launches("gemv", "BL=10", 256, 4, 16) == 1
    assert declared_launches("mlp", "BL=10", 256, 4, 16) == 3
    assert declared_launches("scan-ssa", "BL=10;INT64", 4096, 4, 16) == 2
    assert declared_launches("lirq", "BL=10;INT32", 256, 4, 16) == 100  # the default 100 iterations
    assert declared_launches("nw", "BL=16;BL_IN=16", 64, 4, 8) == 2 * 64 // 16 - 1
    assert declared_launches("trns", "", 2, 4, 8) == 2  # one round: a strip per DPU
    bfs = find_kernel("bfs").workload(128, 2, 16)
    assert declared_launches("bfs", "", 128, 2, 16) == bfs.reference(bfs.inputs())["levels"].max() > 1
    with pytest.raises(KernelError, match="no kernel named or at 'nope'"):
        declared_launches("nope", "", 64, 1, 1)


def test_a_run_refuses_a_host_that_launches_other_than_it_declares(va_o2, monkeypatch):
    from cnmtune.runtime.execute import run_binary

    assert run_binary(va_o2, 1, 256).launches == 1
    monkeypatch.setattr(va_o2.variant.kernel.workload, "launch_count", lambda self: 2)
    with pytest.raises(KernelError, match=r"va: the host program launched the DPUs 1 time\(s\) but its workload "
                                          r"declares 2"):
        run_binary(va_o2, 1, 256)
