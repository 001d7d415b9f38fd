"""A PerfVec model as two ONNX graphs in one directory, and its onnxruntime scorer (no torch to score).

- ``blocks.onnx``: inputs ``blocks`` (float32 [B, block features]) and ``weights`` (float32 [B],
  execution counts); outputs ``program`` ([1, dim], the count-weighted sum) and
  ``block_representations`` ([B, dim]).
- ``design.onnx``: inputs ``designs`` (float32 [N, parameters], DpuConfig units; normalised in
  the graph) and ``program`` ([1, dim]); outputs ``design_representations`` ([N, dim]) and
  ``log_cycles`` ([N], the log of their dot products with the program).

cnmtune ships one, trained on the suite's re-timings (cnmtune/data/perfvec/; ``perfvec_model_dir``
resolves the name 'shipped' to it).

Both carry the metadata of model_format.py (format tag, cnmtune version, training data hash,
metrics, config, graph digest checked on load) plus the block feature names and hash, the design
parameters with their ranges, and a model id shared by the pair, so that two halves of different
trainings are refused. Written atomically, never pickled.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune import __version__
from cnmtune.costmodel.learn import model_format as fmt
from cnmtune.costmodel.learn.perfvec_blocks import BLOCK_FEATURES, BLOCK_SCHEMA_HASH, ProgramBlocks
from cnmtune.errors import ModelError, SchemaMismatch
from cnmtune.runtime.sim.design_space import TIMELINE_PARAMETERS

__all__ = ["PERFVEC_FORMAT", "SHIPPED_PERFVEC", "PerfVecScorer", "export_perfvec", "perfvec_model_dir"]

PERFVEC_FORMAT = "cnmtune-perfvec-onnx-1"
BLOCKS_FILE, DESIGN_FILE = "blocks.onnx", "design.onnx"
SHIPPED_PERFVEC = "shipped"
KEY_ROLE = "cnmtune.perfvec.role"
KEY_BLOCKS = "cnmtune.perfvec.block_features"
KEY_DESIGN = "cnmtune.perfvec.design_parameters"
KEY_MODEL_ID = "cnmtune.perfvec.model_id"
_REQUIRED = (fmt.KEY_FORMAT, fmt.KEY_VERSION, fmt.KEY_DATA_HASH, fmt.KEY_METRICS, fmt.KEY_CONFIG,
             fmt.KEY_GRAPH_DIGEST, KEY_ROLE, KEY_BLOCKS, KEY_DESIGN, KEY_MODEL_ID)
_IO = {BLOCKS_FILE: (["blocks", "weights"], ["program", "block_representations"]),
       DESIGN_FILE: (["designs", "program"], ["design_representations", "log_cycles"])}
# the row axis of each graph: blocks of a program, design points
_ROWS = {BLOCKS_FILE: {"blocks": {0: "blocks"}, "weights": {0: "blocks"}, "block_representations": {0: "blocks"}},
         DESIGN_FILE: {"designs": {0: "designs"}, "design_representations": {0: "designs"},
                       "log_cycles": {0: "designs"}}}


def perfvec_model_dir(name: str | os.PathLike) -> Path:
    """The PerfVec model directory ``name`` gives: a directory, else 'shipped' for the model cnmtune
    ships (cnmtune/data/perfvec, wherever it is installed)."""
    path = Path(name)
    if not path.is_dir() and str(name) == SHIPPED_PERFVEC:
        path = Path(__file__).resolve().parents[2] / "data" / "perfvec"
    if not path.is_dir():
        raise ModelError(f"no PerfVec model at {path}: neither a directory nor '{SHIPPED_PERFVEC}' (the model "
                         "cnmtune ships); train one with `cnmtune model perfvec-train`")
    return path


def _design_parameters() -> list[dict]:
    return [{"field": p.field, "low": p.low, "high": p.high, "log": p.log} for p in TIMELINE_PARAMETERS]


def export_perfvec(model, directory: str | os.PathLike, *, data_hash: str, metrics: dict | None = None) -> Path:
    """Write `model` (a PerfVecModel) as blocks.onnx and design.onnx in `directory`; returns it."""
    import onnx
    import torch
    from torch import nn

    class ProgramGraph(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, blocks, weights):
            reps = self.inner.blocks(blocks)
            return weights.reshape(1, -1) @ reps, reps

    class DesignGraph(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, designs, program):
            reps = self.inner.designs(designs)
            return reps, torch.log((reps * program).sum(dim=1))

    model = model.eval()
    directory = Path(directory)
    state = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        state.update(name.encode())
        state.update(tensor.detach().cpu().numpy().tobytes())
    metadata = {fmt.KEY_FORMAT: PERFVEC_FORMAT, fmt.KEY_DATA_HASH: data_hash, fmt.KEY_METRICS: metrics or {},
                fmt.KEY_CONFIG: model.config.to_dict(), KEY_MODEL_ID: state.hexdigest()[:16],
                KEY_BLOCKS: {"names": list(BLOCK_FEATURES), "hash": BLOCK_SCHEMA_HASH},
                KEY_DESIGN: _design_parameters(), fmt.KEY_VERSION: __version__}
    examples = {BLOCKS_FILE: (ProgramGraph(model), (torch.zeros(3, len(BLOCK_FEATURES)), torch.ones(3))),
                DESIGN_FILE: (DesignGraph(model), (torch.ones(3, len(TIMELINE_PARAMETERS)),
                                                   torch.ones(1, model.config.dim)))}
    directory.mkdir(parents=True, exist_ok=True)
    for file, (graph, inputs) in examples.items():
        names, outputs = _IO[file]
        buffer = io.BytesIO()
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore", DeprecationWarning)  # the legacy exporter announces itself
            torch.onnx.export(graph, inputs, buffer, dynamo=False, opset_version=fmt.OPSET, input_names=names,
                              output_names=outputs, dynamic_axes=_ROWS[file])
        proto = onnx.load_model_from_string(buffer.getvalue())
        for key, value in {**metadata, KEY_ROLE: file.removesuffix(".onnx")}.items():
            fmt.set_metadata(proto, key, value)
        fmt.seal(proto, directory / file)
    return directory


@dataclass(frozen=True)
class _Graph:
    session: object
    metadata: dict


class PerfVecScorer:
    """An exported PerfVec model on onnxruntime: program representations once, then designs in bulk."""

    def __init__(self, directory: str | os.PathLike, intra_op_threads: int = 1):
        """Load and check both graphs of `directory` (ModelError / SchemaMismatch naming the file)."""
        self.directory = Path(directory)
        self._blocks = self._load(self.directory / BLOCKS_FILE, intra_op_threads)
        self._design = self._load(self.directory / DESIGN_FILE, intra_op_threads)
        if self._blocks.metadata[KEY_MODEL_ID] != self._design.metadata[KEY_MODEL_ID]:
            raise ModelError(f"{self.directory}: {BLOCKS_FILE} and {DESIGN_FILE} come from different trainings "
                             f"(model ids {self._blocks.metadata[KEY_MODEL_ID]} and "
                             f"{self._design.metadata[KEY_MODEL_ID]}); export the model again")
        self.metadata = self._design.metadata
        self.dim = int(self.metadata[fmt.KEY_CONFIG]["dim"])

    def _load(self, path: Path, threads: int) -> _Graph:
        import onnx
        import onnxruntime as ort

        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ModelError(f"cannot read PerfVec model {path}: {exc.strerror or exc}") from None
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        try:
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
            digest = fmt.graph_digest(onnx.load_from_string(data))
        except Exception as exc:  # onnxruntime's pybind errors, protobuf's DecodeError
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(f"{path} is not a readable ONNX model ({reason})") from None
        raw = session.get_modelmeta().custom_metadata_map
        if raw.get(fmt.KEY_FORMAT) != json.dumps(PERFVEC_FORMAT):
            raise ModelError(f"{path} is not a cnmtune PerfVec model (metadata {fmt.KEY_FORMAT} = "
                             f"{raw.get(fmt.KEY_FORMAT)!r})")
        missing = [k for k in _REQUIRED if k not in raw]
        if missing:
            raise ModelError(f"{path}: PerfVec metadata lacks {', '.join(missing)}")
        metadata = {k: json.loads(raw[k]) for k in _REQUIRED}
        if digest != metadata[fmt.KEY_GRAPH_DIGEST]:
            raise ModelError(f"{path}: its weights or graph differ from what was saved; the file is damaged")
        if metadata[KEY_BLOCKS].get("hash") != BLOCK_SCHEMA_HASH:
            raise SchemaMismatch(f"{path}: the model reads block features {metadata[KEY_BLOCKS].get('hash')}, this "
                                 f"cnmtune computes {BLOCK_SCHEMA_HASH}; train it again on data from this version")
        if metadata[KEY_DESIGN] != _design_parameters():
            raise SchemaMismatch(f"{path}: the model's design parameters or ranges are not this cnmtune's "
                                 f"({', '.join(p['field'] for p in metadata[KEY_DESIGN])}); train it again")
        names, outputs = _IO[path.name]
        if [i.name for i in session.get_inputs()] != names or [o.name for o in session.get_outputs()] != outputs:
            raise ModelError(f"{path}: graph inputs/outputs are not {names} -> {outputs}")
        return _Graph(session, metadata)

    def block_representations(self, blocks: ProgramBlocks) -> np.ndarray:
        """Each block's representation [B, dim]."""
        return self._run_blocks(blocks)[1]

    def program(self, blocks: ProgramBlocks) -> np.ndarray:
        """The program's representation [1, dim]: its blocks' representations weighted by count."""
        return self._run_blocks(blocks)[0]

    def _run_blocks(self, blocks: ProgramBlocks) -> list[np.ndarray]:
        return self._blocks.session.run(None, {"blocks": np.ascontiguousarray(blocks.features, dtype=np.float32),
                                                "weights": np.ascontiguousarray(blocks.weights, dtype=np.float32)})

    def log_cycles(self, program: np.ndarray, designs: np.ndarray) -> np.ndarray:
        """Predicted log DPU cycles [N] of a program representation on design vectors [N, parameters]
        (TIMELINE_PARAMETERS order, DpuConfig units)."""
        designs = np.ascontiguousarray(designs, dtype=np.float32)
        if designs.ndim != 2 or designs.shape[1] != len(TIMELINE_PARAMETERS):
            raise SchemaMismatch(f"{self.directory}: design vectors of shape {designs.shape}, the model expects "
                                 f"[n, {len(TIMELINE_PARAMETERS)}]")
        program = np.ascontiguousarray(program, dtype=np.float32).reshape(1, self.dim)
        return self._design.session.run(["log_cycles"], {"designs": designs, "program": program})[0]

    def design_representations(self, designs: np.ndarray) -> np.ndarray:
        """Each design vector's representation [N, dim]."""
        designs = np.ascontiguousarray(designs, dtype=np.float32)
        program = np.zeros((1, self.dim), dtype=np.float32)
        return self._design.session.run(["design_representations"], {"designs": designs, "program": program})[0]
