"""Export a trained L2P model to ONNX: eval mode, BatchNorm folded, cnmtune metadata.

The graph takes ``features`` (float32 [batch, columns]) and returns ``log_targets`` (float32
[batch, targets]) with a dynamic batch dimension; normalisation is in the graph. Exported with
torch's TorchScript exporter (``dynamo=False``): the dynamo exporter needs onnxscript, which is
not a dependency. The file is written atomically.
"""

from __future__ import annotations

import copy
import io
import json
import os
import warnings
from pathlib import Path

import onnx
import torch
from torch import nn

from cnmtune import __version__
from cnmtune.atomic import atomic_write
from cnmtune.costmodel import model_format as fmt
from cnmtune.costmodel.model import Dense, L2PModel
from cnmtune.costmodel.samples import input_columns
from cnmtune.costmodel.schema import FeatureSchema
from cnmtune.errors import SchemaMismatch


def fold_batchnorm(model: L2PModel) -> L2PModel:
    """An eval-mode copy of ``model`` with every BatchNorm folded into its Linear layer."""
    folded = copy.deepcopy(model).eval()
    with torch.no_grad():
        for dense in (m for m in folded.modules() if isinstance(m, Dense)):
            norm = dense.norm
            if not isinstance(norm, nn.BatchNorm1d):
                continue
            scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
            dense.linear.weight.mul_(scale[:, None])
            dense.linear.bias.copy_((dense.linear.bias - norm.running_mean) * scale + norm.bias)
            dense.norm = nn.Identity()
    return folded


def export_onnx(model: L2PModel, path: str | os.PathLike, *, schema: FeatureSchema, toolchain_kind: str,
                llvm_version: str, data_hash: str, metrics: dict | None = None) -> Path:
    """Write ``model`` as an ONNX file with the metadata a Scorer checks; returns the path.

    ``toolchain_kind`` and ``llvm_version`` name the compiler that built the training binaries
    (the caller knows it; the cost model does not import the runtime).
    """
    columns = input_columns(schema)
    if len(columns) != model.n_inputs:
        raise SchemaMismatch(f"model has {model.n_inputs} inputs but schema {schema.version} "
                             f"({schema.hash}) gives {len(columns)} input columns")
    folded = fold_batchnorm(model)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the legacy exporter announces itself
        torch.onnx.export(
            folded, (torch.zeros(2, model.n_inputs),), buffer, dynamo=False, opset_version=fmt.OPSET,
            input_names=[fmt.INPUT_NAME], output_names=[fmt.OUTPUT_NAME],
            dynamic_axes={fmt.INPUT_NAME: {0: fmt.BATCH_AXIS}, fmt.OUTPUT_NAME: {0: fmt.BATCH_AXIS}})
    graph = onnx.load_model_from_string(buffer.getvalue())
    metadata = {
        fmt.KEY_FORMAT: fmt.MODEL_FORMAT,
        fmt.KEY_VERSION: __version__,
        fmt.KEY_SCHEMA: schema.to_dict(),
        fmt.KEY_COLUMNS: list(columns),
        fmt.KEY_TARGETS: list(model.config.targets),
        fmt.KEY_TOOLCHAIN: {"kind": toolchain_kind, "llvm_version": llvm_version},
        fmt.KEY_DATA_HASH: data_hash,
        fmt.KEY_METRICS: metrics or {},
        fmt.KEY_CONFIG: model.config.to_dict(),
    }
    for key, value in metadata.items():
        graph.metadata_props.add(key=key, value=json.dumps(value, sort_keys=True))
    graph.producer_name, graph.producer_version = "cnmtune", __version__
    onnx.checker.check_model(graph)
    return atomic_write(path, graph.SerializeToString())
