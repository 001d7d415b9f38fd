"""The worker side of compiles and runs (cnmtune.plugin.jobs), on real compiles."""

from __future__ import annotations

from cnmtune.plugin.jobs import CompileJob, compile_job
from tests.conftest import VA_DIR


def test_a_compile_job_builds_into_the_cache_the_environment_names_now(tmp_path, monkeypatch):
    # a process that points CNMTUNE_CACHE_DIR elsewhere (a test, a program calling the API) builds there
    # from then on, not into the cache its first job found
    hashes = []
    for name in ("first", "second"):
        monkeypatch.setenv("CNMTUNE_CACHE_DIR", str(tmp_path / name))
        [result] = compile_job(CompileJob(str(VA_DIR), "O0", (4,)))
        hashes.append(result.record.elf_hash)
        assert len(list((tmp_path / name).rglob("*.elf"))) == 1
    assert hashes[0] == hashes[1]
