"""The CPU side of an offload decision: the same computation timed on this machine.

Two implementations of a workload's computation:
- native: multithreaded C (OpenMP) for va, red, gemv and bs, compiled at -O3 -march=native by
  the system C compiler ($CC, cc, gcc or clang; `python -m ziglang cc` if there is none, which
  has no OpenMP: then it runs on one thread and says so), loaded with ctypes, checked against
  the workload's numpy reference, timed on one thread and on every core (the faster counts: on
  a loaded machine a parallel region can wait a scheduler time slice for its second thread);
- numpy: the workload's own `reference(inputs)` (vectorised numpy, single-threaded, including
  any conversions it makes), for every kernel.
`cpu_time` times one of them: one warm-up, then `repeats` runs, the median. The inputs are the
workload's at the given size for one DPU and one tasklet, i.e. the computation itself, without
the DPU partitioning's padding or rounding (bs rounds its query count up to DPUs x tasklets).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cnmtune.errors import VerificationError
from cnmtune.runtime.toolchain.cache import BuildCache, content_key
from cnmtune.runtime.workload import Arrays, Workload

__all__ = ["CPU_BASELINES", "CpuTime", "cpu_time", "native_library"]

#: Each CPU implementation by what reports call it.
CPU_BASELINES = {"native": "native C", "numpy": "numpy reference"}

C_SOURCE = r"""
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* below this many elements a parallel region costs more than it saves (thread wake-up) */
#define PARALLEL_MIN 65536

int cnm_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#define VA(name, type) \
    void name(const type *a, const type *b, type *c, int64_t n, int t) { \
        _Pragma("omp parallel for schedule(static) num_threads(t) if(t > 1 && n >= PARALLEL_MIN)") \
        for (int64_t i = 0; i < n; i++) c[i] = a[i] + b[i]; \
    }
VA(va_u8, uint8_t) VA(va_u16, uint16_t) VA(va_u32, uint32_t) VA(va_u64, uint64_t)
VA(va_f32, float) VA(va_f64, double)

/* integer sums wrap modulo 2^64 after sign or zero extension, as the numpy reference's astype(uint64) */
#define RED(name, type, acc) \
    acc name(const type *a, int64_t n, int t) { \
        acc s = 0; \
        _Pragma("omp parallel for reduction(+:s) schedule(static) num_threads(t) if(t > 1 && n >= PARALLEL_MIN)") \
        for (int64_t i = 0; i < n; i++) s += (acc)a[i]; \
        return s; \
    }
RED(red_i8, int8_t, uint64_t) RED(red_i16, int16_t, uint64_t) RED(red_i32, int32_t, uint64_t)
RED(red_u32, uint32_t, uint64_t) RED(red_u64, uint64_t, uint64_t)
RED(red_f32, float, double) RED(red_f64, double, double)

void gemv_u32(const uint32_t *a, const uint32_t *x, uint32_t *y, int64_t rows, int64_t cols, int t) {
    #pragma omp parallel for schedule(static) num_threads(t) if(t > 1 && rows * cols >= PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++) {
        const uint32_t *row = a + i * cols;
        uint32_t s = 0;
        for (int64_t j = 0; j < cols; j++) s += row[j] * x[j];
        y[i] = s;
    }
}

