"""Compile and run jobs that worker processes execute, shared by dataset generation and the tuner.

A ``CompileJob`` builds one pipeline of one kernel at several tasklet counts and reads each
binary's features; a ``RunJob`` rebuilds one binary (a build-cache hit on the worker that
compiled it) and runs it on the simulator at several (DPUs, size) points. Both build with the
workload's defines updated by the job's (none: the workload's own build); a run passes the job's
workload parameters (none: the workload's defaults). Failures come back as records with their
reason, never as exceptions, so a batch goes on. Only the coordinator writes the store
(``record_results``), in one transaction per batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cnmtune.costmodel import model_features, model_schema
from cnmtune.errors import (CnmtuneError, CompileError, IramOverflow, SimFault, SimTimeout,
                            VerificationError, WramOverflow)
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.target import SimTarget, make_target
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant
from cnmtune.runtime.toolchain.cache import default_cache_dir
from cnmtune.runtime.workload import DefineValue
from cnmtune.store import CompileRecord, RunRecord, Status, Store, defines_key


@dataclass(frozen=True)
class CompileJob:
    """Compile one pipeline of one kernel at several tasklet counts."""

    kernel_dir: str
    pipeline: str
    tasklets: tuple[int, ...]
    defines: tuple[tuple[str, DefineValue], ...] = ()


@dataclass(frozen=True)
class RunJob:
    """Simulate one binary (rebuilt from a pipeline that made it) at several (DPUs, size) points."""

    kernel_dir: str
    pipeline: str
    tasklets: int
    elf_hash: str
    points: tuple[tuple[int, int], ...]
    sim_config: str
    budget: int
    input_seed: int
    defines: tuple[tuple[str, DefineValue], ...] = ()
    params: tuple[tuple[str, object], ...] = ()
    device: str = "sim"  # or "sim-sampled": the first and last DPU simulated, the result not verified


@dataclass(frozen=True)
class CompileResult:
    """A compile record and, for a usable binary, its features under the default schema."""

    record: CompileRecord
    features: dict[str, float] | None
    feature_seconds: float = 0.0


def _toolchain() -> ProxyToolchain:
    """The proxy toolchain of the build cache the environment names now ($CNMTUNE_CACHE_DIR, ...):
    a process that changes it, a test or a program calling the API, builds where it now points."""
    return _toolchain_in(default_cache_dir())


@lru_cache(maxsize=None)
def _toolchain_in(root: Path) -> ProxyToolchain:
    """One proxy toolchain per build cache and process (its runtime objects looked up once)."""
    return ProxyToolchain(BuildCache(root))


@lru_cache(maxsize=4096)
def _feature_vector(elf_path: str, elf_hash: str) -> tuple[float, ...]:
    """The model's features of one ELF, read once per process: pipelines that build the same binary
    share it (keyed by its hash, not only its cache path)."""
    return tuple(map(float, model_features(elf_path).vector(model_schema())))


@lru_cache(maxsize=64)
def kernel_of(kernel_dir: str) -> Kernel:
    """The kernel of a directory, loaded once per process."""
    return Kernel.load(kernel_dir)


def status_of(exc: CnmtuneError) -> Status:
    """The status a failed compile or run is stored with."""
    for kind, status in ((IramOverflow, Status.IRAM_OVERFLOW), (WramOverflow, Status.WRAM_OVERFLOW),
                         (CompileError, Status.COMPILE_ERROR), (SimTimeout, Status.TIMEOUT),
                         (SimFault, Status.FAULT), (VerificationError, Status.WRONG_RESULT)):
        if isinstance(exc, kind):
            return status
    return Status.ERROR


def compile_job(job: CompileJob) -> list[CompileResult]:
    """Worker side: compile (and extract features of) one pipeline at each tasklet count."""
    kernel = kernel_of(job.kernel_dir)
    schema = model_schema()
    digest = kernel.digest()  # once for the job's builds
    out = []
    for tasklets in job.tasklets:
        variant = Variant.of(kernel, job.pipeline, tasklets, dict(job.defines))
        key = defines_key(dict(variant.defines))
        start = time.perf_counter()
        try:
            binary = _toolchain().compile(variant, digest)
            built = time.perf_counter()
            vector = _feature_vector(str(binary.elf_path), binary.elf_hash)
        except CnmtuneError as exc:
            out.append(CompileResult(CompileRecord(
                kernel.name, job.pipeline, key, tasklets, None, status_of(exc), str(exc),
                time.perf_counter() - start), None))
            continue
        out.append(CompileResult(
            CompileRecord(kernel.name, job.pipeline, key, tasklets, binary.elf_hash, Status.OK,
                          "", binary.seconds, 4 * binary.memory.iram_instructions),
            dict(zip(schema.names, vector)), time.perf_counter() - built))
    return out


def run_host(job: RunJob) -> dict[str, str]:
    """What the time of the job's runs depends on beside the binary, as RunRecord's key fields:
    the kernel (its host program), the defines (as its CompileRecord's: the host reads them too)
    and the workload parameters."""
    kernel = kernel_of(job.kernel_dir)
    variant = Variant.of(kernel, job.pipeline, job.tasklets, dict(job.defines))
    return {"kernel": kernel.name, "defines": defines_key(dict(variant.defines)),
            "params": defines_key(dict(job.params))}


def run_job(job: RunJob) -> list[RunRecord]:
    """Worker side: rebuild the binary (a build-cache hit where it was compiled) and run it."""
    kernel = kernel_of(job.kernel_dir)
    binary = _toolchain().compile(Variant.of(kernel, job.pipeline, job.tasklets, dict(job.defines)))
    target = make_target(job.device, sim_config=job.sim_config, budget=job.budget)
    host = run_host(job)
    if not isinstance(target, SimTarget):
        raise CnmtuneError(f"a run job runs on the simulator (sim or sim-sampled), not {job.device}")
    config_hash = target.config_hash  # '' for a sampled run: not the full run the store keys
    out = []
    for dpus, size in job.points:
        def failed(status: Status, error: str, start: float) -> RunRecord:
            return RunRecord(elf_hash=job.elf_hash, dpus=dpus, tasklets=job.tasklets, size=size,
                             config_hash=config_hash, status=status, error=error,
                             seconds=time.perf_counter() - start, device=target.name, **host)
        start = time.perf_counter()
        if binary.elf_hash != job.elf_hash:
            out.append(failed(Status.ERROR, f"rebuilding {binary.variant.label} gave ELF "
                              f"{binary.elf_hash[:12]}, recorded {job.elf_hash[:12]}: the build "
                              "is not reproducible on this worker", start))
            continue
        try:
            result = target.run_binary(binary, dpus, size, job.input_seed, dict(job.params))
        except CnmtuneError as exc:
            out.append(failed(status_of(exc), str(exc), start))
            continue
        out.append(RunRecord(elf_hash=job.elf_hash, dpus=dpus, tasklets=job.tasklets, size=size,
                             config_hash=config_hash, status=Status.OK, cycles=result.cycles,
                             kernel_seconds=result.kernel_s, transfer_seconds=result.transfer_s,
                             verified=result.verified, seconds=result.wall_s, device=target.name,
                             link_hash=target.link_hash, **host))
    return out


def record_results(store: Store, items: Iterable[CompileResult | RunRecord], schema_hash: str) -> None:
    """Write compile results (with their features under `schema_hash`) and runs in one batch."""
    with store.batch():
        for item in items:
            if isinstance(item, CompileResult):
                store.record_compile(item.record)
                if item.features is not None:
                    store.record_features(item.record.elf_hash, schema_hash, item.features)
            else:
                store.record_run(item)
