"""The trace store: one functional run of a variant, kept on disk so design sweeps re-time it.

A trace set is a directory: `manifest.json` (the variant, the run's DPUs, size, seed and
workload parameters, the DpuConfig it was recorded under, per launch the co-simulated cycles
of every DPU, the host transfer log, the co-simulated totals) and one `<sha>.npz` per distinct
per-DPU trace (the Trace columns and the replay Signature, see runtime/sim/retime.py; DPUs that ran
the same segments share one file). Every file is written atomically and the manifest last, so
a set with a manifest is complete; the manifest holds each file's SHA-256, checked on load.

Sets live under `--traces DIR` or `<cache dir>/traces`, keyed by ELF hash + DPUs + size +
input seed + workload parameters + the recording config's full hash (kernel and link constants:
the set keeps the recorded transfer times): the ELF hash covers the kernel sources, pipeline,
tasklets and defines, and a timing-dependent program may record different segments under
another config.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from cnmtune.atomic import atomic_write
from cnmtune.errors import TraceStoreError
from cnmtune.runtime.sim.retime import Signature, signature_of
from cnmtune.runtime.kernel import Kernel
from cnmtune.runtime.registry import find_kernel
from cnmtune.runtime.sim.config import DpuConfig, RoutineCost
from cnmtune.runtime.sim.device import LEGACY_MODES, SimDevice, Transfer
from cnmtune.runtime.sim.jit import Stopwatch
from cnmtune.runtime.sim.routines import RoutineKind
from cnmtune.runtime.sim.trace import Trace
from cnmtune.runtime.toolchain import Binary, ProxyToolchain, Toolchain, Variant
from cnmtune.runtime.toolchain.cache import TRACES, BuildCache, content_key, default_cache_dir
from cnmtune.wording import counted

__all__ = ["RecordedLaunch", "TraceSet", "config_from_json", "config_to_json", "default_trace_root",
           "kernel_of", "load_trace_set", "obtain_trace_set", "record_trace_set", "save_trace_set", "trace_key"]

FORMAT = 1
MANIFEST = "manifest.json"
_COLUMNS = ("tasklet", "slots", "instructions", "routine_counts", "routine_params", "mram_accesses", "action",
            "arg0", "arg1")


def default_trace_root() -> Path:
    """Where trace sets live unless --traces says otherwise: <cnmtune cache dir>/traces."""
    return default_cache_dir() / TRACES


@dataclass(frozen=True)
class RecordedLaunch:
    """One launch: per DPU its trace, the trace's replay Signature, co-simulated cycles and file."""

    traces: tuple[Trace, ...]
    signatures: tuple[Signature, ...]
    cycles: tuple[int, ...]
    files: tuple[str, ...]
    kernel_s: float


@dataclass(frozen=True)
class TraceSet:
    """One recorded run of a variant on the simulator: every launch's per-DPU traces + transfer log."""

    kernel: str
    kernel_path: str
    variant: str
    pipeline: str
    tasklets: int
    defines: tuple[tuple[str, int | str | None], ...]
    elf_hash: str
    dpus: int
    size: int
    seed: int
    params: tuple[tuple[str, object], ...]
    config: DpuConfig
    launches: tuple[RecordedLaunch, ...]
    transfers: tuple[Transfer, ...]
    kernel_s: float
    host_to_dpu_s: float
    dpu_to_host_s: float
    inter_dpu_s: float
    record_seconds: float
    directory: Path | None = None

    @property
    def label(self) -> str:
        """'va[O2, 16 tasklets, ...] on 4 DPUs, size 4,096'."""
        return f"{self.variant} on {counted(self.dpus, 'DPU')}, size {self.size:,}"

    def manifest(self) -> dict:
        """The JSON manifest (without the per-file checksums, added by save_trace_set)."""
        return {
            "format": FORMAT, "kernel": self.kernel, "kernel_path": self.kernel_path, "variant": self.variant,
            "pipeline": self.pipeline, "tasklets": self.tasklets, "defines": [list(d) for d in self.defines],
            "elf_hash": self.elf_hash, "dpus": self.dpus, "size": self.size, "seed": self.seed,
            "params": dict(self.params), "config": config_to_json(self.config), "config_hash": self.config.hash,
            "launches": [{"kernel_s": launch.kernel_s,
                          "dpus": [{"file": f, "cycles": c, "segments": len(t)}
                                   for f, c, t in zip(launch.files, launch.cycles, launch.traces)]}
                         for launch in self.launches],
            "transfers": [[t.to_dpu, t.kind, t.nbytes, t.nr_dpus, t.inter_dpu, t.memory, t.shared_buffer]
                          for t in self.transfers],
            "times": {"kernel_s": self.kernel_s, "host_to_dpu_s": self.host_to_dpu_s,
                      "dpu_to_host_s": self.dpu_to_host_s, "inter_dpu_s": self.inter_dpu_s},
            "record_seconds": self.record_seconds,
        }


