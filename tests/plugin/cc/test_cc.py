"""cnmtune-cc on real compiles: the proxy build, the tuning cache, tuning on a miss, the example
Makefile, dependency files, errors, and the UPMEM SDK path against a stand-in SDK."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cnmtune.plugin.cc.args import UsageError, parse_args
from cnmtune.plugin.tune.cache import CACHE_FILE, TunedEntry, TuningCache, canonical_defines, key_for
from cnmtune.runtime.toolchain import Binary, Variant
from cnmtune.runtime.toolchain.layout import read_memory_use

REPO = Path(__file__).resolve().parents[3]
VA = REPO / "benchmarks" / "prim" / "va"
SOURCE = VA / "dpu" / "task.c"
INCLUDES = [VA / "support", VA.parent / "common"]
CFLAGS = ["-DNR_TASKLETS=16", *(f"-I{d}" for d in INCLUDES)]
EXAMPLE = REPO / "examples" / "makefile"
PIPELINE = "sroa,instcombine,simplifycfg,loop-rotate"  # distinctive: not what -O2 builds
_SCRUBBED = ("CNMTUNE_TUNE", "CNMTUNE_PIPELINE", "CNMTUNE_TOOLCHAIN", "CNMTUNE_TUNING_CACHE", "CNMTUNE_MODEL",
             "CNMTUNE_UPMEM_SDK")


def _cc_command() -> list[str]:
    script = Path(sys.executable).parent / "cnmtune-cc"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "cnmtune.plugin.cc.driver"]


CC = _cc_command()


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def run_cc(tmp_path, cache_dir):
    """Run cnmtune-cc in tmp_path with an isolated cache; extra environment as keywords."""
    def run(*args: str, **env: str) -> subprocess.CompletedProcess:
        environ = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        environ.update(CNMTUNE_CACHE_DIR=str(cache_dir), **env)
        return subprocess.run([*CC, *map(str, args)], cwd=tmp_path, env=environ, capture_output=True, text=True,
                              timeout=300)
    return run


def _record(cache_dir: Path, pipeline: str, tasklets: int = 16, toolchain: str = "proxy") -> None:
    key = key_for(SOURCE, {"NR_TASKLETS": tasklets}, toolchain, INCLUDES)
    TuningCache(cache_dir / CACHE_FILE).record(key, TunedEntry(pipeline=pipeline, tasklets=tasklets, kernel="va"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the proxy build ---------------------------------------------------------------------------


def test_compile_and_link_va_like_the_proxy_toolchain(run_cc, tmp_path, va, va_o2):
    compiled = run_cc(*CFLAGS, "-O2", "-c", SOURCE, "-o", "task.o")
    assert compiled.returncode == 0, compiled.stderr
    miss = [line for line in compiled.stderr.splitlines() if line.startswith("cnmtune-cc:")]
    assert miss == [(f"cnmtune-cc: {SOURCE}: no tuned pipeline in the tuning cache for (proxy, NR_TASKLETS=16, "
                     f"BL=10, INT32=1); using O2 (tune with `cnmtune tune --app DIR` for an application, "
                     "`cnmtune tune KERNEL` for a kernel, or build with CNMTUNE_TUNE=1)")]
    linked = run_cc("-DNR_TASKLETS=16", "task.o", "-o", "va.elf")
    assert linked.returncode == 0, linked.stderr
    elf = tmp_path / "va.elf"
    assert _sha(elf) == va_o2.elf_hash  # byte for byte what `cnmtune compile va -p O2 -t 16` builds

    from cnmtune.runtime.execute import run_binary

    binary = Binary(Variant.of(va, "O2", 16), elf, _sha(elf), "cnmtune-cc", read_memory_use(elf), 0.0)
    result = run_binary(binary, 2, 4096)
    assert result.verified and result.cycles > 0


def test_one_step_build_without_an_o_level_defaults_to_o2(run_cc, tmp_path, va_o2):
    result = run_cc(*CFLAGS, SOURCE, "-o", "va.elf")
    assert result.returncode == 0, result.stderr
    assert "using O2" in result.stderr
    assert _sha(tmp_path / "va.elf") == va_o2.elf_hash


def test_stack_size_define_builds_what_the_toolchain_builds(run_cc, tmp_path, toolchain, va):
    """-DSTACK_SIZE_DEFAULT=4096 gives the same ELF through cnmtune-cc and through a Variant (what
    `cnmtune compile/run -D` build), with 4 KiB stacks in its features, and it runs verified."""
    from cnmtune.costmodel import extract_features
    from cnmtune.runtime.execute import run_binary

    flags = ["-DNR_TASKLETS=4", "-DSTACK_SIZE_DEFAULT=4096"]
    built = run_cc(*flags, *CFLAGS[1:], "-O2", SOURCE, "-o", "va.elf")
    assert built.returncode == 0, built.stderr
    elf = tmp_path / "va.elf"
    binary = toolchain.compile(Variant.of(va, "O2", 4, {"STACK_SIZE_DEFAULT": 4096}))
    assert _sha(elf) == binary.elf_hash
    assert extract_features(elf).footprint.stack_size == 4096 and read_memory_use(elf).wram_stack_bytes == 4 * 4096
    assert run_binary(binary, 2, 4096).verified


def test_tuned_pipeline_from_the_cache(run_cc, tmp_path, cache_dir, toolchain, va):
    _record(cache_dir, PIPELINE)
    tuned = run_cc(*CFLAGS, "-O2", "-c", SOURCE, "-o", "tuned.o")
    assert tuned.returncode == 0, tuned.stderr
    assert tuned.stderr.strip() == f"cnmtune-cc: {SOURCE}: tuned pipeline {PIPELINE} (cache)"
    plain = run_cc(*CFLAGS, "-O2", "-c", SOURCE, "-o", "o2.o", CNMTUNE_TUNING_CACHE="0")
    assert plain.returncode == 0 and plain.stderr == ""
    assert (tmp_path / "tuned.o").read_bytes() != (tmp_path / "o2.o").read_bytes()
    linked = run_cc("-DNR_TASKLETS=16", "tuned.o", "-o", "tuned.elf")
    assert linked.returncode == 0, linked.stderr
    assert _sha(tmp_path / "tuned.elf") == toolchain.compile(Variant.of(va, PIPELINE, 16)).elf_hash
    # the workload's defaults spelled out are the same key; another tasklet count or BL is not
    same = run_cc(*CFLAGS, "-DBL=10", "-DINT32", "-O3", "-c", SOURCE, "-o", "same.o")
    assert f"tuned pipeline {PIPELINE} (cache)" in same.stderr
    assert (tmp_path / "same.o").read_bytes() == (tmp_path / "tuned.o").read_bytes()
    for flags in (["-DNR_TASKLETS=8"], ["-DNR_TASKLETS=16", "-DBL=8"]):
        other = run_cc(*flags, *CFLAGS[1:], "-c", SOURCE, "-o", "other.o")
        assert other.returncode == 0 and "no tuned pipeline" in other.stderr


def test_pipeline_from_the_environment_and_a_miss_at_o3(run_cc, tmp_path):
    forced = run_cc(*CFLAGS, "-c", SOURCE, "-o", "forced.o", CNMTUNE_PIPELINE="O0")
    assert forced.stderr.strip() == f"cnmtune-cc: {SOURCE}: pipeline O0 (CNMTUNE_PIPELINE)"
    o3 = run_cc(*CFLAGS, "-O3", "-c", SOURCE, "-o", "o3.o")
    assert o3.returncode == 0 and "; using O3 " in o3.stderr


def test_assembly_llvm_ir_and_preprocessing(run_cc, tmp_path):
    assert run_cc(*CFLAGS, "-S", SOURCE, "-o", "task.s").returncode == 0
    assert "vector_add" in (tmp_path / "task.s").read_text()
    assert run_cc(*CFLAGS, "-S", "-emit-llvm", SOURCE, "-o", "task.ll").returncode == 0
    assert "target triple = \"riscv32" in (tmp_path / "task.ll").read_text()
    pre = run_cc(*CFLAGS, "-E", SOURCE)
    assert pre.returncode == 0 and "va_arguments_t DPU_INPUT_ARGUMENTS" in pre.stdout


# -- the key -----------------------------------------------------------------------------------


def test_key_defines_are_canonical(va):
    assert canonical_defines({"NR_TASKLETS": "16"}, va.workload) == canonical_defines(
        {"NR_TASKLETS": 16, "BL": 10, "INT32": None, "STACK_SIZE_DEFAULT": 1024}, va.workload)
    assert dict(canonical_defines({})) == {"NR_TASKLETS": "1", "STACK_SIZE_DEFAULT": "1024"}
    assert dict(canonical_defines({"X": None, "Y": "2"}))["X"] == "1"
    # a define the workload refuses is kept as given rather than failing the build
    assert dict(canonical_defines({"BL": 99}, va.workload))["BL"] == "99"
    key = key_for(SOURCE, {"NR_TASKLETS": 16}, "proxy", INCLUDES)
    assert key.describe() == "proxy, NR_TASKLETS=16, BL=10, INT32=1"
    assert key.digest != key_for(SOURCE, {"NR_TASKLETS": 16}, "upmem", INCLUDES).digest


def test_key_follows_local_headers_not_paths(tmp_path):
    def kernel(root: Path, header: str) -> Path:
        (root / "dpu").mkdir(parents=True)
        (root / "inc").mkdir()
        (root / "inc" / "params.h").write_text(header)
        (root / "dpu" / "task.c").write_text('#include <defs.h>\n#include "params.h"\nint main(void) { return N; }\n')
        return root / "dpu" / "task.c"

    one = kernel(tmp_path / "one", "#define N 1\n")
    copy = kernel(tmp_path / "copy", "#define N 1\n")
    two = kernel(tmp_path / "two", "#define N 2\n")
    keys = [key_for(src, {}, "proxy", [src.parent.parent / "inc"]).source_hash for src in (one, copy, two)]
    assert keys[0] == keys[1] != keys[2]
    # without the include directory the header is not found, so not hashed
    assert key_for(two, {}, "proxy").source_hash == key_for(one, {}, "proxy").source_hash


def test_cache_lookup_record_and_replace(tmp_path):
    cache = TuningCache(tmp_path / "t.sqlite")
    key = key_for(SOURCE, {"NR_TASKLETS": 4}, "proxy", INCLUDES)
    assert cache.lookup(key) is None and not cache.path.exists()
    cache.record(key, TunedEntry(pipeline="O3", tasklets=4, measured_s=1e-3))
    cache.record(key, TunedEntry(pipeline=PIPELINE, tasklets=4, measured_s=5e-4, tuner={"pipelines": 50}))
    entry = cache.lookup(key)
    assert entry.pipeline == PIPELINE and entry.tuner == {"pipelines": 50} and entry.recorded_at
    assert [(k.digest, e.pipeline) for k, e in cache.entries()] == [(key.digest, PIPELINE)]


def test_record_tune_keeps_the_choice_unless_the_default_ran_faster(tmp_path, va):
    from cnmtune.plugin.tune import Candidate, TuneReport, TuneSpec
    from cnmtune.plugin.tune.cache import record_tune

    def candidate(pipelines, tasklets, dpus, seconds):
        return Candidate(pipelines, tasklets, dpus, "h", predicted_s=seconds, measured_s=seconds, status="verified")

    chosen, other, four = candidate(["sroa"], 16, 2, 0.30), candidate(["dce"], 16, 1, 0.39), candidate(["O3"], 4, 2, 0.5)
    spec = TuneSpec("va", size="small")
    cache = TuningCache(tmp_path / "t.sqlite")

    def recorded(default):
        report = TuneReport("va", 4096, 9, 4, [chosen, other, four], chosen, default)
        return {e.tasklets: (e.pipeline, e.chosen) for _, e in record_tune(cache, va, spec, report)}

    assert recorded(candidate(["O1", "O2"], 16, 2, 0.35)) == {16: ("sroa", True), 4: ("O3", False)}
    # the default build (same ELF as O1, named O2) beat the choice on as many DPUs: O2 is recorded
    assert recorded(candidate(["O1", "O2"], 16, 2, 0.22)) == {16: ("O2", False), 4: ("O3", False)}
    assert cache.lookup(key_for(SOURCE, {"NR_TASKLETS": 16}, "proxy", INCLUDES)).pipeline == "O2"


# -- arguments, dependency files, errors ---------------------------------------------------------


def test_argument_parsing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.o").write_bytes(b"")
    inv = parse_args(["-c", "-oout.o", "-DA", "-D", "B=2", "-DC=x=y", "-UA", "-Iinc", "-I", "other", "-Os",
                      "-std=c11", "-Wall", "-g", "-fPIC", "-MD", "-MF", "x.d", "-MTt", "-MP", str(SOURCE)])
    assert inv.mode == "compile" and inv.output == "out.o" and inv.level == "Os"
    assert inv.defines == {"B": "2", "C": "x=y"}
    assert inv.pp_flags == ["-DA", "-DB=2", "-DC=x=y", "-UA", "-Iinc", "-Iother"]
    assert inv.include_dirs == ["inc", "other"] and inv.cc_flags == ["-std=c11", "-Wall"]
    assert (inv.deps.mode, inv.deps.file, inv.deps.targets, inv.deps.phony) == ("MD", "x.d", [("-MT", "t")], True)
    link = parse_args(["a.o", "-o", "prog", "-L", "lib", "-lm", "-Wl,--print-map,-q", "-DNR_TASKLETS=4"])
    assert link.mode == "link" and [i.path for i in link.inputs] == ["a.o"] and not link.sources
    assert link.ld_args == ["-Llib", "-lm", "--print-map", "-q"]
    assert parse_args(["-O", "-c", str(SOURCE)]).level == "O1" and parse_args(["-E", str(SOURCE)]).mode == "preprocess"
    for bad in (["--bogus", str(SOURCE)], ["-O7", str(SOURCE)], ["-x", "c++", str(SOURCE)], ["-D", "1X", str(SOURCE)],
                ["-c", "missing.c"], ["missing.o"], ["-o"]):
        with pytest.raises(UsageError):
            parse_args(bad)


def test_dependency_file_for_make(run_cc, tmp_path):
    result = run_cc(*CFLAGS, "-MD", "-MP", "-c", SOURCE, "-obuild/task.o")
    assert result.returncode == 0, result.stderr
    depfile = (tmp_path / "build" / "task.d").read_text()
    assert depfile.startswith(f"build/task.o: {SOURCE}")
    assert str(VA / "support" / "common.h") in depfile and "elem_type.h" in depfile
    assert f"\n{VA / 'support' / 'common.h'}:" in depfile  # -MP: a phony target per header
    named = run_cc(*CFLAGS, "-MMD", "-MF", "deps/x.d", "-MT", "custom", "-c", SOURCE, "-o", "t.o")
    assert named.returncode == 0 and (tmp_path / "deps" / "x.d").read_text().startswith("custom: ")


def test_broken_c_prints_the_compiler_diagnostics_and_exits_1(run_cc, tmp_path):
    (tmp_path / "bad.c").write_text("#include <defs.h>\nint main(void) { return undeclared; }\n")
    result = run_cc("-c", "bad.c", "-o", "bad.o", "-MD")
    assert result.returncode == 1
    assert "bad.c:2:25: error: use of undeclared identifier 'undeclared'" in result.stderr
    assert "1 error generated." in result.stderr and "zig:" not in result.stderr
    assert not (tmp_path / "bad.o").exists() and not (tmp_path / "bad.d").exists()


def test_warnings_are_shown_and_the_compile_goes_on(run_cc, tmp_path):
    (tmp_path / "warn.c").write_text("int f(int a) { int x; if (a) x = 1; return x; }\n"
                                     "int main(void) { return f(1); }\n")
    result = run_cc("-Wall", "-c", "warn.c", "-o", "warn.o", CNMTUNE_TUNING_CACHE="0")
    assert result.returncode == 0 and (tmp_path / "warn.o").is_file()
    assert "warn.c:1:27: warning: variable 'x' is used uninitialized whenever 'if' condition is false" \
        in result.stderr
    assert "1 warning generated." in result.stderr and "zig:" not in result.stderr


# -- warnings: what the UPMEM SDK's clang (10-12) accepted ----------------------------------------

# an MRAM address held in a uint32_t and passed to mram_read without a cast, as public DPU sources
# do: the SDK's clang warns (-Wint-conversion), clang 16 and later make it an error by default
UINT32_ADDRESS = """#include <stdint.h>
#include <defs.h>
#include <mram.h>

