"""The cost model: static ELF features, the L2P network, training, ONNX export and scoring.

Names are imported on first use (PEP 562), so ``import cnmtune.costmodel`` stays cheap and
pulls in neither capstone nor torch/onnxruntime until something needs them.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "extract_features": "cnmtune.costmodel.analysis.features",
    "model_features": "cnmtune.costmodel.analysis.features",
    "Features": "cnmtune.costmodel.analysis.features",
    "FunctionInfo": "cnmtune.costmodel.analysis.features",
    "FeatureSchema": "cnmtune.costmodel.analysis.schema",
    "default_schema": "cnmtune.costmodel.analysis.schema",
    "model_schema": "cnmtune.costmodel.analysis.schema",
    "load_elf": "cnmtune.costmodel.analysis.elf",
    "load_dpu_elf": "cnmtune.costmodel.analysis.elf",
    "dpu_schema": "cnmtune.costmodel.analysis.schema",
    "schema_for": "cnmtune.costmodel.analysis.schema",
    "features_of": "cnmtune.costmodel.analysis.features",
    "decode": "cnmtune.costmodel.analysis.frontend",
    "DecodedProgram": "cnmtune.costmodel.analysis.frontend",
    "decode_dpu": "cnmtune.costmodel.analysis.dpu_program",
    "encoding_table": "cnmtune.costmodel.analysis.dpu_isa",
    "SampleSet": "cnmtune.costmodel.learn.samples",
    "load_samples": "cnmtune.costmodel.learn.samples",
    "input_matrix": "cnmtune.costmodel.learn.samples",
    "CONFIG_COLUMNS": "cnmtune.costmodel.learn.samples",
    "TARGETS": "cnmtune.costmodel.learn.samples",
    "L2PConfig": "cnmtune.costmodel.learn.model",
    "L2PModel": "cnmtune.costmodel.learn.model",
    "train": "cnmtune.costmodel.learn.training",
    "finetune": "cnmtune.costmodel.learn.training",
    "predict": "cnmtune.costmodel.learn.training",
    "save_checkpoint": "cnmtune.costmodel.learn.checkpoint",
    "load_checkpoint": "cnmtune.costmodel.learn.checkpoint",
    "export_onnx": "cnmtune.costmodel.learn.onnx_export",
    "quantize_model": "cnmtune.costmodel.learn.onnx_export",
    "mc_dropout_predict": "cnmtune.costmodel.learn.uncertainty",
    "interval_coverage": "cnmtune.costmodel.learn.uncertainty",
    "GbtBaseline": "cnmtune.costmodel.learn.baselines",
    "AnalyticalBaseline": "cnmtune.costmodel.learn.baselines",
    "RandomBaseline": "cnmtune.costmodel.learn.baselines",
    "AnalyticalPrior": "cnmtune.costmodel.learn.prior",
    "TRAIN_DEFAULTS": "cnmtune.costmodel.learn.recipe",
    "Scorer": "cnmtune.costmodel.learn.scorer",
    "CostModel": "cnmtune.costmodel.learn.cost_model",
    "L2PCostModel": "cnmtune.costmodel.learn.cost_model",
    "load_model": "cnmtune.costmodel.learn.cost_model",
    "Prediction": "cnmtune.costmodel.learn.prediction",
    "evaluate": "cnmtune.costmodel.learn.prediction",
    "mape": "cnmtune.costmodel.learn.metrics",
    "rmse": "cnmtune.costmodel.learn.metrics",
    "r2": "cnmtune.costmodel.learn.metrics",
    "kendall_tau": "cnmtune.costmodel.learn.metrics",
    "spearman_rho": "cnmtune.costmodel.learn.metrics",
    "top_k_recall": "cnmtune.costmodel.learn.metrics",
    "top_k_regret": "cnmtune.costmodel.learn.metrics",
    "kernel_report": "cnmtune.costmodel.learn.metrics",
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
