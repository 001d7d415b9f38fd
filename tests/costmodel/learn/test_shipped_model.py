"""The pretrained model shipped in cnmtune/data: loads under the current schema and scores sanely."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cnmtune
from cnmtune.costmodel.learn.checkpoint import load_checkpoint
from cnmtune.costmodel.learn.recipe import SHIPPED_HELD_OUT
from cnmtune.costmodel.analysis.schema import model_schema
from cnmtune.costmodel.learn.scorer import Scorer
from cnmtune.costmodel.learn.training import predict
from cnmtune.costmodel import model_features
from cnmtune.costmodel.learn.samples import input_matrix
from dpu_asm import Asm

DATA = Path(cnmtune.__file__).parent / "data"


@pytest.fixture(scope="module", params=["l2p.onnx", "l2p.int8.onnx"])
def scorer(request) -> Scorer:
    return Scorer(DATA / request.param, expect_schema_hash=model_schema().hash)


def test_shipped_model_records_what_it_was_trained_on(scorer):
    meta = json.loads((DATA / "l2p.pt.json").read_text())["meta"]
    assert meta["data_hash"] == scorer.data_hash
    assert not set(SHIPPED_HELD_OUT) & set(meta["kernels"]) and len(meta["kernels"]) == 16
    assert scorer.toolchain["kind"] == "proxy" and scorer.metadata["cnmtune.model_config"]["depth"] == 12
    assert (scorer.quantization is None) == (scorer.path.name == "l2p.onnx")


def test_shipped_model_scores_reference_rows_in_a_sane_range(scorer, samples):
    """The test store's va and red rows are built like the reference dataset's (small size)."""
    prediction = scorer.predict(samples.X)
    true = np.exp(samples.y[:, 0].astype(np.float64))
    ratio = prediction.runtime_s / true
    assert np.all((ratio > 0.2) & (ratio < 5.0)), (ratio.min(), ratio.max())
    assert np.median(np.abs(np.log(ratio))) < np.log(1.25)


def test_shipped_checkpoint_matches_the_onnx_model(samples):
    model, meta = load_checkpoint(DATA / "l2p.pt")
    assert meta["schema"]["hash"] == model_schema().hash
    onnx_out = Scorer(DATA / "l2p.onnx").predict(samples.X[:64]).log_targets
    np.testing.assert_allclose(onnx_out, predict(model, samples.X[:64]).log_targets, atol=1e-4, rtol=1e-4)


def _sdk_style_elf(path: Path) -> Path:
    """A small real-DPU-ISA program (bootstrap, a counted load loop), as the UPMEM linker lays it out."""
    a = Asm()
    a.func("__bootstrap")
    a("JNZri", ra="id", pc="__sys_start_thread")
    a("BOOTri", ra="id", imm=1)
    a.label("__sys_start_thread")
    a("CALLri", rc="r23", off="main")
    a.label("__sys_end")
    a("STOPci", cc=1, pc="__sys_end")
    a.func("main")
    a("MOVEri", rc="r0", imm=0)
    a.mark("loop")
    a("LWrri", rc="r1", ra="r0", off=464)
    a("ADDrri", rc="r0", ra="r0", imm=4)
    a("JLTUrii", ra="r0", imm=1024, pc="loop")
    a("JUMPr", ra="r23")
    path.write_bytes(a.elf())
    return path


def test_one_model_scores_proxy_and_sdk_binaries(scorer, elf_o2, tmp_path):
    """A proxy ELF, read as the DPU code it lowers to, and a real DPU ELF have features of one
    schema, the model's; the shipped model gives both a finite, positive runtime."""
    proxy = model_features(elf_o2)
    sdk = model_features(_sdk_style_elf(tmp_path / "sdk.elf"))
    assert proxy.schema_version == sdk.schema_version == scorer.schema.version == "dpu-7"
    rows = [dict(zip(scorer.schema.names, f.vector(scorer.schema))) for f in (proxy, sdk)]
    runtime = scorer.predict(input_matrix(rows, [1, 1], [16, 16], [4096, 4096], [4096, 4096], [1, 1], scorer.schema)).runtime_s
    assert np.all(np.isfinite(runtime)) and np.all(runtime > 0)
