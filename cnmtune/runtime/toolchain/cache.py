"""A content-addressed build cache on disk: same inputs, same key, no rebuild; bounded in size.

Entries are written to a temporary file in the same directory and renamed into place, so a
crash or a concurrent writer never leaves a half-written entry behind.

Layout: ``<root>/<kind>/<key[:2]>/<entry>`` for build outputs (kinds elf, variant, ir, optimized, obj,
runtime, upmem-*, hostapi, ...; an entry is a file or, for a built tree, a directory) and
``<root>/traces/<key>/`` for trace sets (cnmtune.runtime.sim.traces). ``<root>/tuning.sqlite``
(cnmtune.plugin.tune.cache) holds tuning results, not rebuildable outputs: it is reported, never
evicted or cleaned.

The bound, ``$CNMTUNE_CACHE_MAX_BYTES`` (default 2 GiB), is kept without scanning at every write:
looking an existing entry up (`BuildCache.path`) refreshes its mtime, so mtimes order entries by
last use; every new entry adds its size to a running total in ``<root>/.usage``, under an flock
so that concurrent processes add up; when the total passes the bound, that writer scans the cache
and removes the least recently used entries down to 90 % of the bound, and the scan's total
replaces the running one. A directory entry is renamed away before it is deleted, and entries
that vanish meanwhile (another process cleaning) are skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cnmtune.atomic import atomic_write
from cnmtune.errors import UsageError

MAX_BYTES_ENV = "CNMTUNE_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 * 1024 ** 3
TRACES = "traces"  # the kind whose entries sit directly in it (trace sets), not in <key[:2]>/ shards
TUNING_FILE = "tuning.sqlite"  # the tuning cache (cnmtune.plugin.tune.cache): not an entry
USAGE_FILE = ".usage"
_USAGE_WIDTH = 20  # digits of the byte total in USAGE_FILE (2^64 has 20)
LOW_WATER = 0.9  # eviction goes down to this fraction of the bound, so that the next one is far
LEFTOVER_S = 3600.0  # a temporary file (.name...) older than this is a crashed writer's leftover
# what cnmtune names its entries (a content key, hex; a leading dot while written) and shards: the scan
# never takes anything else for an entry, whatever else a mistaken CNMTUNE_CACHE_DIR holds
_ENTRY_NAME, _SHARD_NAME = re.compile(r"\.?[0-9a-f]{32}"), re.compile(r"[0-9a-f]{2}")
_UNITS = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}


def default_cache_dir() -> Path:
    """$CNMTUNE_CACHE_DIR, else $XDG_CACHE_HOME/cnmtune, else ~/.cache/cnmtune."""
    if env := os.environ.get("CNMTUNE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cnmtune"


def parse_bytes(text: str, what: str) -> int:
    """A byte count: an integer, optionally with a binary unit (K, M, G, T; KiB, MB, ... alike)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise UsageError(f"{what}: {text!r} is not a size in bytes (e.g. 2G, 500M, 1048576)")
    return int(float(match[1]) * _UNITS[match[2].lower()])


def cache_bound() -> int:
    """The cache's size bound in bytes: $CNMTUNE_CACHE_MAX_BYTES, else 2 GiB."""
    text = os.environ.get(MAX_BYTES_ENV)
    return DEFAULT_MAX_BYTES if text is None else parse_bytes(text, MAX_BYTES_ENV)


def content_key(*parts: str | bytes) -> str:
    """SHA-256 over the parts, each length-prefixed so that different splits never collide."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Entry:
    """One cached output: its kind (top-level directory), path, size and last use (mtime)."""

    kind: str
    path: Path
    bytes: int
    used: float


@dataclass(frozen=True)
class CacheInfo:
    """What the cache holds: entries and bytes per kind, and the tuning cache beside it."""

    root: Path
    bound: int
    kinds: dict[str, tuple[int, int]]  # kind -> (entries, bytes)
    tuning_bytes: int

    @property
    def entries(self) -> int:
        return sum(n for n, _ in self.kinds.values())

    @property
    def bytes(self) -> int:
        return sum(b for _, b in self.kinds.values())

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"root": str(self.root), "bound_bytes": self.bound, "entries": self.entries, "bytes": self.bytes,
                "kinds": kinds_record(self.kinds), "tuning_cache_bytes": self.tuning_bytes}


def usage_by_kind(entries: list[Entry]) -> dict[str, tuple[int, int]]:
    """Entries and bytes per kind."""
    kinds: dict[str, tuple[int, int]] = {}
    for entry in entries:
        n, b = kinds.get(entry.kind, (0, 0))
        kinds[entry.kind] = (n + 1, b + entry.bytes)
    return kinds


def kinds_record(kinds: dict[str, tuple[int, int]]) -> dict:
    """usage_by_kind's result, JSON-safe: {kind: {"entries": n, "bytes": b}}."""
    return {k: {"entries": n, "bytes": b} for k, (n, b) in sorted(kinds.items())}