void bs_i64(const int64_t *array, int64_t n, const int64_t *queries, int64_t *found, int64_t m, int t) {
    #pragma omp parallel for schedule(static) num_threads(t) if(t > 1 && m >= PARALLEL_MIN / 64)
    for (int64_t k = 0; k < m; k++) {
        int64_t q = queries[k], lo = 0, hi = n;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (array[mid] < q) lo = mid + 1; else hi = mid;
        }
        found[k] = (lo < n && array[lo] == q) ? lo : -1;
    }
}
"""

_VA = {np.dtype(t).str: f"va_{s}" for t, s in ((np.int8, "u8"), (np.uint8, "u8"), (np.int16, "u16"),
                                                (np.uint16, "u16"), (np.int32, "u32"), (np.uint32, "u32"),
                                                (np.int64, "u64"), (np.uint64, "u64"), (np.float32, "f32"),
                                                (np.float64, "f64"))}
_RED = {np.dtype(t).str: (f"red_{s}", r) for t, s, r in (
    (np.int8, "i8", ctypes.c_uint64), (np.int16, "i16", ctypes.c_uint64), (np.int32, "i32", ctypes.c_uint64),
    (np.uint32, "u32", ctypes.c_uint64), (np.int64, "u64", ctypes.c_uint64), (np.uint64, "u64", ctypes.c_uint64),
    (np.float32, "f32", ctypes.c_double), (np.float64, "f64", ctypes.c_double))}


@dataclass(frozen=True)
class NativeLibrary:
    """The compiled C baseline: its ctypes handle, compiler and thread count."""

    lib: ctypes.CDLL
    compiler: str
    threads: int
    openmp: bool


def _compilers() -> list[list[str]]:
    found = [os.environ["CC"].split()] if os.environ.get("CC") else []
    found += [[path] for name in ("cc", "gcc", "clang") if (path := shutil.which(name))]
    return found + [[sys.executable, "-m", "ziglang", "cc"]]


_LIBRARY: list[NativeLibrary | None] = []


def native_library() -> NativeLibrary | None:
    """Compile (once, cached on disk) and load the C baseline; None if no compiler works here."""
    if _LIBRARY:
        return _LIBRARY[0]
    cache = BuildCache()
    library = None
    for compiler in _compilers():
        for flags in (["-O3", "-march=native", "-fopenmp"], ["-O3", "-fopenmp"], ["-O3", "-march=native"], ["-O3"]):
            key = content_key("cpu-baseline", C_SOURCE, *compiler, *flags)
            path = cache.path("cpu-baseline", key, ".so")
            if not path.is_file():
                with tempfile.TemporaryDirectory(prefix="cnmtune-cpu-") as tmp:
                    source, out = Path(tmp) / "baseline.c", Path(tmp) / "baseline.so"
                    source.write_text(C_SOURCE)
                    try:
                        done = subprocess.run([*compiler, *flags, "-shared", "-fPIC", str(source), "-o", str(out)],
                                              capture_output=True, timeout=120, check=False)
                    except (OSError, subprocess.TimeoutExpired):
                        break  # this compiler does not run: try the next one
                    if done.returncode != 0:
                        continue
                    cache.put("cpu-baseline", key, ".so", out.read_bytes())
            try:
                lib = ctypes.CDLL(str(path))
            except OSError:
                continue
            library = NativeLibrary(lib, " ".join(Path(compiler[0]).name if i == 0 else c
                                                  for i, c in enumerate(compiler)) + " " + " ".join(flags),
                                    int(lib.cnm_threads()), "-fopenmp" in flags)
            break
        if library is not None:
            break
    _LIBRARY.append(library)
    return library


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def _native_runner(workload: Workload, inputs: Arrays, lib: ctypes.CDLL,
                   threads: int) -> tuple[Callable[[], Arrays], str] | None:
    """A zero-argument function computing the workload's outputs in C on `threads` threads, or None."""
    name = workload.name
    n, t = ctypes.c_int64, ctypes.c_int(threads)
    if name == "va" and inputs["A"].dtype.str in _VA:
        a, b = (np.ascontiguousarray(inputs[k]) for k in ("A", "B"))
        c = np.empty_like(a)
        fn = getattr(lib, _VA[a.dtype.str])

        def run() -> Arrays:
            fn(_pointer(a), _pointer(b), _pointer(c), n(a.size), t)
            return {"C": c}
        return run, "va: c[i] = a[i] + b[i]"
    if name == "red" and inputs["A"].dtype.str in _RED:
        a = np.ascontiguousarray(inputs["A"])
        symbol, restype = _RED[a.dtype.str]
        fn = getattr(lib, symbol)
        fn.restype = restype

        def run() -> Arrays:
            return {"total": np.array([fn(_pointer(a), n(a.size), t)]).astype(a.dtype)}
        return run, "red: sum (uint64 wrap-around or double)"
    if name == "gemv" and inputs["A"].dtype == np.uint32 and inputs["x"].dtype == np.uint32:
        a, x = np.ascontiguousarray(inputs["A"]), np.ascontiguousarray(inputs["x"])
        y = np.empty(a.shape[0], dtype=np.uint32)

        def run() -> Arrays:
            lib.gemv_u32(_pointer(a), _pointer(x), _pointer(y), n(a.shape[0]), n(a.shape[1]), t)
            return {"y": y}
        return run, "gemv: y = A x (uint32)"
    if name == "bs" and inputs["array"].dtype == np.int64 and inputs["queries"].dtype == np.int64:
        array, queries = np.ascontiguousarray(inputs["array"]), np.ascontiguousarray(inputs["queries"])
        found = np.empty(queries.size, dtype=np.int64)

        def run() -> Arrays:
            lib.bs_i64(_pointer(array), n(array.size), _pointer(queries), _pointer(found), n(queries.size), t)
            return {"found": found, "largest_found": np.array([found.max()])}  # PrIM's result: the largest
        return run, "bs: binary search per query"
    return None


