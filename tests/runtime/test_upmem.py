"""The UPMEM SDK toolchain and devices.

Most tests here are STAND-IN tests: no UPMEM SDK is installed on the test machines, so
- the toolchain runs against a recording stand-in SDK: executable Python scripts named
  dpu-upmem-dpurte-clang, opt and dpu-pkg-config that append their argv to a log and produce
  plausible outputs (a small .ll, a copy of the input, a minimal ELF32 with e_machine 245
  built here). The tests assert the exact command lines cnmtune runs, the caching, and how
  compiler, opt and linker failures become cnmtune errors. They prove cnmtune drives the SDK
  as FACTS.md §9 says; they cannot prove the SDK accepts it.
- the device runs the protocol against (a) a stand-in harness in Python backed by cnmtune's
  own SimDevice (upmem_standin/standin_harness.py), so the va kernel really runs end to end
  through UpmemDevice's protocol client, and (b) cnmtune's real C harness compiled against
  cnmtune's own implementation of the SDK's dpu.h (runtime/hostapi: simulated DPUs).
The tests at the end need a real SDK and are skipped without one.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cnmtune.errors import (CompileError, DeviceError, IramOverflow, LinkError, PipelineError, ToolchainMissing,
                            VerificationError)
from cnmtune.runtime.device import DPU_MRAM_HEAP_POINTER_NAME
from cnmtune.runtime.execute import run_on_device
from cnmtune.runtime.hostapi import host_environment
from cnmtune.runtime.toolchain import BuildCache, UpmemToolchain, Variant
from cnmtune.runtime.toolchain.dpu_layout import read_dpu_memory_use
from cnmtune.runtime.upmem import UpmemDevice, UpmemSdk
from cnmtune.runtime.upmem.harness import build_harness
from tests.conftest import run_cnmtune as _cnmtune

STANDIN = Path(__file__).parent / "upmem_standin"
CLANG, OPT, PKG_CONFIG = "dpu-upmem-dpurte-clang", "opt", "dpu-pkg-config"

# ----------------------------------------------------------------------------- a DPU ELF


def dpu_elf() -> bytes:
    """A minimal ELF32 LE with e_machine 245 and the SDK linker script's layout.

    .text at 0x80000000, 12 instructions (8 bytes each): main (5), __bootstrap (2), __udiv32 (3)
    and 2 unattributed; .data.__sys_host 16 B at 0x100; .data.stacks 2048 B at 0x200 (NOBITS);
    .mram 16 B at 0x08000000; __sys_heap_pointer_reset = 0xa00; __sys_used_mram_end = 0x08000010.
    """
    shstr = b"\0.text\0.data.__sys_host\0.data.stacks\0.mram\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0main\0__bootstrap\0__udiv32\0__sys_heap_pointer_reset\0__sys_used_mram_end\0"

    def name(table: bytes, text: str) -> int:
        return table.index(text.encode() + b"\0")

    text = bytes(96)
    host = bytes(16)
    mram = bytes(16)
    sym = struct.Struct("<IIIBBH")
    func, abs_ = 0x12, 0x10  # STB_GLOBAL << 4 | STT_FUNC, STB_GLOBAL << 4 | STT_NOTYPE
    symtab = b"".join([
        sym.pack(0, 0, 0, 0, 0, 0),
        sym.pack(name(strtab, "main"), 0x80000000, 40, func, 0, 1),
        sym.pack(name(strtab, "__bootstrap"), 0x80000028, 16, func, 0, 1),
        sym.pack(name(strtab, "__udiv32"), 0x80000038, 24, func, 0, 1),
        sym.pack(name(strtab, "__sys_heap_pointer_reset"), 0xA00, 0, abs_, 0, 0xFFF1),
        sym.pack(name(strtab, "__sys_used_mram_end"), 0x08000010, 0, abs_, 0, 0xFFF1),
    ])
    blobs = [text, host, b"", mram, symtab, strtab, shstr]
    offsets, offset = [], 52
    for blob in blobs:
        offsets.append(offset)
        offset += len(blob)
    shoff = offset
    sh = struct.Struct("<IIIIIIIIII")
    headers = [sh.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    specs = [  # name, type, flags, addr, size, link, info, align, entsize
        (".text", 1, 0x6, 0x80000000, len(text), 0, 0, 8, 0),
        (".data.__sys_host", 1, 0x3, 0x100, len(host), 0, 0, 8, 0),
        (".data.stacks", 8, 0x3, 0x200, 2048, 0, 0, 8, 0),
        (".mram", 1, 0x3, 0x08000000, len(mram), 0, 0, 8, 0),
        (".symtab", 2, 0, 0, len(symtab), 6, 1, 4, 16),
        (".strtab", 3, 0, 0, len(strtab), 0, 0, 1, 0),
        (".shstrtab", 3, 0, 0, len(shstr), 0, 0, 1, 0),
    ]
    for (sec, kind, flags, addr, size, link, info, align, entsize), off in zip(specs, offsets):
        headers.append(sh.pack(name(shstr, sec), kind, flags, addr, off, size, link, info, align, entsize))
    ident = b"\x7fELF" + bytes([1, 1, 1]) + bytes(9)
    header = ident + struct.pack("<HHIIIIIHHHHHH", 2, 245, 1, 0x80000000, 0, shoff, 0, 52, 0, 0, 40,
                                 len(headers), len(headers) - 1)
    return header + b"".join(blobs) + b"".join(headers)


# ----------------------------------------------------------------------------- a stand-in SDK

_TOOL = '''#!{python}
"""Stand-in {name} of a UPMEM SDK (cnmtune tests): logs its argv, fakes its output."""
import json, shutil, sys
config = json.loads({config!r})
argv = sys.argv[1:]
with open(config["log"], "a") as log:
    log.write(json.dumps({{"tool": {name!r}, "argv": argv}}) + "\\n")
out = argv[argv.index("-o") + 1] if "-o" in argv else None
'''

_CLANG = '''
if "-emit-llvm" in argv:
    if config.get("compile_error"):
        sys.stderr.write(config["compile_error"])
        sys.exit(1)
    defines = " ".join(a for a in argv if a.startswith("-D"))
    open(out, "w").write("; ModuleID = 'stand-in' " + defines + "\\ndefine i32 @main() {{\\n  ret i32 0\\n}}\\n")
else:
    if config.get("link_error"):
        sys.stderr.write(config["link_error"])
        sys.exit(1)
    shutil.copyfile(config["elf"], out)
'''

_OPT = '''
major = int(config["version"].split(".")[0])
if argv == ["--version"]:
    print("LLVM (http://llvm.org/):\\n  LLVM version " + config["version"] + "\\n  Optimized build.")
elif argv == ["--print-passes"]:
    if major < 12 or config.get("no_print_passes"):
        sys.stderr.write("opt: Unknown command line argument '--print-passes'.\\n")
        sys.exit(1)
    print("Module passes:\\n  always-inline\\n  globalopt\\nModule analyses:\\n  callgraph\\n"
          "CGSCC passes:\\n  argpromotion\\n  function-attrs\\n"
          "Function passes:\\n  instcombine\\n  lowerinvoke\\n  mergereturn\\n  sroa\\n  simplifycfg\\n"
          "Function passes with params:\\n  loop-unroll<O0;O1;O2;O3>\\n"
          "Loop passes:\\n  loop-deletion\\n  loop-rotate\\n")
elif argv == ["--help"]:
    print("OVERVIEW: llvm .bc -> .bc modular optimizer and analysis printer\\n\\nOPTIONS:\\n\\n"
          "General options:\\n\\n  Optimizations available:\\n"
          "      -functionattrs   - Deduce function attributes\\n"
          "      -instcombine     - Combine redundant instructions\\n"
          "      -loop-rotate     - Rotate Loops\\n"
          "      -sroa            - Scalar Replacement Of Aggregates\\n"
          "  -o=<filename>        - Override output filename\\n")
else:
    rejected = [name for name in config.get("reject", []) if any(name in a for a in argv)]
    if rejected:
        sys.stderr.write("opt: unknown function pass '" + rejected[0] + "'\\n")
        sys.exit(1)
    source = [a for a in argv if a.endswith(".bc") and a != out][0]
    shutil.copyfile(source, out)
'''

_PKG_CONFIG = '''
if argv == ["--modversion", "dpu"]:
    print(config["sdk_version"])
elif argv == ["--cflags", "--libs", "dpu"]:
    print(config["flags"])
else:
    sys.exit(1)
'''


def make_sdk(root: Path, **options) -> tuple[UpmemSdk, Path]:
    """A stand-in SDK under root/bin; returns it and its invocation log."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    log = root / "calls.jsonl"
    elf = root / "program.elf"
    elf.write_bytes(dpu_elf())
    config = {"log": str(log), "elf": str(elf), "version": "12.0.0", "sdk_version": "2025.1.0", "flags": "",
              **options}
    for name, body in ((CLANG, _CLANG), (OPT, _OPT), (PKG_CONFIG, _PKG_CONFIG)):
        script = bin_dir / name
        script.write_text(_TOOL.format(python=sys.executable, name=name, config=json.dumps(config)) + body)
        script.chmod(0o755)
    return UpmemSdk.find(root), log