class BuildCache:
    """Files stored under `root/<namespace>/<key[:2]>/<key><suffix>`, LRU-bounded in total size."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, namespace: str, key: str, suffix: str) -> Path:
        """Where the entry (namespace, key, suffix) lives, whether or not it exists yet; an
        existing entry counts as used now (the eviction order)."""
        return _used(self.root / namespace / key[:2] / f"{key}{suffix}")

    def trace_set(self, key: str) -> Path:
        """The trace-set directory `key` (cnmtune.runtime.sim.traces), as `path` does for files."""
        return _used(self.root / TRACES / key)

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
        self.added(target)
        return target

    def added(self, path: Path) -> None:
        """Count the new entry at `path` (the caller wrote it in place) toward the bound; past the
        bound, evict the least recently used entries (never `path`) down to 90 % of it."""
        size, bound = _size(path), cache_bound()
        with self._usage() as usage:
            if usage.bytes is not None and usage.bytes + size <= bound:
                usage.bytes += size
                return
            entries = self.entries()
            usage.bytes = sum(e.bytes for e in entries)
            if usage.bytes > bound:
                excess = usage.bytes - int(bound * LOW_WATER)
                usage.bytes -= sum(e.bytes for e in _remove_lru(entries, excess, keep=path))

    def entries(self) -> list[Entry]:
        """Every entry now in the cache, least recently used first (a scan; writes in progress are
        left out)."""
        found: list[Entry] = []
        for kind in _children(self.root):
            if not kind.is_dir():
                continue
            shards = [kind.path] if kind.name == TRACES else [
                s.path for s in _children(Path(kind.path)) if _SHARD_NAME.fullmatch(s.name) and s.is_dir()]
            for shard in shards:
                for item in _children(Path(shard)):
                    if _ENTRY_NAME.match(item.name) and (entry := _entry(kind.name, item)) is not None:
                        found.append(entry)
        return sorted(found, key=lambda e: e.used)

    def info(self) -> CacheInfo:
        """Entries and bytes per kind, the bound and the tuning cache's size."""
        tuning = self.root / TUNING_FILE
        return CacheInfo(self.root, cache_bound(), usage_by_kind(self.entries()),
                         tuning.stat().st_size if tuning.is_file() else 0)

    def clean(self, older_than_days: float | None = None, to_bound: bool = False) -> list[Entry]:
        """Remove every entry, or those unused for `older_than_days`, or (`to_bound`) the least
        recently used ones down to the bound; return what was removed."""
        with self._usage() as usage:
            entries = self.entries()
            total = sum(e.bytes for e in entries)
            if to_bound:
                removed = _remove_lru(entries, total - cache_bound())
            else:
                cutoff = time.time() - 86400 * older_than_days if older_than_days is not None else None
                removed = [e for e in entries if cutoff is None or e.used < cutoff]
                for entry in removed:
                    _remove(entry.path)
            usage.bytes = total - sum(e.bytes for e in removed)
        return removed

    @contextlib.contextmanager
    def _usage(self) -> Iterator[_Usage]:
        """The running total of the cache's bytes, locked against other processes while the block
        runs; the block's value is written back."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / USAGE_FILE, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.read(fd, 64).decode(errors="replace").strip()
            usage = _Usage(int(text) if text.isdigit() else None)
            yield usage
            # a fixed-width record, rewritten in place: no truncate (a few ms each on some file systems)
            os.pwrite(fd, f"{'' if usage.bytes is None else usage.bytes:>{_USAGE_WIDTH}}".encode(), 0)
        finally:
            os.close(fd)  # and with it the lock


@dataclass
class _Usage:
    bytes: int | None  # None: unknown (a new cache, or a damaged .usage), the next write scans


def _remove_lru(entries: list[Entry], excess: int, keep: Path | None = None) -> list[Entry]:
    """Remove entries (least recently used first) until `excess` bytes are gone; never `keep`."""
    removed: list[Entry] = []
    for entry in entries:
        if excess <= 0:
            break
        if entry.path != keep:
            _remove(entry.path)
            removed.append(entry)
            excess -= entry.bytes
    return removed


def _used(path: Path) -> Path:
    """`path`, its mtime set to now if it exists (a use, for the eviction order)."""
    with contextlib.suppress(FileNotFoundError):
        os.utime(path)
    return path


def _children(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _entry(kind: str, item: os.DirEntry) -> Entry | None:
    """The entry at `item`, or None if it vanished or is a write in progress."""
    try:
        stat = item.stat(follow_symlinks=False)
        if item.name.startswith(".") and time.time() - stat.st_mtime < LEFTOVER_S:
            return None
        size = _size(Path(item.path)) if item.is_dir(follow_symlinks=False) else stat.st_size
        return Entry(kind, Path(item.path), size, stat.st_mtime)
    except FileNotFoundError:
        return None


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a directory (0 for what vanished meanwhile)."""
    if not path.is_dir() or path.is_symlink():
        try:
            return path.lstat().st_size
        except FileNotFoundError:
            return 0
    total = 0
    for parent, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _remove(path: Path) -> None:
    """Delete an entry; a directory is renamed away first, so no reader finds it half-deleted."""
    try:
        if path.is_dir() and not path.is_symlink():
            doomed = path.with_name(f".{path.name}.{secrets.token_hex(6)}.removed")
            path.rename(doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        else:
            path.unlink()
    except FileNotFoundError:
        pass