@dataclass(frozen=True)
class CpuTime:
    """A median CPU time and what produced it."""

    seconds: float
    implementation: str  # "native" or "numpy"
    label: str
    runs: int
    samples: tuple[float, ...]

    def to_dict(self) -> dict:
        """JSON-safe form."""
        return {"seconds": self.seconds, "implementation": self.implementation, "label": self.label,
                "runs": self.runs}


def _median_time(run: Callable[[], object], repeats: int) -> tuple[float, tuple[float, ...]]:
    run()  # warm-up: page faults, thread pool start
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), tuple(samples)


def cpu_time(workload: Workload, inputs: Arrays, implementation: str = "auto", repeats: int = 7) -> CpuTime:
    """Median time of the workload's computation on this machine ('auto': native where covered, else numpy)."""
    if implementation not in ("auto", "native", "numpy"):
        raise ValueError(f"unknown CPU implementation {implementation!r}; choose auto, native or numpy")
    if implementation != "numpy":
        library = native_library()
        best = None
        covered = library is not None and _native_runner(workload, inputs, library.lib, 1) is not None
        if covered:
            expected = workload.reference(inputs)
            # one thread and all threads: on a loaded machine a parallel region can wait a whole
            # scheduler time slice for its second thread, so the faster median is this machine's time
            for threads in sorted({1, library.threads}):
                run, what = _native_runner(workload, inputs, library.lib, threads)
                try:
                    workload.verify({k: np.asarray(v).copy() for k, v in run().items()}, expected)
                except VerificationError:  # a wrong native result is never timed
                    continue
                seconds, samples = _median_time(run, repeats)
                if best is None or seconds < best[0]:
                    best = (seconds, samples, what, threads)
        if best is not None:
            seconds, samples, what, threads = best
            omp = "OpenMP" if library.openmp else "no OpenMP"
            return CpuTime(seconds, "native", f"native C ({what}; {library.compiler}; {omp}, {threads} of "
                                              f"{library.threads} threads), median of {repeats}", repeats, samples)
        if implementation == "native":
            why = ("no working C compiler" if library is None else f"no C implementation for {workload.name}"
                   if not covered else f"the C result of {workload.name} does not verify")
            raise ValueError(f"native CPU baseline unavailable: {why}")
    seconds, samples = _median_time(lambda: workload.reference(inputs), repeats)
    return CpuTime(seconds, "numpy", f"numpy reference of {workload.name} (1 thread), median of {repeats}", repeats,
                   samples)
