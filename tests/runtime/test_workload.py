"""Workload defines: defaults, choices, exclusive bare-define groups, presets."""

import sys

import numpy as np
import pytest

from cnmtune.errors import KernelError, VerificationError


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


def test_a_wrong_output_is_named_with_plain_numbers(va):
    run = va.workload(4, 1, 1)
    want = {"y": np.array([1, 2, 3, 4], dtype=np.int32)}
    with pytest.raises(VerificationError) as exc:  # numpy's repr would say np.int32(7)
        run.verify({"y": np.array([1, 2, 7, 4], dtype=np.int32)}, want)
    assert str(exc.value) == "va: 1 of 4 elements of 'y' differ; first at index 2: got 7, expected 3"


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
    from cnmtune.runtime.registry import declared_run, find_kernel

    def declared_launches(*run):
        return declared_run(*run).launches

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


def test_the_processed_size_is_what_the_host_hands_the_dpus():
    """The cost model's size input: the nominal size after the host's padding. TS evaluates
    DPUs x (slice - m) start positions of a series padded to DPUs x tasklets x m (none with one
    tasklet when the series fits in DPUs x m: declared 1); the scans, SEL and UNI process whole
    rounds of tasklet blocks per DPU; BS answers a query count rounded to DPUs x tasklets; the
    rest process the nominal size."""
    from cnmtune.runtime.registry import declared_run, find_kernel

    ts = find_kernel("ts").workload(512, 64, 2)
    assert ts.processed_size() == len(ts._evaluated()) == 64 * 2 * 256 - 64 * 256
    assert declared_run("ts", "BL=8", 512, 4, 1).processed_size == 1  # no position evaluated
    assert declared_run("ts", "BL=8", 65_536, 64, 4).processed_size == 65_536 - 64 * 256
    scan = find_kernel("scan-ssa").workload(4096, 64, 16)
    split_padded = vars(sys.modules[type(scan).__mro__[1].__module__])["split_padded"]  # common/scan_host.py
    assert scan.processed_size() == sum(len(part) for part in split_padded(scan, scan.inputs()["A"])[1]) \
        == 64 * 16 * 128  # a round of 16 blocks of 128 INT64 per DPU
    for name in ("sel", "uni"):
        w = find_kernel(name).workload(4096, 64, 16, {"BL": 8})
        assert w.processed_size() == 64 * 16 * 32 > w.size
    assert declared_run("bs", "BL=8", 4096, 64, 16).processed_size == 8 * 64 * 16  # 512 queries -> 1024
    assert declared_run("va", "BL=10;INT32", 4096, 64, 16).processed_size == 4096


def test_a_run_refuses_a_host_that_launches_other_than_it_declares(va_o2, monkeypatch):
    from cnmtune.runtime.execute import run_binary

    assert run_binary(va_o2, 1, 256).launches == 1
    monkeypatch.setattr(va_o2.variant.kernel.workload, "launch_count", lambda self: 2)
    with pytest.raises(KernelError, match=r"va: the host program launched the DPUs 1 time\(s\) but its workload "
                                          r"declares 2"):
        run_binary(va_o2, 1, 256)
