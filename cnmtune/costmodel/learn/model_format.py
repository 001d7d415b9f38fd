"""The contract of an exported cost-model file: graph names, opset and metadata keys.

Shared by the exporter (which writes it) and the scorer (which checks it); no torch, no
onnxruntime. Every metadata value is JSON text.
"""

from __future__ import annotations

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

#: Optional: how the weights were quantised ({"scheme": "dynamic-int8", ...}); absent in fp32 files.
KEY_QUANTIZATION = "cnmtune.quantization"
#: Suffix of the quantised companion of X.onnx: X.int8.onnx.
INT8_SUFFIX = ".int8.onnx"

REQUIRED_KEYS = (KEY_FORMAT, KEY_VERSION, KEY_SCHEMA, KEY_COLUMNS, KEY_TARGETS, KEY_TOOLCHAIN,
                 KEY_DATA_HASH, KEY_METRICS, KEY_CONFIG)