__host uint32_t first;

int main(void) {
    __dma_aligned uint32_t cache[8];
    uint32_t address = (uint32_t)DPU_MRAM_HEAP_POINTER + me() * sizeof(cache);
    mram_read(address, cache, sizeof(cache));
    first = cache[0];
    return 0;
}
"""
INT_CONVERSION = "uint32.c:10:15: {} incompatible integer to pointer conversion passing 'uint32_t'"


@pytest.fixture
def uint32_source(tmp_path) -> str:
    (tmp_path / "uint32.c").write_text(UINT32_ADDRESS)
    return "uint32.c"


def test_sdk_warnings_stay_warnings_and_are_shown(run_cc, tmp_path, uint32_source):
    result = run_cc("-DNR_TASKLETS=4", "-MD", "-c", uint32_source, "-o", "uint32.o", CNMTUNE_TUNING_CACHE="0")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "uint32.o").is_file() and (tmp_path / "uint32.d").is_file()
    assert INT_CONVERSION.format("warning:") in result.stderr and "[-Wint-conversion]" in result.stderr
    assert result.stderr.count("1 warning generated.") == 1  # once, though -MD runs the front end twice
    assert "zig:" not in result.stderr


@pytest.mark.parametrize("werror", ["-Werror=int-conversion", "-Werror"])
def test_werror_makes_an_sdk_warning_an_error_again(run_cc, tmp_path, uint32_source, werror):
    """-Werror / -Werror=NAME after cnmtune's defaults: the build fails on the diagnostic, named; a clean
    source still builds under them."""
    assert run_cc("-c", uint32_source, "-o", "plain.o", CNMTUNE_TUNING_CACHE="0").returncode == 0
    failed = run_cc("-Wall", werror, "-c", uint32_source, "-o", "uint32.o", CNMTUNE_TUNING_CACHE="0")
    assert failed.returncode == 1
    assert INT_CONVERSION.format("error:") in failed.stderr and "-Wint-conversion]" in failed.stderr
    assert "1 error generated." in failed.stderr and not (tmp_path / "uint32.o").exists()
    (tmp_path / "clean.c").write_text("int main(void) { return 0; }\n")
    clean = run_cc(werror, "-MMD", "clean.c", "-o", "clean.elf", CNMTUNE_TUNING_CACHE="0")
    assert clean.returncode == 0 and clean.stderr == "" and (tmp_path / "clean.elf").is_file()


def test_warning_flags_silence_an_sdk_warning(run_cc, tmp_path, uint32_source):
    """-Wno-int-conversion and -w silence it, also in a -Werror build; -Wno-error=NAME after -Werror
    keeps it a warning."""
    for flags in (["-Wno-int-conversion"], ["-Werror", "-Wno-int-conversion"], ["-Werror", "-w"]):
        result = run_cc(*flags, "-c", uint32_source, "-o", "uint32.o", CNMTUNE_TUNING_CACHE="0")
        assert result.returncode == 0 and result.stderr == "", (flags, result.stderr)
    warned = run_cc("-Werror", "-Wno-error=int-conversion", "-c", uint32_source, "-o", "uint32.o",
                    CNMTUNE_TUNING_CACHE="0")
    assert warned.returncode == 0 and INT_CONVERSION.format("warning:") in warned.stderr


def test_makefile_style_build_with_wall_wextra(run_cc, tmp_path, toolchain, make_kernel):
    """`$(CC) $(CPPFLAGS) -O2 -Wall -Wextra -MMD -MP -c` then the link: the one warning is shown and the
    program is the ELF cnmtune's own (quiet) build of the same source makes."""
    kernel = make_kernel(UINT32_ADDRESS)
    source = kernel.root / "dpu" / "task.c"  # the same path: the object names its source file
    compiled = run_cc("-DNR_TASKLETS=4", "-O2", "-Wall", "-Wextra", "-MMD", "-MP", "-c", source,
                      "-o", "build/task.o", CNMTUNE_TUNING_CACHE="0")
    assert compiled.returncode == 0, compiled.stderr
    assert f"{source}:10:15: warning: incompatible integer to pointer conversion" in compiled.stderr
    assert "1 warning generated." in compiled.stderr and (tmp_path / "build" / "task.d").is_file()
    linked = run_cc("-DNR_TASKLETS=4", "build/task.o", "-o", "build/task.elf")
    assert linked.returncode == 0 and linked.stderr == "", linked.stderr
    assert _sha(tmp_path / "build" / "task.elf") == toolchain.compile(Variant.of(kernel, "O2", 4)).elf_hash


