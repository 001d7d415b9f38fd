"""Training checkpoints: the state dict (tensors only) and a JSON side-car; no pickled objects.

``model.pt`` holds ``torch.save(state_dict)``, read back with ``torch.load(weights_only=True)``;
``model.pt.json`` holds the format tag, the input width, the L2PConfig and the caller's
metadata (schema, input columns, data hash, metrics, ...). Both are written atomically.
"""

from __future__ import annotations

import io
import json
import os
import pickle
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
    """The model (in eval mode) and the metadata saved by ``save_checkpoint``."""
    path, side = Path(path), sidecar(path)
    try:
        record = json.loads(side.read_text())
        if record.get("format") != CHECKPOINT_FORMAT:
            raise ModelError(f"{side}: not a cnmtune L2P checkpoint side-car "
                             f"(format {record.get('format')!r}, expected {CHECKPOINT_FORMAT!r})")
        model = L2PModel(int(record["n_inputs"]), L2PConfig.from_dict(record["config"]))
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
        meta = record["meta"]
    except ModelError:
        raise
    except FileNotFoundError as exc:
        raise ModelError(f"checkpoint file {exc.filename} does not exist") from None
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, EOFError, pickle.UnpicklingError) as exc:
        # Corrupt weights make torch.load raise RuntimeError or UnpicklingError (also for
        # anything but tensors under weights_only); load_state_dict raises RuntimeError on
        # missing or misshapen tensors; a broken side-car raises ValueError or KeyError.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{path}: unreadable L2P checkpoint ({first})") from None
    return model.eval(), meta
