"""The feature schema, its hash, and projecting features onto it."""

from __future__ import annotations

import dataclasses
import hashlib
import re

import numpy as np
import pytest

from cnmtune.costmodel import FeatureSchema, default_schema, extract_features
from cnmtune.costmodel.analysis.rv32_isa import RV32I_MNEMONICS
from cnmtune.costmodel.analysis.schema import RUNTIME_ROUTINES, SCALARS
from cnmtune.dpu.memory_map import RUNTIME_DIR
from cnmtune.errors import SchemaMismatch

# A global function definition starting at the beginning of a line of a runtime C source
# (`static` helpers excluded): optional __CNM_SYS_TEXT(name) and attributes, a return type,
# the name, a parameter list (possibly over several lines), then the body's brace.
_DEFINITION = re.compile(
    r"^(?!static\b)(?:__CNM_SYS_TEXT\(\w+\)\s+)?(?:__attribute__\(\(\w+\)\)\s+)*"
    r"[A-Za-z_][\w \t*]*?\b(\w+)\s*\([^;{]*\)\s*\{", re.MULTILINE)


@pytest.fixture(scope="module")
def schema() -> FeatureSchema:
    return default_schema()


@pytest.fixture(scope="module")
def features(elf_o0, ecall_header):
    return extract_features(elf_o0, ecall_header=ecall_header)


def test_default_schema_layout(schema):
    names = schema.names
    assert len(set(names)) == len(names) == len(schema)
    vocabulary = len(RV32I_MNEMONICS) + 1
    routines = len(RUNTIME_ROUTINES) + 1
    assert len(schema) == 2 * vocabulary + 2 * routines + len(SCALARS)
    for name in ("op:add", "op:other", "wop:lw", "call:__mulsi3", "call:other",
                 "wcall:__divsi3", "call:mram_read", "wcall:barrier_wait", "call:me",
                 "iram_instructions", "text_instructions", "wram_static_bytes",
                 "mram_static_bytes", "nr_tasklets"):
        assert name in names
    # Kernels hold no ecall: services are runtime functions, counted in call:/wcall:.
    assert not [n for n in names if n.startswith(("ecall:", "wecall:"))]
    assert names[:vocabulary] == tuple(f"op:{m}" for m in (*RV32I_MNEMONICS, "other"))
    assert schema.version == "proxy-6" and schema.loop_weight == 10.0
    assert default_schema(loop_weight=4.0).loop_weight == 4.0


def test_runtime_routines_list_every_global_function_of_the_dpu_runtime():
    defined = set()
    for source in sorted(RUNTIME_DIR.glob("*.c")):
        defined.update(_DEFINITION.findall(source.read_text()))
    # What the regular expression must find (one per runtime file, as a guard on it).
    assert {"me", "halt", "mram_read", "mram_write_unaligned", "mem_alloc", "fsb_free",
            "check_stack", "vprintf", "strtoul", "__cnm_assert_fail", "strstr"} <= defined
    assert defined <= set(RUNTIME_ROUTINES), sorted(defined - set(RUNTIME_ROUTINES))
    assert len(set(RUNTIME_ROUTINES)) == len(RUNTIME_ROUTINES)


def test_hash_is_stable_and_follows_every_part(schema):
    assert schema.hash == default_schema().hash
    assert len(schema.hash) == 16 and int(schema.hash, 16) >= 0
    # The definition: the first 16 hex digits of sha256 over version, loop weight, names.
    text = "v1\n10.0\nop:add\nop:other"
    assert FeatureSchema(("op:add", "op:other"), "v1").hash \
        == hashlib.sha256(text.encode()).hexdigest()[:16] == "0d330b7759f8ba1b"
    changed = [FeatureSchema(schema.names[:-1] + ("other_name",), schema.version),
               FeatureSchema(schema.names[1:2] + schema.names[:1] + schema.names[2:],
                             schema.version),
               FeatureSchema(schema.names, "proxy-99"),
               FeatureSchema(schema.names, schema.version, loop_weight=4.0)]
    assert len({schema.hash, *(s.hash for s in changed)}) == 5


def test_schema_round_trips_through_a_dict(schema):
    assert FeatureSchema.from_dict(schema.to_dict()) == schema
    assert schema.to_dict()["hash"] == schema.hash


def test_a_schema_must_not_drop_counts_or_repeat_names():
    with pytest.raises(ValueError, match="op:other"):
        FeatureSchema(("op:add", "op:sub"))
    with pytest.raises(ValueError, match="duplicate"):
        FeatureSchema(("op:add", "op:add", "op:other"))


def test_vector_follows_the_schema(schema, features):
    v = features.vector(schema)
    assert v.dtype == np.float32 and v.shape == (len(schema),)
    at = {n: v[k] for k, n in enumerate(schema.names)}
    assert at["op:lw"] == features.kernel_histogram["lw"]
    assert at["wcall:__mulsi3"] == 1000.0
    assert at["call:mram_read"] == 1 and at["wcall:mram_read"] == 10
    assert at["iram_instructions"] == features.iram_instructions
    assert at["text_instructions"] == features.text_instructions
    assert at["nr_tasklets"] == features.footprint.nr_tasklets
    op_total = sum(v[k] for k, n in enumerate(schema.names) if n.startswith("op:"))
    assert op_total == features.iram_kernel_instructions


def test_other_columns_catch_what_the_schema_does_not_list(schema, features):
    strange = dataclasses.replace(
        features, kernel_histogram={**features.kernel_histogram, "mul": 3},
        kernel_calls={**features.kernel_calls, "__my_routine": 2})
    at = dict(zip(schema.names, strange.vector(schema)))
    assert at["op:other"] == 3 and at["call:other"] == 2
    small = FeatureSchema(("op:lw", "op:other", "call:other", "iram_instructions"))
    v = features.vector(small)
    assert v[0] + v[1] == features.iram_kernel_instructions
    assert v[2] == sum(features.kernel_calls.values())


def test_unknown_names_and_other_loop_weights_are_refused(schema, features):
    with pytest.raises(SchemaMismatch, match="no_such_feature"):
        features.vector(FeatureSchema(("no_such_feature",)))
    with pytest.raises(SchemaMismatch, match="loop weight"):
        features.vector(FeatureSchema(schema.names, schema.version, loop_weight=2.0))