def config_to_json(config: DpuConfig) -> dict:
    """Every DpuConfig constant as JSON (floats round-trip exactly)."""
    out = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "routine_costs"}
    out["routine_costs"] = [[c.name, int(c.kind), c.base, c.per_param] for c in config.routine_costs]
    return out


def config_from_json(data: dict) -> DpuConfig:
    """Inverse of config_to_json. Constants DpuConfig no longer has (the host-link bandwidths before
    issue 41's transfer model) are left out: the run's transfer log is priced by today's model."""
    known = {f.name for f in fields(DpuConfig)}
    scalars = {k: v for k, v in data.items() if k != "routine_costs" and k in known}
    costs = tuple(RoutineCost(name, RoutineKind(kind), base, per) for name, kind, base, per in data["routine_costs"])
    return DpuConfig(**scalars, routine_costs=costs)


def transfer_from_json(record: list) -> Transfer:
    """One transfer of a manifest: [to_dpu, kind, nbytes, DPUs, inter_dpu, memory, shared_buffer];
    records written before issue 41 end after inter_dpu and name the kind by its old mode (serial,
    parallel, broadcast): their memory reads as MRAM, their buffers as one per DPU."""
    kind = LEGACY_MODES.get(record[1], record[1])
    memory, shared = (str(record[5]), bool(record[6])) if len(record) > 5 else ("mram", False)
    return Transfer(bool(record[0]), str(kind), int(record[2]), int(record[3]), bool(record[4]), memory, shared)


def trace_key(elf_hash: str, dpus: int, size: int, seed: int, params: dict, config: DpuConfig) -> str:
    """The store key of a recorded run (see the module docstring)."""
    return content_key("trace-set", str(FORMAT), elf_hash, str(dpus), str(size), str(seed),
                       json.dumps(params, sort_keys=True, default=str), config.full_hash)[:32]


def _trace_arrays(trace: Trace) -> dict[str, np.ndarray]:
    arrays = {name: getattr(trace, name) for name in _COLUMNS}
    arrays["routines"] = np.array(trace.routines, dtype=np.str_)
    return arrays


def _trace_digest(trace: Trace) -> str:
    digest = hashlib.sha256("\0".join(trace.routines).encode())
    for name in _COLUMNS:
        column = np.ascontiguousarray(getattr(trace, name))
        digest.update(f"{name}:{column.dtype.str}:{column.shape}".encode())
        digest.update(column.tobytes())
    return digest.hexdigest()


def record_trace_set(binary: Binary, dpus: int, size: int, seed: int = 0, params: dict | None = None,
                     config: DpuConfig | None = None) -> TraceSet:
    """Run `binary` once on the simulator (verified) and keep every launch's traces and the transfers."""
    stopwatch = Stopwatch()  # a first run's JIT compile is not recording time
    variant = binary.variant
    config = config or DpuConfig.calibrated()
    params = dict(params or {})
    device = SimDevice(dpus, config)
    workload = variant.kernel.workload(size, dpus, variant.nr_tasklets, dict(variant.defines), seed, **params)
    device.load(binary.elf_path)
    inputs = workload.inputs()
    outputs = workload.execute(device, inputs)
    workload.verify(outputs, workload.reference(inputs))
    launches = []
    signatures: dict[str, Signature] = {}
    for number, record in enumerate(device.launches):
        files, sigs = [], []
        for dpu, (timing, trace) in enumerate(zip(record.timings, record.traces)):
            key = _trace_digest(trace)
            if key not in signatures:
                replayed, signatures[key] = signature_of(trace, config, dpu)
                if replayed.cycles != timing.cycles:
                    raise TraceStoreError(f"{variant.label}: launch {number}, DPU {dpu}: replaying the trace gives "
                                          f"{replayed.cycles} cycles, co-simulation {timing.cycles}; "
                                          "it cannot be re-timed")
            files.append(f"{key[:24]}.npz")
            sigs.append(signatures[key])
        launches.append(RecordedLaunch(tuple(record.traces), tuple(sigs), tuple(t.cycles for t in record.timings),
                                       tuple(files), record.kernel_s))
    return TraceSet(
        kernel=variant.kernel.name, kernel_path=str(variant.kernel.root), variant=variant.label,
        pipeline=variant.pipeline.text, tasklets=variant.nr_tasklets, defines=variant.defines,
        elf_hash=binary.elf_hash, dpus=dpus, size=size, seed=seed, params=tuple(sorted(params.items())),
        config=config, launches=tuple(launches), transfers=tuple(device.transfers),
        kernel_s=device.times.kernel_s, host_to_dpu_s=device.times.host_to_dpu_s,
        dpu_to_host_s=device.times.dpu_to_host_s, inter_dpu_s=device.times.inter_dpu_s,
        record_seconds=stopwatch.seconds())