def calls(log: Path) -> list[tuple[str, list[str]]]:
    if not log.exists():
        return []
    return [(c["tool"], c["argv"]) for c in map(json.loads, log.read_text().splitlines())]


@pytest.fixture
def cache(tmp_path) -> BuildCache:
    return BuildCache(tmp_path / "cache")


def _front(variant: Variant) -> list[str]:
    """Step 1's argv up to the source (the output lives in a temporary directory)."""
    return ["-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
            *(f"-I{d}" for d in variant.kernel.include_dirs), *variant.define_flags(),
            str(variant.kernel.sources[0]), "-o"]


# ----------------------------------------------------------------------------- discovery

def test_sdk_found_by_dir_env_and_path(tmp_path, monkeypatch):
    """Stand-in SDK: found through --sdk-dir (root or bin), CNMTUNE_UPMEM_SDK and PATH."""
    sdk, _ = make_sdk(tmp_path / "sdk")
    assert (sdk.bin_dir, sdk.found_via) == ((tmp_path / "sdk" / "bin").resolve(), "--sdk-dir")
    assert UpmemSdk.find(tmp_path / "sdk" / "bin").bin_dir == sdk.bin_dir  # the bin dir itself is fine too
    monkeypatch.setenv("CNMTUNE_UPMEM_SDK", str(tmp_path / "sdk"))
    assert UpmemSdk.find().found_via == "CNMTUNE_UPMEM_SDK"
    monkeypatch.delenv("CNMTUNE_UPMEM_SDK")
    monkeypatch.setenv("PATH", f"{sdk.bin_dir}{os.pathsep}{os.environ['PATH']}")
    found = UpmemSdk.find()
    assert (found.bin_dir.resolve(), found.found_via, found.opt) == (sdk.bin_dir, "PATH", found.bin_dir / OPT)
    assert found.version == "2025.1.0"
    shims, _ = host_environment()  # `cnmtune app env` puts cnmtune's shim of the SDK's compiler first on PATH
    monkeypatch.setenv("PATH", f"{shims / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert UpmemSdk.find().bin_dir.resolve() == sdk.bin_dir  # passed over for the SDK behind it


def test_missing_sdk_says_where_it_looked_and_how_to_fix(tmp_path, monkeypatch):
    """No SDK: one-line ToolchainMissing naming the places searched and the fix."""
    monkeypatch.delenv("CNMTUNE_UPMEM_SDK", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there
    with pytest.raises(ToolchainMissing) as exc:
        UpmemSdk.find()
    message = str(exc.value)
    assert "dpu-upmem-dpurte-clang is not on PATH" in message and "CNMTUNE_UPMEM_SDK is not set" in message
    assert "source /path/to/upmem-sdk/upmem_env.sh" in message and "--sdk-dir" in message
    assert "\n" not in message
    with pytest.raises(ToolchainMissing, match=r"no executable dpu-upmem-dpurte-clang in .*/nowhere/bin or "
                                                r".*/nowhere \(given by --sdk-dir="):
        UpmemSdk.find(tmp_path / "nowhere")
    monkeypatch.setenv("CNMTUNE_UPMEM_SDK", str(tmp_path / "elsewhere"))
    with pytest.raises(ToolchainMissing, match=r"given by CNMTUNE_UPMEM_SDK=.*elsewhere"):
        UpmemSdk.find()


def test_sdk_without_opt_is_reported(tmp_path, cache, va):
    """Stand-in SDK without opt: ToolchainMissing, never a system opt."""
    sdk, _ = make_sdk(tmp_path / "sdk")
    (sdk.bin_dir / OPT).unlink()
    with pytest.raises(ToolchainMissing, match=r"has no executable opt \(cnmtune runs the SDK's own opt"):
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2", 4))


def test_every_upmem_entry_point_without_sdk_raises_toolchain_missing(tmp_path, monkeypatch):
    """No SDK: the toolchain and every device implementation refuse, none falls back."""
    monkeypatch.delenv("CNMTUNE_UPMEM_SDK", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainMissing, match="UPMEM SDK not found"):
        UpmemToolchain()
    # (`import dpu` may find tests/dpu, a namespace package without DpuSet: refused as well)
    with pytest.raises(ToolchainMissing, match=r"UPMEM host library unavailable: .*module `dpu` .*, and for cnmtune's "
                                                r"C host harness: UPMEM SDK not found.*upmem_env\.sh"):
        UpmemDevice(1, "simulator")
    with pytest.raises(ToolchainMissing, match=r"module `dpu` (is not importable|found at .* is not the UPMEM "
                                                r"SDK's).*PYTHONPATH"):
        UpmemDevice(1, "hw", implementation="python")
    with pytest.raises(ToolchainMissing, match=r"no executable dpu-upmem-dpurte-clang in"):
        UpmemDevice(1, "hw", implementation="harness", sdk_dir=tmp_path / "sdk")


# ----------------------------------------------------------------------------- toolchain command lines

def test_new_pm_opt_gets_passes_text_and_exact_commands(tmp_path, cache, va):
    """Stand-in SDK, opt 12: the exact clang / opt / link command lines of one compile."""
    sdk, log = make_sdk(tmp_path / "sdk", version="12.0.0")
    toolchain = UpmemToolchain(sdk, cache)
    variant = Variant.of(va, "O2", 4)
    binary = toolchain.compile(variant)
    seen = calls(log)
    assert [tool for tool, _ in seen] == [PKG_CONFIG, OPT, CLANG, OPT, CLANG]
    assert seen[0][1] == ["--modversion", "dpu"] and seen[1][1] == ["--version"]
    front, opt, link = seen[2][1], seen[3][1], seen[4][1]
    assert front[:-1] == _front(variant) and front[-1].endswith("/out.bc")
    ir = cache.root / "upmem-ir"
    assert opt[0] == "-passes=default<O2>" and Path(opt[1]).is_relative_to(ir) and opt[2] == "-o"
    assert len(opt) == 4 and opt[3].endswith("/out.bc")
    assert link[:6] == ["-O2", "-Xclang", "-disable-llvm-passes", "-DNR_TASKLETS=4", "-DSTACK_SIZE_DEFAULT=1024",
                        str(next((cache.root / "upmem-opt").rglob("*.bc")))]
    assert link[6] == "-o" and link[7].endswith("/out.elf") and len(link) == 8
    assert binary.toolchain == toolchain.identity == "upmem-sdk2025.1.0-llvm12.0.0-cg2-irO2"
    assert binary.elf_path.read_bytes() == dpu_elf() and not binary.cached


def test_new_pm_pass_sequence_is_mapped_and_nested_by_level(tmp_path, cache, va):
    """Stand-in opt 12: names mapped to its spellings, passes nested by their listed level."""
    sdk, log = make_sdk(tmp_path / "sdk", version="12.0.0")
    variant = Variant.of(va, "sroa,lower-invoke,loop-rotate,instcombine,globalopt,argpromotion,"
                             "unify-function-exit-nodes", 16)
    UpmemToolchain(sdk, cache).compile(variant)
    opt_calls = [argv for tool, argv in calls(log) if tool == OPT]
    assert opt_calls[:2] == [["--version"], ["--print-passes"]]
    assert opt_calls[2][0] == ("-passes=function(sroa,lowerinvoke,loop(loop-rotate),instcombine),globalopt,"
                               "cgscc(argpromotion),function(mergereturn)")
    link = [argv for tool, argv in calls(log) if tool == CLANG][-1]
    assert "-DNR_TASKLETS=16" in link


@pytest.mark.parametrize("version", ["10.0.0", "3.9.1"])
def test_old_opt_gets_legacy_flags(tmp_path, cache, va, version):
    """Stand-in opt 10 / 3.9: legacy pass flags and -O3, names checked against its --help."""
    sdk, log = make_sdk(tmp_path / "sdk", version=version)
    toolchain = UpmemToolchain(sdk, cache)
    toolchain.compile(Variant.of(va, "sroa,function-attrs,loop-rotate", 4))
    toolchain.compile(Variant.of(va, "O3", 4))
    opt_calls = [argv for tool, argv in calls(log) if tool == OPT]
    assert opt_calls[0] == ["--version"] and opt_calls[1] == ["--help"]
    assert opt_calls[2][:3] == ["-sroa", "-functionattrs", "-loop-rotate"] and opt_calls[2][4] == "-o"
    assert opt_calls[3][0] == "-O3" and len(opt_calls) == 4
    assert toolchain.identity == f"upmem-sdk2025.1.0-llvm{version}-cg2-irO2"


@pytest.mark.parametrize("version, level", [("12.0.0", "-passes=default<O2>"), ("10.0.0", "-O2")])
def test_knobs_are_passed_to_opt_as_its_options(tmp_path, cache, va, version, level):
    """A pipeline's knobs follow its passes on opt's command line, as LLVM spells the option."""
    sdk, log = make_sdk(tmp_path / "sdk", version=version)
    UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2,unroll-count=4", 4))
    opt = [argv for tool, argv in calls(log) if tool == OPT][-1]
    assert opt[:2] == [level, "-unroll-count=4"] and opt[3] == "-o"


def test_pass_unknown_to_that_opt_is_a_pipeline_error(tmp_path, cache, va):
    """Stand-in opts: a pass they do not list is a PipelineError before anything compiles."""
    sdk, log = make_sdk(tmp_path / "sdk", version="12.0.0")
    with pytest.raises(PipelineError, match=r"pass 'loop-unroll-and-jam' is not available in the UPMEM SDK's opt "
                                            r"\(LLVM 12\.0\.0, new pass manager"):
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "sroa,loop-unroll-and-jam", 4))
    assert CLANG not in [tool for tool, _ in calls(log)]  # refused before compiling anything
    legacy, _ = make_sdk(tmp_path / "legacy", version="10.0.0")
    with pytest.raises(PipelineError, match=r"'globalopt' is not available .*LLVM 10\.0\.0, legacy pass manager"):
        UpmemToolchain(legacy, cache).compile(Variant.of(va, "globalopt", 4))


