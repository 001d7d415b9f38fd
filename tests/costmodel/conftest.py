"""Fixtures for the cost model tests: real proxy ELFs and the ecall service table."""

from __future__ import annotations

from pathlib import Path

import pytest

from cnmtune.dpu.abi import ECALL_HEADER
from proxy_build import ECALL_DEFINES, build, write_sources


@pytest.fixture(scope="session")
def ecall_header(tmp_path_factory) -> Path:
    """cnm_ecall.h of the DPU runtime, or a stand-in with the same service numbers."""
    if ECALL_HEADER.is_file():
        return ECALL_HEADER
    path = tmp_path_factory.mktemp("ecall") / "cnm_ecall.h"
    path.write_text(ECALL_DEFINES)
    return path


@pytest.fixture(scope="session")
def sources(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("proxy-src")
    write_sources(root)
    return root


@pytest.fixture(scope="session")
def elf_o0(sources) -> Path:
    """The test kernel linked at -O0."""
    return build(sources, "O0")


@pytest.fixture(scope="session")
def elf_o2(sources) -> Path:
    """The test kernel linked at -O2."""
    return build(sources, "O2")


# -- the L2P network on a real dataset (the store comes from tests/conftest.py) -------------

@pytest.fixture(scope="session")
def small_config():
    """Small enough to train in a second, large enough to learn the dataset; tests about the
    default 12 x 256 architecture build it explicitly."""
    from cnmtune.costmodel.learn.model import L2PConfig

    return L2PConfig(depth=2, width=128, dropout=0.1)


@pytest.fixture(scope="session")
def samples(l2p_db):
    from cnmtune.costmodel.learn.samples import load_samples

    return load_samples(l2p_db)


@pytest.fixture(scope="session")
def splits(samples):
    return samples.split(seed=0)


@pytest.fixture(scope="session")
def trained(splits, small_config):
    """A small L2P model trained on both kernels (train/val split), seed 0."""
    from cnmtune.costmodel.learn.training import train

    train_set, val_set, _ = splits
    return train(small_config, train_set, val_set, epochs=200, patience=20, seed=0, threads=1)
