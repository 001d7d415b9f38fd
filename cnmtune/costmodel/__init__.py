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
    "load_dpu_elf": "cnmtune.costmodel.elf",
    "dpu_schema": "cnmtune.costmodel.schema",
    "schema_for": "cnmtune.costmodel.schema",
    "extract_dpu_features": "cnmtune.costmodel.dpu_features",
    "decode_dpu": "cnmtune.costmodel.dpu_program",
    "encoding_table": "cnmtune.costmodel.dpu_isa",
    "SampleSet": "cnmtune.costmodel.samples",
    "load_samples": "cnmtune.costmodel.samples",
    "input_matrix": "cnmtune.costmodel.samples",
    "CONFIG_COLUMNS": "cnmtune.costmodel.samples",
    "TARGETS": "cnmtune.costmodel.samples",
    "L2PConfig": "cnmtune.costmodel.model",
    "L2PModel": "cnmtune.costmodel.model",
    "train": "cnmtune.costmodel.training",
    "finetune": "cnmtune.costmodel.training",
    "predict": "cnmtune.costmodel.training",
    "save_checkpoint": "cnmtune.costmodel.checkpoint",
    "load_checkpoint": "cnmtune.costmodel.checkpoint",
    "export_onnx": "cnmtune.costmodel.onnx_export",
    "quantize_model": "cnmtune.costmodel.onnx_export",
    "mc_dropout_predict": "cnmtune.costmodel.uncertainty",
    "interval_coverage": "cnmtune.costmodel.uncertainty",
    "GbtBaseline": "cnmtune.costmodel.baselines",
    "AnalyticalBaseline": "cnmtune.costmodel.baselines",
    "RandomBaseline": "cnmtune.costmodel.baselines",
    "AnalyticalPrior": "cnmtune.costmodel.prior",
    "TRAIN_DEFAULTS": "cnmtune.costmodel.recipe",
    "Scorer": "cnmtune.costmodel.scorer",
    "Prediction": "cnmtune.costmodel.prediction",
    "evaluate": "cnmtune.costmodel.prediction",
    "mape": "cnmtune.costmodel.metrics",
    "rmse": "cnmtune.costmodel.metrics",
    "r2": "cnmtune.costmodel.metrics",
    "kendall_tau": "cnmtune.costmodel.metrics",
    "spearman_rho": "cnmtune.costmodel.metrics",
    "top_k_recall": "cnmtune.costmodel.metrics",
    "top_k_regret": "cnmtune.costmodel.metrics",
    "kernel_report": "cnmtune.costmodel.metrics",
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