def test_opt_that_cannot_list_passes_reports_its_own_rejection(tmp_path, cache, va):
    """Stand-in opt without --print-passes: its 'unknown pass' becomes the PipelineError."""
    sdk, _ = make_sdk(tmp_path / "sdk", version="12.0.0", no_print_passes=True, reject=["tailcallelim"])
    with pytest.raises(PipelineError, match=r"rejects pipeline 'sroa,tailcallelim': opt: unknown function pass"):
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "sroa,tailcallelim", 4))


def test_o0_runs_no_opt(tmp_path, cache, va):
    """Stand-in SDK: O0 links the front end's bitcode directly."""
    sdk, log = make_sdk(tmp_path / "sdk")
    UpmemToolchain(sdk, cache, codegen_level=0).compile(Variant.of(va, "O0", 2))
    tools = calls(log)
    assert [t for t, argv in tools if t == OPT] == [OPT]  # only --version
    link = tools[-1][1]
    assert link[:5] == ["-O0", "-Xclang", "-disable-llvm-passes", "-DNR_TASKLETS=2", "-DSTACK_SIZE_DEFAULT=1024"]
    assert Path(link[5]).is_relative_to(cache.root / "upmem-ir")  # the front end's bitcode, unoptimised


def test_second_compile_runs_no_command(tmp_path, cache, va):
    """Stand-in SDK: content-keyed cache, a repeated compile runs no tool."""
    sdk, log = make_sdk(tmp_path / "sdk")
    toolchain = UpmemToolchain(sdk, cache)
    variant = Variant.of(va, "sroa,instcombine", 8)
    first = toolchain.compile(variant)
    before = len(calls(log))
    second = toolchain.compile(variant)
    assert len(calls(log)) == before
    assert second.cached and second.elf_hash == first.elf_hash and second.elf_path == first.elf_path
    # a fresh toolchain on the same cache asks opt its version again (the SDK object keeps its
    # own), and compiles nothing
    third = UpmemToolchain(sdk, cache).compile(variant)
    assert calls(log)[before:] == [(OPT, ["--version"])]
    assert third.cached
    # another tasklet count is another program
    toolchain.compile(Variant.of(va, "sroa,instcombine", 4))
    assert [t for t, _ in calls(log)[before + 1:]] == [CLANG, OPT, CLANG]


