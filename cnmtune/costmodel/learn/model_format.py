"""The contract of an exported cost-model file: graph names, opset and metadata keys.

Shared by the exporters (``write_model``: the L2P network, the tree ensemble) and the scorer
(which checks it); no torch, no onnxruntime. Every metadata value is JSON text.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import onnx

from cnmtune import __version__
from cnmtune.atomic import atomic_write
from cnmtune.costmodel.analysis.schema import FeatureSchema

#: Tag of the file layout below; a scorer refuses any other.
MODEL_FORMAT = "cnmtune-l2p-onnx-1"
#: ONNX opset of exported graphs (supported by the legacy TorchScript exporter and onnxruntime).
OPSET = 17
INPUT_NAME = "features"
OUTPUT_NAME = "log_targets"
BATCH_AXIS = "batch"

KEY_FORMAT = "cnmtune.format"
KEY_VERSION = "cnmtune.version"
KEY_SCHEMA = "cnmtune.feature_schema"        # FeatureSchema.to_dict(): names, hash, version
KEY_COLUMNS = "cnmtune.input_columns"        # schema names + CONFIG_COLUMNS
KEY_TARGETS = "cnmtune.targets"              # output columns, e.g. ["runtime", "speedup"]
KEY_TOOLCHAIN = "cnmtune.toolchain"          # {"kind": ..., "llvm_version": ...}
KEY_DATA_HASH = "cnmtune.training_data_hash"
KEY_METRICS = "cnmtune.metrics"
KEY_CONFIG = "cnmtune.model_config"          # L2PConfig.to_dict()
KEY_GRAPH_DIGEST = "cnmtune.graph_sha256"    # graph_digest(): nodes and weights, checked on load

#: Optional: which CostModel wrote the graph ("l2p" when absent, "gbt" for the tree ensemble).
KEY_KIND = "cnmtune.model_kind"
#: Optional: how the weights were quantised ({"scheme": "dynamic-int8", ...}); absent in fp32 files.
KEY_QUANTIZATION = "cnmtune.quantization"
#: Suffix of the quantised companion of X.onnx: X.int8.onnx.
INT8_SUFFIX = ".int8.onnx"

REQUIRED_KEYS = (KEY_FORMAT, KEY_VERSION, KEY_SCHEMA, KEY_COLUMNS, KEY_TARGETS, KEY_TOOLCHAIN,
                 KEY_DATA_HASH, KEY_METRICS, KEY_CONFIG, KEY_GRAPH_DIGEST)


def graph_digest(model: onnx.ModelProto) -> str:
    """sha256 of the serialised graph: every node, attribute and weight (not the metadata)."""
    return hashlib.sha256(model.graph.SerializeToString(deterministic=True)).hexdigest()


def set_metadata(model: onnx.ModelProto, key: str, value) -> None:
    """Set one metadata value (JSON text), replacing an earlier one."""
    for i in reversed(range(len(model.metadata_props))):
        if model.metadata_props[i].key == key:
            del model.metadata_props[i]
    model.metadata_props.add(key=key, value=json.dumps(value, sort_keys=True))


def seal(model: onnx.ModelProto, path: str | os.PathLike) -> Path:
    """Stamp the graph digest, check the model and write it atomically."""
    set_metadata(model, KEY_GRAPH_DIGEST, graph_digest(model))
    model.producer_name, model.producer_version = "cnmtune", __version__
    onnx.checker.check_model(model)
    return atomic_write(path, model.SerializeToString())


def write_model(graph: onnx.ModelProto, path: str | os.PathLike, *, schema: FeatureSchema,
                columns: Sequence[str], targets: Sequence[str],
                toolchain_kind: str, llvm_version: str, data_hash: str, metrics: dict | None, config: dict,
                kind: str | None = None) -> Path:
    """Add the metadata a Scorer checks to a cost-model graph (input ``features``, output
    ``log_targets``), check it and write it atomically; ``kind`` names a model other than L2P."""
    metadata = {
        KEY_FORMAT: MODEL_FORMAT,
        KEY_VERSION: __version__,
        KEY_SCHEMA: schema.to_dict(),
        KEY_COLUMNS: list(columns),
        KEY_TARGETS: list(targets),
        KEY_TOOLCHAIN: {"kind": toolchain_kind, "llvm_version": llvm_version},
        KEY_DATA_HASH: data_hash,
        KEY_METRICS: metrics or {},
        KEY_CONFIG: config,
        **({KEY_KIND: kind} if kind else {}),
    }
    for key, value in metadata.items():
        set_metadata(graph, key, value)
    return seal(graph, path)