def test_link_errors_exit_1(run_cc, tmp_path):
    (tmp_path / "nomain.c").write_text("int helper(void) { return 1; }\n")
    assert run_cc("-c", "nomain.c", "-o", "nomain.o").returncode == 0
    (tmp_path / "undef.c").write_text("int missing(void);\nint main(void) { return missing(); }\n")
    result = run_cc("undef.c", "-o", "prog.elf")
    assert result.returncode == 1 and "undefined symbol: missing" in result.stderr
    assert not (tmp_path / "prog.elf").exists()


@pytest.mark.parametrize("args, message", [
    ((), "no input files"),
    (("--frobnicate", "x.o"), "unsupported option '--frobnicate' (see cnmtune-cc --help)"),
    (("-c", "-o", "x.o", "a.c", "b.c"), "cannot specify -o when generating multiple output files"),
    (("-DNR_TASKLETS=40", "a.c"), "-DNR_TASKLETS=40: a DPU runs 1..24 tasklets"),
])
def test_usage_errors_exit_2(run_cc, tmp_path, args, message):
    for name in ("a.c", "b.c"):
        (tmp_path / name).write_text("int main(void) { return 0; }\n")
    result = run_cc(*args)
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1] == f"cnmtune-cc: error: {message}", \
        result.stderr