def test_memory_use_read_from_the_dpu_elf(tmp_path, cache, va):
    """Stand-in link output (the ELF built here): MemoryUse from a DPU ELF."""
    sdk, _ = make_sdk(tmp_path / "sdk")
    memory = UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2", 4)).memory
    assert (memory.kernel_instructions, memory.runtime_instructions, memory.softlib_instructions) == (7, 2, 3)
    assert (memory.wram_host_bytes, memory.wram_stack_bytes, memory.wram_data_bytes) == (16, 2048, 0xA00 - 16 - 2048)
    assert memory.mram_static_bytes == 16


def test_proxy_elf_is_not_taken_for_a_dpu_elf(va_o2):
    from cnmtune.errors import ElfError

    with pytest.raises(ElfError, match=r"not a 32-bit UPMEM DPU ELF \(e_machine 243, expected 245\)"):
        read_dpu_memory_use(va_o2.elf_path)


# ----------------------------------------------------------------------------- toolchain errors

def test_compiler_error_is_a_compile_error_with_the_compiler_text(tmp_path, cache, va):
    """Stand-in clang exiting 1: CompileError carrying its text, nothing cached."""
    text = "task.c:12:5: error: use of undeclared identifier 'oops'\n1 error generated.\n"
    sdk, _ = make_sdk(tmp_path / "sdk", compile_error=text)
    with pytest.raises(CompileError) as exc:
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2", 4))
    assert "va[O2, 4 tasklets, BL=10, INT32]: task.c does not compile (UPMEM SDK clang)" in str(exc.value)
    assert "use of undeclared identifier 'oops'" in str(exc.value)
    assert not list(cache.root.rglob("*.bc")) and not list(cache.root.rglob("*.elf"))  # nothing half-made kept


