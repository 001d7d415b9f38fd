"""The cost model: static ELF features, the L2P network, training, ONNX export and scoring.

Names are imported on first use (PEP 562), so ``import cnmtune.costmodel`` stays cheap and
pulls in neither capstone/networkx nor torch/onnxruntime until something needs them.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "extract_features": "cnmtune.costmodel.features",
    "Features": "cnmtune.costmodel.features",
    "FunctionInfo": "cnmtune.costmodel.features",
    "FeatureSchema": "cnmtune.costmodel.schema",
    "default_schema": "cnmtune.costmodel.schema",
    "load_elf": "cnmtune.costmodel.elf",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cnmtune.costmodel' has no attribute '{name}'")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
