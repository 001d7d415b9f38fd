"""A content-addressed build cache on disk: same inputs, same key, no rebuild.

Entries are written to a temporary file in the same directory and renamed into place, so a
crash or a concurrent writer never leaves a half-written entry behind.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cnmtune.atomic import atomic_write


def default_cache_dir() -> Path:
    """$CNMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/cnmtune, else ~/.cache/cnmtune."""
    if env := os.environ.get("CNMTUNE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cnmtune"


def content_key(*parts: str | bytes) -> str:
    """SHA-256 over the parts, each length-prefixed so that different splits never collide."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class BuildCache:
    """Files stored under `root/<namespace>/<key[:2]>/<key><suffix>`."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, namespace: str, key: str, suffix: str) -> Path:
        """Where the entry (namespace, key, suffix) lives, whether or not it exists yet."""
        return self.root / namespace / key[:2] / f"{key}{suffix}"

    def get(self, namespace: str, key: str, suffix: str) -> bytes | None:
        """The stored bytes, or None on a miss."""
        try:
            return self.path(namespace, key, suffix).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, namespace: str, key: str, suffix: str, data: bytes) -> Path:
        """Store bytes atomically and return their path."""
        target = self.path(namespace, key, suffix)
        atomic_write(target, data)
        return target