def test_iram_overflow_from_the_sdk_linker(tmp_path, cache, va):
    """Stand-in link printing lld's region overflow: IramOverflow."""
    text = ("ld.lld: error: section '.text' will not fit in region 'iram': overflowed by 4096 bytes\n"
            "clang-12: error: ld.lld command failed with exit code 1 (use -v to see invocation)\n")
    sdk, _ = make_sdk(tmp_path / "sdk", link_error=text)
    with pytest.raises(IramOverflow, match=r"va\[O2, 4 tasklets, BL=10, INT32\]: IRAM overflow \(UPMEM SDK linker\): "
                                           r"ld.lld: error: section '.text' will not fit in region 'iram'"):
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2", 4))


def test_other_link_errors_are_link_errors(tmp_path, cache, va):
    """Stand-in link failing otherwise: LinkError with the linker's text."""
    sdk, _ = make_sdk(tmp_path / "sdk", link_error="ld.lld: error: undefined symbol: helper\n")
    with pytest.raises(LinkError, match=r"link failed \(UPMEM SDK\)\nld.lld: error: undefined symbol: helper"):
        UpmemToolchain(sdk, cache).compile(Variant.of(va, "O2", 4))


# ----------------------------------------------------------------------------- device over the protocol

def standin_device(tmp_path, nr_dpus: int, backend: str = "simulator", *options: str, **kwargs):
    log = tmp_path / f"harness-{backend}.jsonl"
    command = [sys.executable, str(STANDIN / "standin_harness.py"), str(log), *options]
    return UpmemDevice(nr_dpus, backend, harness=command, **kwargs), log


