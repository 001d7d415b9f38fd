"""Training checkpoints: the state dict (tensors only) and a JSON side-car; no pickled objects.

``model.pt`` holds ``torch.save(state_dict)``, read back with ``torch.load(weights_only=True)``;
``model.pt.json`` holds the format tag, the input width, the L2PConfig and the caller's
metadata (schema, input columns, data hash, metrics, ...). Both are written atomically.
"""

from __future__ import annotations

import io
import json
import os
import warnings
import zipfile
from pathlib import Path

import torch

from cnmtune.atomic import atomic_write
from cnmtune.costmodel.learn.model import L2PConfig, L2PModel
from cnmtune.errors import ModelError

CHECKPOINT_FORMAT = "cnmtune-l2p-checkpoint-1"


def sidecar(path: str | os.PathLike) -> Path:
    """The JSON side-car of a checkpoint file."""
    path = Path(path)
    return path.with_name(path.name + ".json")


def save_checkpoint(path: str | os.PathLike, model: L2PModel, meta: dict | None = None) -> Path:
    """Write the model's weights to ``path`` and its config and ``meta`` to the side-car."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    atomic_write(path, buffer.getvalue())
    record = {"format": CHECKPOINT_FORMAT, "n_inputs": model.n_inputs,
              "config": model.config.to_dict(), "meta": meta or {}}
    atomic_write(sidecar(path), (json.dumps(record, indent=2, sort_keys=True) + "\n").encode())
    return Path(path)


def load_checkpoint(path: str | os.PathLike) -> tuple[L2PModel, dict]:
    """The model (in eval mode) and the metadata saved by ``save_checkpoint``. A file it cannot use
    is a ModelError naming the cause in one line, raised from the library's error (whose full text
    `cnmtune -v` shows)."""
    path, side = Path(path), sidecar(path)
    if not path.is_file():
        raise ModelError(f"checkpoint file {path} does not exist")
    model, meta = _network(path, side)
    state = _tensors(path)
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:  # missing or misshapen tensors, or no state dict
        raise ModelError(f"cannot read checkpoint {path}: its tensors do not fit the network {side.name} "
                         "describes") from exc
    return model.eval(), meta


def _network(path: Path, side: Path) -> tuple[L2PModel, dict]:
    """The untrained network the side-car of checkpoint ``path`` describes, and its metadata."""
    try:
        record = json.loads(side.read_text())
    except FileNotFoundError:
        raise ModelError(f"cannot read checkpoint {path}: its side-car {side.name} does not exist") from None
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise ModelError(f"cannot read checkpoint {path}: its side-car {side.name} is not readable JSON") from exc
    found = record.get("format") if isinstance(record, dict) else None
    if found != CHECKPOINT_FORMAT:
        raise ModelError(f"{side}: not a cnmtune L2P checkpoint side-car (format {found!r}, "
                         f"expected {CHECKPOINT_FORMAT!r})")
    try:
        return L2PModel(int(record["n_inputs"]), L2PConfig.from_dict(record["config"])), record["meta"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"cannot read checkpoint {path}: its side-car {side.name} does not describe an L2P "
                         "network") from exc


def _tensors(path: Path) -> dict:
    """The state dict in ``path``, read by torch without unpickling any object."""
    try:
        with warnings.catch_warnings():  # e.g. on a plain pickle's protocol: the error below says what failed
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except OSError as exc:
        raise ModelError(f"cannot read checkpoint {path}: {exc.strerror or exc}") from exc
    except RuntimeError as exc:  # torch's archive reader
        raise ModelError(f"cannot read checkpoint {path}: not a cnmtune checkpoint (a damaged torch "
                         "archive)") from exc
    except Exception as exc:  # whatever unpickling garbage raises: UnpicklingError, EOFError, KeyError, ...
        cause = "it holds pickled objects, not only tensors" if zipfile.is_zipfile(path) else \
            "torch could not unpickle it"
        raise ModelError(f"cannot read checkpoint {path}: not a cnmtune checkpoint ({cause})") from exc
