"""Export a trained L2P model to ONNX: eval mode, BatchNorm folded, cnmtune metadata.

The graph takes ``features`` (float32 [batch, columns]) and returns ``log_targets`` (float32
[batch, targets]) with a dynamic batch dimension; normalisation is in the graph. Exported with
torch's TorchScript exporter (``dynamo=False``): the dynamo exporter needs onnxscript, which is
not a dependency. The file is written atomically.

``quantize_model`` writes an int8 companion (``X.int8.onnx``) for faster scoring: onnxruntime
dynamic quantisation, int8 weights per output channel, activations quantised to uint8 per
batch at run time (MatMulInteger / DynamicQuantizeLinear), same inputs, outputs and metadata
plus ``cnmtune.quantization``. Because the activation scale is computed over the whole batch,
an int8 prediction of a row depends slightly on the other rows of its batch (fp32 does not).
"""

from __future__ import annotations

import copy
import io
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path

import onnx
import torch
from torch import nn

from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.model import Dense, L2PModel
from cnmtune.costmodel.learn.samples import input_columns
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.errors import ModelError, SchemaMismatch


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
    return fmt.write_model(onnx.load_model_from_string(buffer.getvalue()), path, schema=schema, columns=columns,
                       targets=model.config.targets, toolchain_kind=toolchain_kind, llvm_version=llvm_version,
                       data_hash=data_hash, metrics=metrics, config=model.config.to_dict())


def int8_path(path: str | os.PathLike) -> Path:
    """Where the int8 companion of ``X.onnx`` goes: ``X.int8.onnx``."""
    return fmt.companion_path(path, fmt.INT8_SUFFIX)


def quantize_model(path: str | os.PathLike, output: str | os.PathLike | None = None,
                   per_channel: bool = True) -> Path:
    """Write a dynamically int8-quantised copy of the exported model ``path``; returns its path.

    The copy keeps the cnmtune metadata and adds ``cnmtune.quantization``; default output:
    ``int8_path(path)``. A model that is already quantised is refused.
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    path = Path(path)
    output = int8_path(path) if output is None else Path(output)
    try:
        source = onnx.load(path)
    except Exception as exc:  # OSError, or protobuf's DecodeError for a file that is not ONNX
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"cannot read the ONNX model {path} to quantise it ({reason})") from None
    props = {p.key: p.value for p in source.metadata_props}
    if props.get(fmt.KEY_FORMAT) != json.dumps(fmt.MODEL_FORMAT):
        raise ModelError(f"{path} is not a cnmtune L2P model; only those are quantised")
    if fmt.KEY_QUANTIZATION in props:
        raise ModelError(f"{path} is already quantised ({props[fmt.KEY_QUANTIZATION]})")
    # A product with the raw input rows (the analytical prior's column weights) stays fp32:
    # counts span 0 .. 1e7, which an 8-bit activation scale cannot hold.
    raw_input_products = [n.name for n in source.graph.node
                          if n.op_type in ("MatMul", "Gemm") and fmt.INPUT_NAME in n.input]
    with tempfile.TemporaryDirectory(prefix="cnmtune-int8-") as tmp:
        raw = Path(tmp) / "q.onnx"
        quiet = logging.getLogger()
        level, quiet.level = quiet.level, logging.ERROR  # quantize_dynamic logs a pre-processing hint
        try:
            quantize_dynamic(path, raw, weight_type=QuantType.QInt8, per_channel=per_channel,
                             op_types_to_quantize=["MatMul", "Gemm"], nodes_to_exclude=raw_input_products)
        finally:
            quiet.setLevel(level)
        graph = onnx.load(raw)
    del graph.metadata_props[:]
    for key, value in props.items():
        graph.metadata_props.add(key=key, value=value)
    scheme = {"scheme": "dynamic-int8", "weights": "QInt8", "per_channel": per_channel,
              "activations": "QUInt8, per batch", "source": path.name, "fp32_nodes": raw_input_products}
    fmt.set_metadata(graph, fmt.KEY_QUANTIZATION, scheme)
    return fmt.seal(graph, output)  # the quantised graph's own digest