def _requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_va_runs_end_to_end_through_the_protocol(tmp_path, toolchain, va):
    """Stand-in harness (SimDevice behind the protocol): va verified, exact request sequence."""
    binary = toolchain.compile(Variant.of(va, "O2", 4))
    size = va.workload.preset("small")  # 4096 int32 on 2 DPUs: 8 KiB per DPU and vector
    with standin_device(tmp_path, 2)[0] as device:
        result = run_on_device(binary, device, size)
        assert device.kind == "upmem-sim" and device.profile == "backend=simulator"
    assert result.verified and result.device == "upmem-sim" and result.nr_dpus == 2 and result.launches == 1
    assert result.kernel_s > 0 and result.host_to_dpu_s > 0 and result.dpu_to_host_s > 0
    assert device.times.host_to_dpu_bytes == 2 * 16 + 2 * 2 * 8192 and device.times.dpu_to_host_bytes == 2 * 8192
    assert device.times.kernel_per_launch_s == [result.kernel_s]
    requests = _requests(tmp_path / "harness-simulator.jsonl")
    shape = [(r["op"], r.get("symbol"), r.get("offset"), r.get("size")) for r in requests]
    assert shape == [
        ("ALLOC", None, None, None),
        ("LOAD", None, None, None),
        ("PUSH_TO", "DPU_INPUT_ARGUMENTS", 0, 16),
        ("PUSH_TO", DPU_MRAM_HEAP_POINTER_NAME, 0, 8192),
        ("PUSH_TO", DPU_MRAM_HEAP_POINTER_NAME, 8192, 8192),
        ("LAUNCH", None, None, None),
        ("PUSH_FROM", DPU_MRAM_HEAP_POINTER_NAME, 8192, 8192),
        ("LOG", None, None, None),
        ("QUIT", None, None, None),
    ]
    assert requests[0] == {"op": "ALLOC", "nr_dpus": 2, "profile": "backend=simulator"}
    assert requests[1]["elf"] == str(binary.elf_path) and requests[5]["cycles_symbol"] == ""
    assert all(r["count"] == 2 for r in requests if r["op"] == "PUSH_TO")


def test_hw_profile_serial_copies_broadcast_counters_and_log(tmp_path, toolchain, va):
    """Stand-in harness: hw profile, serial copies, broadcast, counters after launch, log."""
    binary = toolchain.compile(Variant.of(va, "O2", 4))
    device, log = standin_device(tmp_path, 2, "hw", cycles_symbol="DPU_INPUT_ARGUMENTS", extra_profile="chipId=0x42")
    with device:
        device.load(binary.elf_path)
        args = np.array([8, 8, 0, 0], dtype=np.uint32)  # size, transfer, kernel, reserved
        device.broadcast("DPU_INPUT_ARGUMENTS", args)
        device.copy_to(1, "DPU_INPUT_ARGUMENTS", np.array([9], dtype=np.uint32), offset=12)
        assert device.copy_from(0, "DPU_INPUT_ARGUMENTS", 16) == args.tobytes()
        assert device.copy_from(1, "DPU_INPUT_ARGUMENTS", 4, offset=12) == bytes([9, 0, 0, 0])
        device.launch()
        assert device.kind == "upmem-hw" and device.launches[0].counters == (8 | 8 << 32, 8 | 8 << 32)
        assert device.log(0) == ""
    requests = _requests(log)
    assert requests[0] == {"op": "ALLOC", "nr_dpus": 2, "profile": "backend=hw,chipId=0x42"}
    assert [r["op"] for r in requests] == ["ALLOC", "LOAD", "BROADCAST", "COPY_TO", "COPY_FROM", "COPY_FROM",
                                           "LAUNCH", "LOG", "QUIT"]
    assert requests[3] == {"op": "COPY_TO", "dpu": 1, "symbol": "DPU_INPUT_ARGUMENTS", "offset": 12, "size": 4}
    assert requests[6]["cycles_symbol"] == "DPU_INPUT_ARGUMENTS"


