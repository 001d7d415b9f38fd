"""Features of real proxy ELFs built from a C kernel with three nested loops."""

from __future__ import annotations

import json

import pytest

from cnmtune.costmodel import Features, extract_features, load_elf
from proxy_build import HOST_BYTES, MRAM_BYTES, NR_TASKLETS, STACK_SIZE


@pytest.fixture(scope="module")
def o0(elf_o0, ecall_header) -> Features:
    return extract_features(elf_o0, ecall_header=ecall_header)


@pytest.fixture(scope="module")
def o2(elf_o2, ecall_header) -> Features:
    return extract_features(elf_o2, ecall_header=ecall_header)


@pytest.fixture(params=["o0", "o2"])
def features(request) -> Features:
    return request.getfixturevalue(request.param)


def test_histograms_add_up_to_the_iram_instruction_counts(features):
    f = features
    assert f.kernel_histogram and f.runtime_histogram and f.softlib_histogram
    assert sum(f.kernel_histogram.values()) == f.iram_kernel_instructions > 0
    assert sum(f.runtime_histogram.values()) == f.iram_runtime_instructions > 0
    assert sum(f.softlib_histogram.values()) == f.iram_softlib_instructions > 0
    assert sum(f.histogram.values()) == f.text_instructions == (
        f.iram_kernel_instructions + f.iram_runtime_instructions + f.iram_softlib_instructions)
    # What the DPU's IRAM is charged with: kernel + runtime, soft arithmetic excluded.
    assert f.iram_instructions == f.iram_kernel_instructions + f.iram_runtime_instructions
    assert f.iram_instructions < f.text_instructions
    assert sum(fn.instructions for fn in f.functions) == f.text_instructions
    assert f.text_instructions * 4 == len(load_elf(f.name).text)


def test_functions_are_attributed_to_their_regions(features):
    region = {fn.name: fn.region for fn in features.functions}
    assert features.regions_known
    assert region["main"] == region["helper"] == "kernel"
    assert region["_start"] == region["mem_alloc"] == region["mram_read"] \
        == region["barrier_wait"] == "runtime"
    assert region["__mulsi3"] == region["__divsi3"] == region["__mulsf3"] == "softlib"
    assert features.kernel_functions == 2


def test_runtime_calls_are_counted_by_name_from_the_kernel(features):
    f = features
    for routine in ("__mulsi3", "__divsi3", "__mulsf3", "__floatsisf", "mem_alloc",
                    "mram_read", "barrier_wait"):
        assert f.kernel_calls[routine] == 1, routine
        assert f.total_calls[routine] >= 1
    assert f.total_calls["__mulsi3"] > f.kernel_calls["__mulsi3"]  # softlib calls it too
    assert "helper" not in f.kernel_calls and f.internal_calls == 1
    assert f.indirect_calls == 0


def test_loop_depth_matches_the_c_and_weights_follow_it(features):
    f = features
    assert f.max_loop_depth == 3 and f.loops == 3
    assert f.loop_weight == 10.0
    # The multiply and divide sit in the innermost loop, the MRAM read in the outer one.
    assert f.weighted_kernel_calls["__mulsi3"] == 1000.0
    assert f.weighted_kernel_calls["__divsi3"] == 1000.0
    assert f.weighted_kernel_calls["mram_read"] == 10.0
    assert f.weighted_kernel_calls["__mulsf3"] == 1.0
    assert f.weighted_kernel_calls["barrier_wait"] == 1.0


def test_ecalls_are_named_and_only_in_the_runtime(features):
    f = features
    assert f.total_ecalls == {"MRAM_READ": 1, "BARRIER_WAIT": 1, "STOP": 1}
    assert "ecall" not in f.kernel_histogram and f.runtime_histogram["ecall"] == 3
    assert not hasattr(f, "kernel_ecalls") and not hasattr(f, "weighted_kernel_ecalls")


def test_weighted_histogram_exceeds_the_static_one(features):
    f = features
    assert sum(f.weighted_kernel_histogram.values()) > sum(f.kernel_histogram.values())
    for op in ("lw", "jalr", "add"):
        assert f.weighted_kernel_histogram[op] > f.kernel_histogram[op], op
    assert set(f.weighted_kernel_histogram) == set(f.kernel_histogram)


def test_loop_weight_is_configurable(elf_o0, ecall_header):
    f = extract_features(elf_o0, loop_weight=2.0, ecall_header=ecall_header)
    assert f.loop_weight == 2.0 and f.weighted_kernel_calls["__mulsi3"] == 8.0


def test_memory_footprints_and_configuration(features):
    f = features
    m = f.footprint
    assert m.wram_host_bytes == HOST_BYTES
    assert m.wram_stack_bytes == NR_TASKLETS * STACK_SIZE
    assert m.mram_static_bytes == MRAM_BYTES
    assert m.wram_data_bytes >= 3 * 8 * 4 + 4  # a, b, c and fout
    assert m.wram_static_bytes >= m.wram_data_bytes + m.wram_host_bytes + m.wram_stack_bytes
    assert m.wram_static_bytes == load_elf(f.name).symbol("__sys_heap_pointer_reset")
    assert (m.nr_tasklets, m.stack_size) == (NR_TASKLETS, STACK_SIZE)


def test_identity_fields(o0, elf_o0):
    assert (o0.machine, o0.toolchain, o0.schema_version) == ("riscv32", "proxy", "proxy-6")
    assert o0.name == str(elf_o0) and len(o0.elf_sha256) == 64


def test_to_dict_is_json_safe_and_round_trips(o0):
    data = json.loads(json.dumps(o0.to_dict()))
    assert Features.from_dict(data) == o0


def test_without_region_symbols_everything_is_kernel(elf_o0, tmp_path, ecall_header):
    data = elf_o0.read_bytes().replace(b"__cnm_text_kernel_start", b"__xxx_text_kernel_start")
    foreign = tmp_path / "foreign.elf"
    foreign.write_bytes(data)
    f = extract_features(foreign, ecall_header=ecall_header)
    assert not f.regions_known
    assert f.iram_kernel_instructions == f.iram_instructions == f.text_instructions
    assert f.iram_runtime_instructions == f.iram_softlib_instructions == 0
    assert {fn.region for fn in f.functions} == {"kernel"}
    assert f.kernel_calls["__mulsi3"] == f.total_calls["__mulsi3"]
    assert f.kernel_calls["helper"] == 1 and f.internal_calls == 0

