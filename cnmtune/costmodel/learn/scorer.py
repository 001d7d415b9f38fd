"""Score feature vectors with an exported cost model on onnxruntime (no torch, no scikit-learn):
the L2P network (fp32, or its int8 companion: ``quantize_model``; ``Scorer.quantization`` tells
which) or the gradient-boosted trees (``Scorer.kind``). cnmtune.costmodel.learn.cost_model wraps
a Scorer in the CostModel interface.

A Scorer checks the file before it is used: readable ONNX, cnmtune metadata in the expected
format, a feature schema whose hash matches its names (and the caller's, if given), input and
output names and widths that agree with that metadata. Every refusal is one ModelError or
SchemaMismatch naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.prediction import Prediction
from cnmtune.costmodel.learn.samples import TARGETS, input_columns
from cnmtune.costmodel.analysis.schema import FeatureSchema
from cnmtune.errors import FeatureError, ModelError, SchemaMismatch


#: Rows per onnxruntime call. A 10,000-row batch has 10 MB activations per layer, which do not
#: stay in cache between the ~50 element-wise and matrix nodes of the graph; 2,048-row chunks
#: score the shipped models 1.25x (fp32) to 1.55x (int8) faster on one thread (measured with
#: benchmarks/score_speed.py --chunk-rows).
CHUNK_ROWS = 2048


class Scorer:
    """An exported cost model loaded in onnxruntime; ``predict`` maps input rows to a Prediction."""

    def __init__(self, path: str | os.PathLike, intra_op_threads: int = 1,
                 expect_schema_hash: str | None = None, chunk_rows: int = CHUNK_ROWS):
        """Load and validate ``path``; refuse it if its schema hash is not ``expect_schema_hash``.

        ``predict`` runs the graph on at most ``chunk_rows`` rows at a time (see CHUNK_ROWS)."""
        if chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, not {chunk_rows}")
        self.chunk_rows = chunk_rows
        self.path = Path(path)
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise ModelError(f"cannot read cost model {self.path}: {exc.strerror or exc}") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own pybind types (InvalidProtobuf, Fail, ...)
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"{self.path} is not a readable ONNX model ({reason})") from None
        self.metadata = self._metadata()
        self._check_digest(data)
        self.schema = FeatureSchema.from_dict(self.metadata[fmt.KEY_SCHEMA])
        if self.schema.hash != self.metadata[fmt.KEY_SCHEMA].get("hash"):
            raise ModelError(f"{self.path}: metadata schema hash {self.metadata[fmt.KEY_SCHEMA].get('hash')} "
                             f"does not match its names ({self.schema.hash}); the file is corrupt")
        fmt.check_schema(self.path, self.schema, expect_schema_hash)
        self.columns: tuple[str, ...] = tuple(self.metadata[fmt.KEY_COLUMNS])
        self.targets: tuple[str, ...] = tuple(self.metadata[fmt.KEY_TARGETS])
        self._check_graph()
        raw = self._session.get_modelmeta().custom_metadata_map.get(fmt.KEY_QUANTIZATION)
        try:
            self._quantization: dict | None = None if raw is None else json.loads(raw)
        except json.JSONDecodeError:
            raise ModelError(f"{self.path}: metadata {fmt.KEY_QUANTIZATION} is not JSON") from None

    def _metadata(self) -> dict:
        raw = self._session.get_modelmeta().custom_metadata_map
        if raw.get(fmt.KEY_FORMAT) != json.dumps(fmt.MODEL_FORMAT):
            raise ModelError(f"{self.path} is an ONNX model but not a cnmtune L2P model "
                             f"(metadata {fmt.KEY_FORMAT} = {raw.get(fmt.KEY_FORMAT)!r})")
        missing = [k for k in fmt.REQUIRED_KEYS if k not in raw]
        if missing:
            raise ModelError(f"{self.path}: cnmtune metadata lacks {', '.join(missing)}")
        try:
            return {key: json.loads(raw[key]) for key in fmt.REQUIRED_KEYS}
        except json.JSONDecodeError as exc:
            raise ModelError(f"{self.path}: cnmtune metadata is not JSON ({exc})") from None

    def _check_digest(self, data: bytes) -> None:
        """Refuse a file whose graph (nodes, weights) is not the one its metadata was sealed with."""
        try:
            digest = fmt.graph_digest(onnx.load_from_string(data))
        except Exception as exc:  # protobuf's DecodeError and onnx's own
            raise ModelError(f"{self.path} is not a readable ONNX model ({exc})") from None
        if digest != self.metadata[fmt.KEY_GRAPH_DIGEST]:
            raise ModelError(f"{self.path}: its weights or graph differ from what was saved (sha256 {digest[:16]}, "
                             f"sealed {str(self.metadata[fmt.KEY_GRAPH_DIGEST])[:16]}): the file is damaged; "
                             "restore it or train the model again")

    def _check_graph(self) -> None:
        expected = input_columns(self.schema)
        if self.columns != expected:
            missing = [c for c in expected if c not in self.columns]
            extra = [c for c in self.columns if c not in expected]
            parts = [f"without {', '.join(missing[:3])}"] * bool(missing) \
                + [f"with unknown {', '.join(extra[:3])}"] * bool(extra)
            differ = "; ".join(parts) or "in another order"
            raise ModelError(f"{self.path}: its input columns are not this cnmtune's for feature schema "
                             f"{self.schema.hash} ({differ}); train the model again with this version")
        if not self.targets or not set(self.targets) <= set(TARGETS):
            raise ModelError(f"{self.path}: unknown targets {list(self.targets)}")
        inputs, outputs = self._session.get_inputs(), self._session.get_outputs()
        if [i.name for i in inputs] != [fmt.INPUT_NAME] or [o.name for o in outputs] != [fmt.OUTPUT_NAME]:
            raise ModelError(f"{self.path}: graph has inputs {[i.name for i in inputs]} and outputs "
                             f"{[o.name for o in outputs]}, expected [{fmt.INPUT_NAME!r}] and [{fmt.OUTPUT_NAME!r}]")
        if inputs[0].shape[1:] != [len(self.columns)] or outputs[0].shape[1:] != [len(self.targets)]:
            raise ModelError(f"{self.path}: graph shapes {inputs[0].shape} -> {outputs[0].shape} do not "
                             f"match {len(self.columns)} columns and {len(self.targets)} targets")

    @property
    def toolchain(self) -> dict:
        """Kind and LLVM version of the toolchain that built the training binaries."""
        return self.metadata[fmt.KEY_TOOLCHAIN]

    @property
    def data_hash(self) -> str:
        """sha256 of the training data (SampleSet.data_hash)."""
        return self.metadata[fmt.KEY_DATA_HASH]

    @property
    def kind(self) -> str:
        """Which cost model the graph is: 'l2p' (the network) or 'gbt' (the tree ensemble)."""
        raw = self._session.get_modelmeta().custom_metadata_map.get(fmt.KEY_KIND)
        return json.loads(raw) if raw else "l2p"

    @property
    def quantization(self) -> dict | None:
        """How the weights were quantised (``{"scheme": "dynamic-int8", ...}``), None for fp32."""
        return self._quantization

    @property
    def metrics(self) -> dict:
        """The metrics recorded at export (e.g. per-kernel test-split accuracy)."""
        return self.metadata[fmt.KEY_METRICS]

    def predict(self, X: np.ndarray) -> Prediction:
        """Predicted log targets (and their exp: runtime seconds, speedups) for rows of ``X``."""
        rows = np.asarray(X, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != len(self.columns):
            raise SchemaMismatch(f"{self.path}: inputs of shape {rows.shape}, the model expects "
                                 f"[n, {len(self.columns)}] (schema {self.schema.hash} + configuration)")
        if not np.isfinite(rows).all():
            row, col = np.argwhere(~np.isfinite(rows))[0]
            raise FeatureError(f"row {row}: input column {self.columns[col]} is {rows[row, col]}; "
                               "the cost model needs finite inputs")
        if not len(rows):
            return Prediction(np.zeros((0, len(self.targets)), np.float32), self.targets)
        rows = np.ascontiguousarray(rows)
        out = np.concatenate([self._session.run([fmt.OUTPUT_NAME], {fmt.INPUT_NAME: rows[i:i + self.chunk_rows]})[0]
                              for i in range(0, len(rows), self.chunk_rows)])
        prediction = Prediction(out, self.targets)
        bad = ~np.isfinite(out).all(axis=1)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            runtime = prediction.runtime_s
            if runtime is not None:  # exp of a huge log time overflows, of a huge negative one underflows to 0
                bad |= ~((runtime > 0) & np.isfinite(runtime))
        if bad.any():
            row = int(np.argmax(bad))
            raise ModelError(f"{self.path}: predicted log targets {out[row].tolist()} for row {row}, not a finite "
                             "positive time: the model is unusable for these inputs")
        return prediction