def test_sdk_errors_become_device_errors(tmp_path, toolchain, va):
    """Stand-in harness: errors from behind the protocol and API misuse are DeviceErrors."""
    binary = toolchain.compile(Variant.of(va, "O2", 4))
    with standin_device(tmp_path, 2)[0] as device:
        with pytest.raises(DeviceError, match="no program loaded"):
            device.launch()
        device.load(binary.elf_path)
        with pytest.raises(DeviceError, match=r"UPMEM host library: COPY_TO failed: symbol 'nope' is not defined"):
            device.copy_to(0, "nope", b"12345678")
        with pytest.raises(DeviceError, match="DPU 3 does not exist"):
            device.copy_from(3, "DPU_INPUT_ARGUMENTS", 8)
        with pytest.raises(DeviceError, match="same size on every DPU"):
            device.push_to("DPU_INPUT_ARGUMENTS", [b"1234", b"12345678"])
        with pytest.raises(DeviceError, match="one buffer per DPU"):
            device.push_to("DPU_INPUT_ARGUMENTS", [b"12345678"])


def test_harness_that_dies_or_hangs(tmp_path, toolchain, va):
    """Stand-in harness that exits or hangs: DeviceError with its stderr / a timeout."""
    binary = toolchain.compile(Variant.of(va, "O2", 4))
    device, _ = standin_device(tmp_path, 1, "simulator", "--die-on", "LAUNCH")
    with device:
        device.load(binary.elf_path)
        with pytest.raises(DeviceError, match=r"exited \(code 3\) during LAUNCH: stand-in harness: dying on LAUNCH"):
            device.launch()
    device, _ = standin_device(tmp_path, 1, "simulator", "--hang-on", "LAUNCH")
    with device:
        device.load(binary.elf_path)
        device.host.timeout_s = 1  # set late: the stand-in's start-up (importing the simulator) may take longer
        with pytest.raises(DeviceError, match=r"LAUNCH did not answer within 1 s; the host harness was stopped"):
            device.launch()
        assert device.host.proc.poll() is not None


def test_wrong_results_fail_verification(tmp_path, toolchain, va):
    """A device returning other bytes is caught by the workload's verification, not trusted."""
    binary = toolchain.compile(Variant.of(va, "O2", 4))
    with standin_device(tmp_path, 1)[0] as device:
        original = device.push_from
        device.push_from = lambda *a, **k: [bytes(len(c)) for c in original(*a, **k)]
        with pytest.raises(VerificationError):
            run_on_device(binary, device, 64)


# ----------------------------------------------------------------------------- the real C harness

COUNTER_PROGRAM = """
#include <attributes.h>
#include <stdint.h>
#include <stdio.h>
__host uint8_t x[16];
__host uint8_t y[4];
__host uint8_t z[8];
__host uint64_t launch_count;
int main(void) {
    launch_count++;
    printf("launch %u\\n", (unsigned)launch_count);
    return 0;
}
"""


@pytest.fixture(scope="module")
def simulator_sdk(tmp_path_factory):
    """A stand-in SDK whose dpu-pkg-config points at cnmtune's own host library (dpu.h on the simulator),
    and a DPU program that counts its launches in `launch_count` and prints each."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the host library and the harness")
    shims, _ = host_environment()
    flags = subprocess.run([str(shims / "bin" / PKG_CONFIG), "--cflags", "--libs", "dpu"], capture_output=True,
                           text=True, check=True).stdout.strip()
    root = tmp_path_factory.mktemp("simulator-sdk")
    sdk, _ = make_sdk(root / "sdk", flags=flags)
    (root / "counter.c").write_text(COUNTER_PROGRAM)
    subprocess.run([str(shims / "bin" / CLANG), "-O2", "-DNR_TASKLETS=1", "-o", str(root / "counter.elf"),
                    str(root / "counter.c")], check=True, capture_output=True)
    return sdk, root / "counter.elf"


def test_c_harness_builds_once_and_serves_every_request(simulator_sdk, tmp_path):
    """Real C harness on cnmtune's dpu.h: built once, every request type round-trips to simulated DPUs."""
    sdk, program = simulator_sdk
    cache = BuildCache(tmp_path / "cache")
    path, env = build_harness(sdk, cache)
    assert path.is_file() and os.access(path, os.X_OK) and "lib" in env["LD_LIBRARY_PATH"]
    inode = path.stat().st_ino  # a rebuild renames a new file in; a use only refreshes the mtime (LRU order)
    assert build_harness(sdk, cache)[0] == path and path.stat().st_ino == inode  # cached
    with UpmemDevice(3, "simulator", sdk=sdk, implementation="harness", cache=cache,
                     cycles_symbol="launch_count") as device:
        device.load(program)
        device.copy_to(1, "x", b"hello", offset=8)
        assert device.copy_from(1, "x", 5, offset=8) == b"hello"
        device.push_to("y", [b"aaaa", b"bbbb", b"cccc"])
        assert device.push_from("y", 4) == [b"aaaa", b"bbbb", b"cccc"]
        device.broadcast("z", b"zz", offset=4)
        assert device.push_from("z", 2, offset=4) == [b"zz"] * 3
        device.launch()
        device.launch()
        assert [launch.counters for launch in device.launches] == [(1, 1, 1), (2, 2, 2)]
        assert device.log(2) == "launch 2\n"  # the SDK's log holds the last launch's output
        assert device.times.launches == 2 and device.times.host_to_dpu_bytes == 5 + 12 + 6
        with pytest.raises(DeviceError, match=r"LOAD failed: dpu_load\(/nonexistent\): DPU_ERR_ELF_NO_SUCH_FILE: "
                                              r"no DPU program at /nonexistent"):
            device.load("/nonexistent")
        with pytest.raises(DeviceError, match=r"DPU_ERR_UNKNOWN_SYMBOL: symbol 'w' is not defined by counter\.elf"):
            device.copy_to(0, "w", b"1")
        host = device.host
    assert host.proc.returncode == 0  # QUIT: DPUs freed, harness exited cleanly
    with pytest.raises(DeviceError, match=r"ALLOC failed: dpu_alloc\(backend=hw\): DPU_ERR_ALLOCATION: cannot "
                                          r"allocate 5000 DPUs"):
        UpmemDevice(5000, "hw", sdk=sdk, implementation="harness", cache=cache)