# -- the example Makefile -------------------------------------------------------------------------


def test_example_makefile_builds_with_the_cached_tuned_pipeline(tmp_path, cache_dir, toolchain, va):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    _record(cache_dir, PIPELINE)
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    environ = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and k not in ("CC", "CFLAGS", "MAKEFLAGS")}
    environ["CNMTUNE_CACHE_DIR"] = str(cache_dir)
    make = ["make", "-C", str(example), f"CC={CC[0]}" if len(CC) == 1 else f"CC={' '.join(CC)}", f"KERNEL={VA}"]
    result = subprocess.run(make, env=environ, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"cnmtune-cc: {VA}/dpu/task.c: tuned pipeline {PIPELINE} (cache)" in result.stderr
    assert "-MMD -MP -c" in result.stdout and " -o build/va.elf" in result.stdout  # two steps
    elf = example / "build" / "va.elf"
    assert _sha(elf) == toolchain.compile(Variant.of(va, PIPELINE, 16)).elf_hash
    again = subprocess.run(make, env=environ, capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in again.stdout
    header = example / "build" / "task.d"
    assert "common.h" in header.read_text()


# -- tuning on a miss and `cnmtune tune --save` -------------------------------------------------


TUNE_ENV = {"CNMTUNE_TUNE": "1", "CNMTUNE_TUNE_PIPELINES": "6", "CNMTUNE_TUNE_DPUS": "2",
            "CNMTUNE_TUNE_TOP_K": "2", "CNMTUNE_TUNE_WORKERS": "1"}


def test_tune_on_a_miss_records_and_reuses(run_cc, cache_dir, random_model):
    """A build with -DBL=8 tunes va built with BL=8 and records it under this compile's key."""
    first = run_cc(*CFLAGS, "-DBL=8", "-c", SOURCE, "-o", "a.o", CNMTUNE_MODEL=str(random_model), **TUNE_ENV)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.strip().splitlines()
    assert lines[0].startswith(f"cnmtune-cc: {SOURCE}: tuning va (6 pipelines, size small, NR_TASKLETS=16, BL=8")
    assert lines[-1].startswith(f"cnmtune-cc: {SOURCE}: tuned pipeline ") and lines[-1].endswith("(tuned now)")
    pipeline = lines[-1].split("tuned pipeline ")[1].split(" (")[0]
    cache = TuningCache(cache_dir / CACHE_FILE)
    entry = cache.lookup(key_for(SOURCE, {"NR_TASKLETS": 16, "BL": 8}, "proxy", INCLUDES))
    assert entry.pipeline == pipeline and entry.kernel == "va" and entry.tasklets == 16
    assert entry.tuner["pipelines"] == 6 and entry.measured_s > 0
    assert cache.lookup(key_for(SOURCE, {"NR_TASKLETS": 16}, "proxy", INCLUDES)) is None  # BL=10 is another build
    second = run_cc(*CFLAGS, "-DBL=8", "-c", SOURCE, "-o", "b.o", **TUNE_ENV)  # a hit: no model needed
    assert second.stderr.strip() == f"cnmtune-cc: {SOURCE}: tuned pipeline {pipeline} (cache)"


def test_tune_on_a_miss_needs_a_model_or_a_workload(run_cc, tmp_path):
    missing = run_cc(*CFLAGS, "-c", SOURCE, "-o", "a.o", CNMTUNE_MODEL=str(tmp_path / "none.onnx"), **TUNE_ENV)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == (
        f"cnmtune-cc: error: no cost model at {tmp_path / 'none.onnx'}: neither a file nor 'shipped' (the model "
        f"cnmtune ships); set CNMTUNE_MODEL=path/to/model.onnx to tune (see `cnmtune model train`)")
    (tmp_path / "loose.c").write_text("int main(void) { return 0; }\n")
    loose = run_cc("-c", "loose.c", **TUNE_ENV)
    assert loose.returncode == 0 and (tmp_path / "loose.o").is_file()
    assert "loose.c: cannot tune a source without a workload" in loose.stderr and "; using O2" in loose.stderr
    other = run_cc(*CFLAGS, "-DBL=2", "-O3", "-c", SOURCE, "-o", "bl2.o", **TUNE_ENV)
    assert other.returncode == 0 and other.stderr.strip() == (
        f"cnmtune-cc: {SOURCE}: cannot tune with these defines (va: BL=2 is not valid; choose one of 3, 4, 5, 6, "
        f"7, 8, 9, 10, 11); using O3")


def test_cnmtune_tune_saves_into_the_tuning_cache(cache_dir, random_model, monkeypatch):
    from typer.testing import CliRunner

    from cnmtune.plugin.cli import app

    monkeypatch.setenv("CNMTUNE_CACHE_DIR", str(cache_dir))
    base = ["tune", "va", "--size", "small", "--pipelines", "4", "--dpus", "1", "--tasklets", "8", "--top-k", "2",
            "--model", str(random_model), "--rounds", "1", "--workers", "1", "--json"]
    unsaved = CliRunner().invoke(app, [*base, "--no-save"])
    assert unsaved.exit_code == 0, unsaved.output
    assert not (cache_dir / CACHE_FILE).exists()
    saved = CliRunner().invoke(app, base)
    assert saved.exit_code == 0, saved.output
    entry = TuningCache(cache_dir / CACHE_FILE).lookup(key_for(SOURCE, {"NR_TASKLETS": 8}, "proxy", INCLUDES))
    assert entry is not None and entry.tasklets == 8 and entry.kernel == "va" and entry.tuner["top_k"] == 2
    report = json.loads(saved.stdout[saved.stdout.index("{"):])
    assert report["recorded"]["pipelines"] == {"8": entry.pipeline}  # JSON keys are text
    assert entry.pipeline in (report["chosen"]["pipeline"], "O2")


# -- the UPMEM SDK ----------------------------------------------------------------------------------

_STANDIN = '''#!{python}
import json, shutil, sys
argv = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"tool": {name!r}, "argv": argv}}) + "\\n")
if {name!r} == "opt" and argv == ["--version"]:
    print("LLVM (http://llvm.org/):\\n  LLVM version 12.0.0")
elif {name!r} == "opt" and argv == ["--print-passes"]:
    print("Module passes:\\n  globalopt\\nFunction passes:\\n  instcombine\\n  simplifycfg\\n  sroa\\n"
          "Loop passes:\\n  loop-rotate\\n")
elif "-o" in argv:
    open(argv[argv.index("-o") + 1], "w").write("stand-in output of {name}\\n")
'''


def test_upmem_toolchain_through_a_standin_sdk(run_cc, tmp_path, cache_dir):
    sdk = tmp_path / "sdk"
    (sdk / "bin").mkdir(parents=True)
    log = tmp_path / "calls.jsonl"
    for name in ("dpu-upmem-dpurte-clang", "opt"):
        script = sdk / "bin" / name
        script.write_text(_STANDIN.format(python=sys.executable, log=str(log), name=name))
        script.chmod(0o755)
    _record(cache_dir, PIPELINE)  # recorded by a tune on the proxy
    env = {"CNMTUNE_TOOLCHAIN": "upmem", "CNMTUNE_UPMEM_SDK": str(sdk)}
    compiled = run_cc(*CFLAGS, "-O2", "-c", SOURCE, "-o", "task.o", **env)
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stderr.strip() == \
        f"cnmtune-cc: {SOURCE}: tuned pipeline {PIPELINE} (cache, tuned on the proxy toolchain)"
    linked = run_cc("-DNR_TASKLETS=16", "task.o", "-o", "va.elf", **env)
    assert linked.returncode == 0, linked.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    work = [c for c in calls if c["argv"] not in (["--version"], ["--print-passes"])]
    assert [c["tool"] for c in work] == ["dpu-upmem-dpurte-clang", "opt", "dpu-upmem-dpurte-clang",
                                         "dpu-upmem-dpurte-clang"]
    front, opt, codegen, link = (c["argv"] for c in work)
    assert front[:5] == ["-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c"]
    assert "-DNR_TASKLETS=16" in front and f"-I{INCLUDES[0]}" in front and str(SOURCE) in front
    assert opt[0] == "-passes=function(sroa,instcombine,simplifycfg,loop(loop-rotate))"
    assert codegen[:4] == ["-O2", "-Xclang", "-disable-llvm-passes", "-c"]
    assert link[:2] == ["-DNR_TASKLETS=16", "-DSTACK_SIZE_DEFAULT=1024"] and "task.o" in link
    assert (tmp_path / "va.elf").read_text() == "stand-in output of dpu-upmem-dpurte-clang\n"


def test_upmem_toolchain_missing_is_one_clear_error(run_cc, tmp_path):
    result = run_cc(*CFLAGS, "-c", SOURCE, CNMTUNE_TOOLCHAIN="upmem", CNMTUNE_UPMEM_SDK=str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert result.stderr.startswith("cnmtune-cc: error: the UPMEM toolchain is not available "
                                    "(CNMTUNE_TOOLCHAIN=upmem): UPMEM SDK not found")
