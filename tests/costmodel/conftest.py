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
