"""`cnmtune cache info / clean` through the command line's entry point (in the test's process), on a
cache a real compile filled."""

from __future__ import annotations

import json
import os

from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant
from cnmtune.runtime.toolchain.cache import USAGE_FILE
from tests.conftest import CliResult, run_cnmtune


def cnmtune(root, *args: str, **env: str) -> CliResult:
    return run_cnmtune("cache", *args, env={"CNMTUNE_CACHE_DIR": str(root), **env})


def test_info_counts_a_compile_and_clean_empties_the_cache(tmp_path, va):
    root = tmp_path / "cache"
    toolchain = ProxyToolchain(BuildCache(root))
    binary = toolchain.compile(Variant.of(va, "O0", 4))
    (root / "tuning.sqlite").write_bytes(b"tuned")
    files = {os.path.join(d, f): os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
             if f not in (USAGE_FILE, "tuning.sqlite")}

    info = json.loads(cnmtune(root, "info", "--json").stdout)
    assert info["root"] == str(root) and info["bound_bytes"] == 2 * 1024 ** 3 and info["tuning_cache_bytes"] == 5
    assert set(info["kinds"]) == {"elf", "variant", "ir", "obj", "runtime"} and info["kinds"]["elf"]["entries"] == 1
    assert info["entries"] == len(files) and info["bytes"] == sum(files.values())
    table = cnmtune(root, "info", CNMTUNE_CACHE_MAX_BYTES="1G")
    assert table.returncode == 0 and str(root) in table.stdout and "bound 1.0 GiB" in table.stdout, table.stderr

    kept = binary.elf_path.name
    bound = str(os.path.getsize(binary.elf_path))  # room for one entry: the most recently used, the ELF
    os.utime(binary.elf_path)
    freed = json.loads(cnmtune(root, "clean", "--to-bound", "--json", CNMTUNE_CACHE_MAX_BYTES=bound).stdout)
    assert freed["entries"] == len(files) - 1 and [p.name for p in root.glob("*/*/*")] == [kept]
    cleaned = cnmtune(root, "clean")
    assert cleaned.returncode == 0 and "freed from" in cleaned.stdout and "elf" in cleaned.stdout, cleaned.stderr
    assert json.loads(cnmtune(root, "info", "--json").stdout)["entries"] == 0 and not binary.elf_path.exists()
    assert (root / "tuning.sqlite").read_bytes() == b"tuned"
    assert toolchain.compile(Variant.of(va, "O0", 4)).elf_hash == binary.elf_hash  # rebuilt after a clean


def test_clean_refuses_two_selections(tmp_path):
    result = cnmtune(tmp_path, "clean", "--older-than", "3", "--to-bound")
    assert result.returncode == 2 and "give one of them" in result.stderr
