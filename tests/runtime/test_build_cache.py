"""The build cache's size bound: least recently used entries go, concurrent writers add up."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from cnmtune.errors import UsageError
from cnmtune.runtime.toolchain.cache import MAX_BYTES_ENV, USAGE_FILE, BuildCache, cache_bound, parse_bytes

KB = 1000


def _key(i: int) -> str:
    return f"{i:064x}"


def _on_disk(root) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files
               if f != USAGE_FILE)


def test_the_bound_evicts_the_least_recently_used_entries(tmp_path, monkeypatch):
    monkeypatch.setenv(MAX_BYTES_ENV, str(10 * KB))
    cache = BuildCache(tmp_path)
    long_ago = time.time() - 1000
    tree = tmp_path / "hostapi" / _key(99)[:2] / _key(99)  # a directory entry (a built tree), the oldest
    (tree / "lib").mkdir(parents=True)
    (tree / "lib" / "libdpu.a").write_bytes(b"t" * KB)
    cache.added(tree)
    os.utime(tree, (long_ago - 1, long_ago - 1))
    foreign = tmp_path / "elf" / "ff" / f"{_key(98)}.elf"  # written behind the cache's back: not counted
    foreign.parent.mkdir(parents=True)
    foreign.write_bytes(bytes(KB))
    os.utime(foreign, (long_ago - 2, long_ago - 2))
    for i in range(7):
        cache.put("elf", _key(i), ".elf", bytes(KB))
        os.utime(cache.path("elf", _key(i), ".elf"), (long_ago + i, long_ago + i))
    assert cache.get("elf", _key(0), ".elf") == bytes(KB)  # a use: elf 0 is now the most recent
    assert int((tmp_path / USAGE_FILE).read_text()) == 8 * KB  # counted, not scanned (9 kB on disk)
    for i in range(7, 10):  # the third: 11 kB counted > 10 kB, 12 kB scanned, down to 9 kB, the oldest first
        cache.put("obj", _key(i), ".o", bytes(KB))
    kept = {(e.kind, e.path.name) for e in cache.entries()}
    assert kept == ({("elf", f"{_key(i)}.elf") for i in (0, 2, 3, 4, 5, 6)}
                    | {("obj", f"{_key(i)}.o") for i in (7, 8, 9)})
    assert not tree.exists() and not list(tree.parent.iterdir())  # the whole tree went, nothing left beside
    assert _on_disk(tmp_path) == 9 * KB == int((tmp_path / USAGE_FILE).read_text())


def test_clean_all_old_or_down_to_the_bound(tmp_path, monkeypatch):
    cache = BuildCache(tmp_path)
    for i in range(4):
        cache.put("ir", _key(i), ".ll", bytes(KB))
        os.utime(cache.path("ir", _key(i), ".ll"), (time.time() - 86400 * (4 - i),) * 2)  # 4, 3, 2, 1 days
    (tmp_path / "tuning.sqlite").write_bytes(b"results")
    assert [e.path.name for e in cache.clean(older_than_days=2.5)] == [f"{_key(i)}.ll" for i in (0, 1)]
    monkeypatch.setenv(MAX_BYTES_ENV, str(KB))
    assert [e.path.name for e in cache.clean(to_bound=True)] == [f"{_key(2)}.ll"]
    assert len(cache.clean()) == 1 and cache.entries() == [] and cache.info().bytes == 0
    assert (tmp_path / "tuning.sqlite").read_bytes() == b"results" and cache.info().tuning_bytes == 7
    assert int((tmp_path / USAGE_FILE).read_text()) == 0


def test_a_scan_takes_only_cnmtune_entries_and_old_leftovers(tmp_path):
    cache = BuildCache(tmp_path)
    (tmp_path / "elf" / "ab").mkdir(parents=True)
    (tmp_path / "elf" / "ab" / f"{_key(1)}.elf").write_bytes(b"x")
    (tmp_path / "elf" / "ab" / f".{_key(2)}.elf.1234.tmp").write_bytes(b"being written")
    leftover = tmp_path / "elf" / "ab" / f".{_key(3)}.elf.5678.tmp"
    leftover.write_bytes(b"crashed")
    os.utime(leftover, (time.time() - 7200,) * 2)
    (tmp_path / "elf" / "notes").mkdir()
    (tmp_path / "elf" / "notes" / "mine.txt").write_text("a user's file")  # not a shard: never touched
    (tmp_path / "elf" / "ab" / "README").write_text("not a key")
    assert [e.path.name for e in cache.entries()] == [leftover.name, f"{_key(1)}.elf"]  # oldest first
    cache.clean()
    assert (tmp_path / "elf" / "notes" / "mine.txt").is_file() and (tmp_path / "elf" / "ab" / "README").is_file()


WRITER = """
import sys
from cnmtune.runtime.toolchain.cache import BuildCache
cache = BuildCache(sys.argv[1])
for i in range(60):
    cache.put("obj", f"{sys.argv[2]}{i:062x}", ".o", bytes(1000))
"""


def test_concurrent_writers_stay_within_the_bound(tmp_path):
    env = {**os.environ, MAX_BYTES_ENV: str(20 * KB)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag], env=env, stderr=subprocess.PIPE,
                                text=True) for tag in ("aa", "bb")]
    for writer in writers:
        assert writer.wait(timeout=300) == 0, writer.stderr.read()
    entries = BuildCache(tmp_path).entries()
    assert 18 <= len(entries) <= 20  # evictions went down to 18 kB, never below
    assert _on_disk(tmp_path) == 1000 * len(entries)
    assert int((tmp_path / USAGE_FILE).read_text()) >= _on_disk(tmp_path)  # a scan may count a write twice, never none


def test_the_bound_is_read_from_the_environment(monkeypatch):
    monkeypatch.delenv(MAX_BYTES_ENV, raising=False)
    assert cache_bound() == 2 * 1024 ** 3
    assert [parse_bytes(t, "x") for t in ("1048576", "500M", "2GiB", "1.5k")] == [1048576, 500 << 20, 2 << 30, 1536]
    monkeypatch.setenv(MAX_BYTES_ENV, "lots")
    with pytest.raises(UsageError, match=f"{MAX_BYTES_ENV}: 'lots' is not a size in bytes"):
        cache_bound()