def test_c_harness_build_failure_names_the_command(tmp_path):
    """Stand-in dpu-pkg-config with a broken include path: the build failure is reported."""
    sdk, _ = make_sdk(tmp_path / "sdk", flags=f"-I{tmp_path / 'no-such-include'}")
    with pytest.raises(ToolchainMissing, match=r"cannot build cnmtune's UPMEM host harness .*dpu\.h"):
        build_harness(sdk, BuildCache(tmp_path / "cache"))


# ----------------------------------------------------------------------------- command line

def test_cli_without_sdk_prints_one_line_and_exits_2(tmp_path):
    """No SDK: `cnmtune run --device upmem-*` prints one line and exits 2."""
    result = _cnmtune("run", "va", "--device", "upmem-sim", "-s", "small", columns=80, unset=["CNMTUNE_UPMEM_SDK"],
                      env={"PATH": os.path.dirname(sys.executable)})  # python only: no SDK on PATH
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "UPMEM SDK not found" in lines[0] and "upmem_env.sh" in lines[0]
    result = _cnmtune("run", "va", "--device", "upmem-hw", "--sdk-dir", str(tmp_path / "none"))
    assert result.returncode == 1 and f"given by --sdk-dir={tmp_path / 'none'}" in result.stderr
    result = _cnmtune("run", "va", "--device", "gpu")
    assert result.returncode == 2 and "unknown device 'gpu'" in result.stderr


def test_cli_upmem_device_compiles_with_the_sdk(tmp_path):
    """Stand-in SDK on the command line: upmem-sim compiles with the SDK's clang."""
    _, log = make_sdk(tmp_path / "sdk", compile_error="task.c:1:1: error: stand-in refuses\n")
    result = _cnmtune("run", "va", "--device", "upmem-sim", "--sdk-dir", str(tmp_path / "sdk"), "-s", "small")
    assert result.returncode == 1 and "stand-in refuses" in result.stderr
    assert [tool for tool, _ in calls(log)][-1] == CLANG  # the SDK's clang, not the proxy


# ----------------------------------------------------------------------------- with a real SDK

def _real_sdk() -> UpmemSdk | None:
    try:
        return UpmemSdk.find()
    except ToolchainMissing:
        return None


REAL_SDK = _real_sdk()
needs_sdk = pytest.mark.skipif(REAL_SDK is None, reason="needs the UPMEM SDK (dpu-upmem-dpurte-clang on PATH or "
                                                         "CNMTUNE_UPMEM_SDK)")


@needs_sdk
@pytest.mark.parametrize("pipeline", ["O2", "sroa,instcombine,loop-rotate,simplifycfg"])
def test_real_sdk_compiles_and_runs_va_on_its_simulator(tmp_path, va, pipeline):
    binary = UpmemToolchain(REAL_SDK, BuildCache(tmp_path / "cache")).compile(Variant.of(va, pipeline, 4))
    assert binary.elf_path.read_bytes()[18] == 245 and binary.memory.kernel_instructions > 0
    with UpmemDevice(2, "simulator", sdk=REAL_SDK, cache=BuildCache(tmp_path / "cache")) as device:
        result = run_on_device(binary, device, va.workload.preset("small"))
    assert result.verified and result.kernel_s > 0 and result.device == "upmem-sim"


@needs_sdk
def test_real_sdk_cli_run(tmp_path):
    result = _cnmtune("run", "va", "--device", "upmem-sim", "-s", "small", "-d", "2", "-t", "4", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verified"]