def save_trace_set(trace_set: TraceSet, directory: Path) -> Path:
    """Write the set's trace files, then its manifest (atomically, each); return the directory."""
    directory = Path(directory)
    checksums: dict[str, str] = {}
    for launch in trace_set.launches:
        for file, trace, signature in zip(launch.files, launch.traces, launch.signatures):
            if file in checksums:
                continue
            buffer = io.BytesIO()
            np.savez_compressed(buffer, **_trace_arrays(trace), **signature.to_arrays())
            data = buffer.getvalue()
            atomic_write(directory / file, data)
            checksums[file] = hashlib.sha256(data).hexdigest()
    manifest = trace_set.manifest()
    manifest["files"] = checksums
    atomic_write(directory / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    return directory


def _load_trace(path: Path, checksum: str) -> tuple[Trace, Signature]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceStoreError(f"trace set {path.parent}: {path.name} is missing") from None
    if hashlib.sha256(data).hexdigest() != checksum:
        raise TraceStoreError(f"trace set {path.parent}: {path.name} is corrupt (checksum mismatch); "
                              "delete the set to record it again")
    try:
        with np.load(io.BytesIO(data)) as npz:
            columns = {name: npz[name] for name in _COLUMNS}
            trace = Trace(tuple(str(r) for r in npz["routines"].tolist()), **columns)
            signature = Signature.from_arrays(npz["sig_kind"], npz["sig_id"], npz["sig_item"])
    except (KeyError, ValueError, OSError) as exc:
        raise TraceStoreError(f"trace set {path.parent}: {path.name} is not a trace file ({exc})") from None
    return trace, signature


def load_trace_set(directory: Path) -> TraceSet:
    """Read a trace set written by save_trace_set; TraceStoreError if incomplete or corrupt."""
    directory = Path(directory)
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except FileNotFoundError:
        raise TraceStoreError(f"{directory} holds no trace set (no {MANIFEST})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceStoreError(f"{directory / MANIFEST} is not valid JSON ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise TraceStoreError(f"{directory}: trace set format {manifest.get('format')!r}, "
                              f"this cnmtune reads format {FORMAT}; record it again")
    try:
        config = config_from_json(manifest["config"])
        if config.hash != manifest["config_hash"]:
            raise TraceStoreError(f"{directory}: the recording DpuConfig does not match its hash")
        cache: dict[str, tuple[Trace, Signature]] = {}
        launches = []
        for launch in manifest["launches"]:
            traces, sigs, cycles, files = [], [], [], []
            for entry in launch["dpus"]:
                file = entry["file"]
                if file not in cache:
                    cache[file] = _load_trace(directory / file, manifest["files"][file])
                traces.append(cache[file][0])
                sigs.append(cache[file][1])
                cycles.append(int(entry["cycles"]))
                files.append(file)
            launches.append(RecordedLaunch(tuple(traces), tuple(sigs), tuple(cycles), tuple(files),
                                           float(launch["kernel_s"])))
        times = manifest["times"]
        return TraceSet(
            kernel=manifest["kernel"], kernel_path=manifest["kernel_path"], variant=manifest["variant"],
            pipeline=manifest["pipeline"], tasklets=int(manifest["tasklets"]),
            defines=tuple((k, v) for k, v in manifest["defines"]), elf_hash=manifest["elf_hash"],
            dpus=int(manifest["dpus"]), size=int(manifest["size"]), seed=int(manifest["seed"]),
            params=tuple(sorted(manifest["params"].items())), config=config, launches=tuple(launches),
            transfers=tuple(transfer_from_json(t) for t in manifest["transfers"]),
            kernel_s=float(times["kernel_s"]), host_to_dpu_s=float(times["host_to_dpu_s"]),
            dpu_to_host_s=float(times["dpu_to_host_s"]), inter_dpu_s=float(times["inter_dpu_s"]),
            record_seconds=float(manifest["record_seconds"]),
            directory=directory)
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceStoreError(f"{directory / MANIFEST} is incomplete or malformed ({type(exc).__name__}: {exc})") \
            from None


def kernel_of(trace_set: TraceSet) -> Kernel:
    """The kernel a trace set was recorded from (its directory, else by name)."""
    path = Path(trace_set.kernel_path)
    return Kernel.load(path) if path.is_dir() else find_kernel(trace_set.kernel)


def obtain_trace_set(variant: Variant, dpus: int, size: int, seed: int = 0, params: dict | None = None,
                     config: DpuConfig | None = None, root: Path | None = None,
                     toolchain: Toolchain | None = None, rerecord: bool = False) -> tuple[TraceSet, bool]:
    """The stored trace set of this run, recording (and storing) it first if needed;
    returns (set, whether it was recorded now)."""
    config = config or DpuConfig.calibrated()
    binary = (toolchain or ProxyToolchain()).compile(variant)
    params = dict(params or {})
    key = trace_key(binary.elf_hash, dpus, size, seed, params, config)
    cache = BuildCache() if root is None else None  # sets in the cache dir count toward its bound
    directory = cache.trace_set(key) if cache else Path(root) / key
    if not rerecord and (directory / MANIFEST).is_file():
        return load_trace_set(directory), False
    trace_set = record_trace_set(binary, dpus, size, seed, params, config)
    save_trace_set(trace_set, directory)
    if cache:
        cache.added(directory)
    return load_trace_set(directory), True
