"""Build tests of the UPMEM-compatible DPU runtime in cnmtune/dpu (headers, runtime, dpu.ld).

Everything is compiled and linked for real with the zig toolchain exactly as cnmtune's
toolchain does it (see cnmtune/dpu/README.md); the linked ELF files are inspected with
pyelftools.  Nothing is executed.
"""

from __future__ import annotations

import os
import re
import shlex
import struct
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

REPO = Path(__file__).resolve().parents[2]
DPU = REPO / "cnmtune" / "dpu"
INCLUDE = DPU / "include"
RUNTIME = DPU / "runtime"
LINKER_SCRIPT = DPU / "dpu.ld"
ALL_API_KERNEL = Path(__file__).resolve().parent / "kernels" / "all_api.c"

TARGET = ["-target", "riscv32-freestanding-none", "-mcpu=generic_rv32", "-mabi=ilp32", "-fno-sanitize=all"]
FRONT_END = TARGET + ["-ffreestanding", "-O0", "-g0", "-Xclang", "-disable-O0-optnone", "-I", str(INCLUDE)]
RUNTIME_CFLAGS = TARGET + ["-ffreestanding", "-O2", "-g0", "-I", str(INCLUDE)]

IRAM_BASE = 0x80000000
MRAM_BASE = 0x08000000
ATOMIC_BASE = 0xF0000000


def _zig_cc(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ziglang", "cc", *args], cwd=cwd, capture_output=True, text=True
    )


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 0, f"{what} failed:\n{shlex.join(proc.args)}\n{proc.stdout}\n{proc.stderr}"


@dataclass
class Toolchain:
    zig: Path
    compiler_rt: Path
    runtime_objects: list[Path]
    workdir: Path

    def compile_kernel(self, source: Path, nr_tasklets: int, name: str) -> Path:
        """Front end (C -> LLVM IR at -O0, as cnmtune does), then IR -> object."""
        ll = self.workdir / f"{name}.ll"
        obj = self.workdir / f"{name}.o"
        _check(
            _zig_cc([*FRONT_END, f"-DNR_TASKLETS={nr_tasklets}", "-S", "-emit-llvm", str(source), "-o", str(ll)]),
            f"front end of {source.name}",
        )
        _check(_zig_cc([*TARGET, "-O2", "-c", str(ll), "-o", str(obj)]), f"back end of {name}.ll")
        return obj

    def link(self, objects: list[Path], out: Path, defsyms: dict[str, int]) -> subprocess.CompletedProcess:
        cmd = [str(self.zig), "ld.lld", "--gc-sections", "--strip-debug", "-m", "elf32lriscv", "-static",
               "-T", str(LINKER_SCRIPT)]
        cmd += [f"--defsym={k}={v}" for k, v in defsyms.items()]
        cmd += [str(o) for o in objects] + [str(o) for o in self.runtime_objects] + [str(self.compiler_rt)]
        cmd += ["-o", str(out)]
        return subprocess.run(cmd, capture_output=True, text=True)


def _find_compiler_rt(workdir: Path) -> Path:
    probe = workdir / "probe.c"
    probe.write_text("void _start(void) {}\n")
    proc = _zig_cc([*TARGET, "-nostartfiles", "-v", str(probe), "-o", str(workdir / "probe.elf")])
    _check(proc, "compiler-rt probe link")
    for line in (proc.stdout + proc.stderr).splitlines():
        if "ld.lld" in line:
            for word in line.split():
                if word.endswith("libcompiler_rt.a"):
                    return Path(word)
    raise AssertionError("libcompiler_rt.a not found on the ld.lld line:\n" + proc.stderr)


@pytest.fixture(scope="session")
def toolchain(tmp_path_factory) -> Toolchain:
    import ziglang

    workdir = tmp_path_factory.mktemp("dpu_runtime")
    zig = Path(ziglang.__file__).parent / "zig"
    sources = sorted(RUNTIME.glob("*.c")) + sorted(RUNTIME.glob("*.S"))
    assert sources, "no runtime sources"

    def compile_one(src: Path) -> Path:
        obj = workdir / f"{src.name}.o"
        _check(_zig_cc([*RUNTIME_CFLAGS, "-Wall", "-Wextra", "-Werror", "-c", str(src), "-o", str(obj)]),
               f"runtime {src.name}")
        return obj

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1) + 1) as pool:
        rt_future = pool.submit(_find_compiler_rt, workdir)
        objects = list(pool.map(compile_one, sources))
        compiler_rt = rt_future.result()
    return Toolchain(zig=zig, compiler_rt=compiler_rt, runtime_objects=objects, workdir=workdir)


# --------------------------------------------------------------------------- helpers


def _symbols(elf: ELFFile) -> dict[str, object]:
    table = elf.get_section_by_name(".symtab")
    assert isinstance(table, SymbolTableSection), "the ELF lost its symbol table"
    result = {}
    for sym in table.iter_symbols():
        if sym.name and not sym.name.startswith((".L", "$")):
            result.setdefault(sym.name, sym)
    return result


def _addr(syms, name: str) -> int:
    assert name in syms, f"symbol {name} missing"
    return syms[name]["st_value"]


def _read(elf: ELFFile, address: int, size: int) -> bytes:
    for sec in elf.iter_sections():
        start = sec["sh_addr"]
        if sec["sh_flags"] & 2 and start <= address and address + size <= start + sec["sh_size"]:
            assert sec["sh_type"] != "SHT_NOBITS", f"0x{address:x} is in NOBITS section {sec.name}"
            offset = address - start
            return sec.data()[offset:offset + size]
    raise AssertionError(f"no allocated section holds 0x{address:x}..+{size}")


def _instruction_words(data: bytes):
    for i in range(0, len(data), 4):
        yield i, struct.unpack_from("<I", data, i)[0]


def _assert_rv32i_only(data: bytes, what: str) -> None:
    assert len(data) % 4 == 0, f"{what}: size not a multiple of 4"
    for offset, word in _instruction_words(data):
        assert word & 3 == 3, f"{what}+0x{offset:x}: compressed instruction 0x{word:08x}"
        opcode, funct7 = word & 0x7F, word >> 25
        assert not (opcode == 0x33 and funct7 == 1), f"{what}+0x{offset:x}: M-extension instruction 0x{word:08x}"


# --------------------------------------------------------------------------- runtime objects

# Runtime functions that must not call compiler-rt arithmetic (hot paths).
HOT_RUNTIME_FUNCTIONS = ["mem_alloc", "mem_reset", "memcpy", "memmove", "memset", "memcmp", "strlen", "printf",
                         "vprintf", "puts", "putchar", "check_stack", "fsb_get", "fsb_free",
                         "mram_read_unaligned", "mram_write_unaligned"]
SOFT_ARITH = re.compile(r"^__(mul|div|udiv|mod|umod|ashl|ashr|lshr)[sdt]i3$|^__.*[sd]f[23]?$")


def test_runtime_objects_use_sys_text_sections_and_rv32i(toolchain):
    for obj in toolchain.runtime_objects:
        with open(obj, "rb") as fh:
            elf = ELFFile(fh)
            assert elf["e_machine"] == "EM_RISCV" and elf.elfclass == 32
            assert elf["e_flags"] == 0, f"{obj.name}: e_flags 0x{elf['e_flags']:x} (want soft-float, no RVC)"
            for sec in elf.iter_sections():
                if sec["sh_flags"] & 0x4 and sec["sh_size"] > 0:  # SHF_EXECINSTR with code
                    assert sec.name.startswith(".text.__sys"), f"{obj.name}: code in section {sec.name}"
                    _assert_rv32i_only(sec.data(), f"{obj.name}:{sec.name}")
            for sec in elf.iter_sections():
                if sec["sh_type"] != "SHT_RELA" or not sec.name.startswith(".rela.text.__sys."):
                    continue
                function = sec.name[len(".rela.text.__sys."):]
                if function not in HOT_RUNTIME_FUNCTIONS:
                    continue
                symtab = elf.get_section(sec["sh_link"])
                for rel in sec.iter_relocations():
                    target = symtab.get_symbol(rel["r_info_sym"]).name
                    assert not SOFT_ARITH.match(target), f"{function} calls compiler-rt {target}"


def test_ecall_header_defines_are_parseable():
    text = (INCLUDE / "cnm_ecall.h").read_text()
    ecalls = dict(re.findall(r"^#define CNM_ECALL_([A-Z_]+) ([0-9]+)\b", text, re.M))
    assert {k: int(v) for k, v in ecalls.items()} == {
        "STOP": 0, "ME": 1, "BOOT": 2, "FAULT": 3, "MRAM_READ": 4, "MRAM_WRITE": 5, "ACQUIRE": 6, "RELEASE": 7,
        "BARRIER_WAIT": 8, "SEM_TAKE": 9, "SEM_GIVE": 10, "HANDSHAKE_NOTIFY": 11, "HANDSHAKE_WAIT_FOR": 12,
        "PERFCOUNTER_CONFIG": 13, "PERFCOUNTER_GET": 14, "PRINTF": 15, "PUTS": 16, "PUTCHAR": 17, "LOCK": 18,
    }
    # every CNM_ECALL_/CNM_FAULT_ define is one line: name, decimal number, trailing comment
    for line in text.splitlines():
        if line.startswith(("#define CNM_ECALL_", "#define CNM_FAULT_")):
            assert re.fullmatch(r"#define CNM_(ECALL|FAULT)_[A-Z_]+ [0-9]+ +/\* .+ \*/", line), line
    faults = {k: int(v) for k, v in re.findall(r"^#define CNM_FAULT_([A-Z_]+) ([0-9]+)\b", text, re.M)}
    assert faults["HALT"] == 1 and faults["HEAP_EXHAUSTED"] == 2 and "STACK" not in faults  # a DPU checks no stack
    assert len(set(faults.values())) == len(faults)


# --------------------------------------------------------------------------- linked layout


@pytest.fixture(scope="session")
def linked(toolchain):
    """all_api.c linked for several NR_TASKLETS; returns {nr: (elf path, stack size)}."""
    configs = {1: 1024, 16: 512, 24: 1024}

    def build(nr: int):
        obj = toolchain.compile_kernel(ALL_API_KERNEL, nr, f"all_api_{nr}")
        out = toolchain.workdir / f"all_api_{nr}.elf"
        proc = toolchain.link([obj], out, {"NR_TASKLETS": nr, "STACK_SIZE_DEFAULT": configs[nr]})
        _check(proc, f"link NR_TASKLETS={nr}")
        return nr, (out, configs[nr])

    with ThreadPoolExecutor(max_workers=3) as pool:
        return dict(pool.map(build, configs))


RUNTIME_FUNCTIONS = ["__bootstrap", "mem_alloc", "mem_reset", "fsb_alloc", "fsb_get", "fsb_free", "printf",
                     "vprintf", "puts", "putchar", "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen",
                     "strnlen", "strcmp", "strncmp", "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr",
                     "strstr", "atoi", "atol", "strtol", "strtoul", "abort", "check_stack", "mram_read_unaligned",
                     "mram_write_unaligned", "__cnm_assert_fail"]


@pytest.mark.parametrize("nr", [1, 16, 24])
def test_linked_layout(linked, nr):
    path, stack_size = linked[nr]
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        syms = _symbols(elf)
        text = elf.get_section_by_name(".text")

        # IRAM: .text at 0x80000000, entry = crt0, runtime | kernel | soft library
        assert text["sh_addr"] == IRAM_BASE
        assert elf["e_entry"] == _addr(syms, "__bootstrap") == IRAM_BASE
        rt0, rt1 = _addr(syms, "__cnm_text_runtime_start"), _addr(syms, "__cnm_text_runtime_end")
        k0, k1 = _addr(syms, "__cnm_text_kernel_start"), _addr(syms, "__cnm_text_kernel_end")
        s0, s1 = _addr(syms, "__cnm_text_softlib_start"), _addr(syms, "__cnm_text_softlib_end")
        assert rt0 == IRAM_BASE < rt1 == k0 < k1 == s0 < s1 == IRAM_BASE + text["sh_size"]
        for name in RUNTIME_FUNCTIONS:
            assert rt0 <= _addr(syms, name) < rt1, f"{name} outside the runtime text"
        for name in ["main", "helper", "va_helper"]:
            assert k0 <= _addr(syms, name) < k1, f"{name} outside the kernel text"
        for name in ["__mulsi3", "__udivsi3", "__divsi3", "__addsf3", "__mulsf3"]:
            assert s0 <= _addr(syms, name) < s1, f"{name} outside the soft-library text"
        _assert_rv32i_only(text.data(), ".text")

        # WRAM: zero word at 0, nothing else below 8
        null = elf.get_section_by_name(".wram.null")
        assert null["sh_addr"] == 0 and null.data() == bytes(8)
        for sym in syms.values():
            if sym["st_shndx"] not in ("SHN_ABS", "SHN_UNDEF") and sym["st_info"]["type"] == "STT_OBJECT":
                assert not 0 <= sym["st_value"] < 8, f"{sym.name} at NULL"

        # __host variables between __sys_host_start and __sys_host_end, 8-aligned
        h0, h1 = _addr(syms, "__sys_host_start"), _addr(syms, "__sys_host_end")
        for name in ["DPU_INPUT_ARGUMENTS", "DPU_RESULTS"]:
            sym = syms[name]
            assert h0 <= sym["st_value"] and sym["st_value"] + sym["st_size"] <= h1, name
            assert sym["st_value"] % 8 == 0
        assert syms["DPU_RESULTS"]["st_size"] == 8 * nr

        # stack table, stacks, heap
        assert _addr(syms, "__cnm_nr_tasklets") == nr and _addr(syms, "NR_TASKLETS") == nr
        assert _addr(syms, "__cnm_stack_size") == stack_size
        start, end = _addr(syms, "__sys_stacks_start"), _addr(syms, "__sys_stacks_end")
        assert start % 8 == 0 and end - start == nr * stack_size and start >= h1
        table = struct.unpack("<24I", _read(elf, _addr(syms, "__sys_thread_stack_table"), 96))
        assert h1 <= _addr(syms, "__sys_thread_stack_table") < start
        assert list(table) == [start + (t + 1) * stack_size if t < nr else 0 for t in range(24)]
        heap = _addr(syms, "__sys_heap_pointer_reset")
        assert heap == (end + 7) & ~7 and _addr(syms, "__sys_wram_end") >= heap
        # the heap pointer global starts at the heap start; CLOCKS_PER_SEC is 350 MHz until the loader patches it
        assert struct.unpack("<I", _read(elf, _addr(syms, "__sys_heap_pointer"), 4))[0] == heap
        assert struct.unpack("<I", _read(elf, _addr(syms, "CLOCKS_PER_SEC"), 4))[0] == 350_000_000
        assert _addr(syms, "__cnm_wram_size") == 65536

        # MRAM: noinit (not loaded) then loaded data, then the 8-aligned heap pointer
        noinit, mram = elf.get_section_by_name(".mram.noinit"), elf.get_section_by_name(".mram")
        assert noinit["sh_type"] == "SHT_NOBITS" and noinit["sh_addr"] == MRAM_BASE
        assert mram["sh_type"] == "SHT_PROGBITS" and mram["sh_addr"] >= noinit["sh_addr"] + noinit["sh_size"]
        heap_m = _addr(syms, "__sys_used_mram_end")
        assert heap_m % 8 == 0 and heap_m >= mram["sh_addr"] + mram["sh_size"]
        for name in ["mram_table", "mram_kept", "mram_scratch", "mram_noinit_kept"]:
            sym = syms[name]
            assert MRAM_BASE <= sym["st_value"] and sym["st_value"] + sym["st_size"] <= heap_m, name
        for name in ["mram_scratch", "mram_noinit_kept"]:
            assert noinit["sh_addr"] <= _addr(syms, name) < noinit["sh_addr"] + noinit["sh_size"], name
        assert struct.unpack("<8Q", _read(elf, _addr(syms, "mram_table"), 64)) == (1, 2, 3, 4, 5, 6, 7, 8)
        for seg in elf.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_vaddr"] == noinit["sh_addr"] and noinit["sh_size"]:
                assert seg["p_filesz"] == 0, "loading the segments would overwrite .mram.noinit"

        # atomic bits: one byte each from 0xF0000000
        atomic = elf.get_section_by_name(".atomic")
        assert atomic["sh_addr"] == ATOMIC_BASE and atomic["sh_type"] == "SHT_NOBITS"
        bits = ["__atomic_bit_single_bit", "__atomic_bit_hand_bits", "__atomic_bit___mutex_counter_mutex",
                "__atomic_bit___sys_heap_lock", "__atomic_bit___sys_fsb_lock"]
        for name in bits:
            assert ATOMIC_BASE <= _addr(syms, name) < ATOMIC_BASE + 256, name
        assert syms["__atomic_bit_hand_bits"]["st_size"] == 4
        assert len({_addr(syms, name) for name in bits}) == len(bits)

        # kept sections survive --gc-sections
        assert "kept_word" in syms and "mram_kept" in syms and "fast_counter" in syms


def test_link_defaults_without_defsyms(toolchain, linked):
    obj = toolchain.workdir / "all_api_1.o"
    out = toolchain.workdir / "defaults.elf"
    _check(toolchain.link([obj], out, {}), "link without --defsym")
    with open(out, "rb") as fh:
        syms = _symbols(ELFFile(fh))
        assert _addr(syms, "__cnm_nr_tasklets") == 1 and _addr(syms, "__cnm_stack_size") == 1024
        assert _addr(syms, "__sys_stacks_end") - _addr(syms, "__sys_stacks_start") == 1024


@pytest.mark.parametrize(
    "defsyms, message",
    [
        ({"NR_TASKLETS": 25, "STACK_SIZE_DEFAULT": 1024}, "NR_TASKLETS must be in 1..24"),
        ({"NR_TASKLETS": 0, "STACK_SIZE_DEFAULT": 1024}, "NR_TASKLETS must be in 1..24"),
        ({"NR_TASKLETS": 4, "STACK_SIZE_DEFAULT": 0}, "STACK_SIZE_DEFAULT must be > 0"),
        ({"NR_TASKLETS": 4, "STACK_SIZE_DEFAULT": 100}, "STACK_SIZE_DEFAULT must be a multiple of 8"),
    ],
)
def test_link_asserts(toolchain, linked, defsyms, message):
    obj = toolchain.workdir / "all_api_24.o"
    proc = toolchain.link([obj], toolchain.workdir / "bad.elf", defsyms)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- compile-time checks

# (zig's "-c unused" notice is about the driver, not the source)
STRICT = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-command-line-argument"]


def _front_end(src: Path, extra: list[str] = ()) -> subprocess.CompletedProcess:
    """The cnmtune front end on src (C -> LLVM IR next to it)."""
    return _zig_cc([*FRONT_END, *extra, "-S", "-emit-llvm", str(src), "-o", str(src.with_suffix(".ll"))])


@pytest.mark.parametrize(
    "call, message",
    [
        ("mram_read(DPU_MRAM_HEAP_POINTER, buf, 12)", "mram_read: nb_of_bytes must be a multiple of 8"),
        ("mram_read(DPU_MRAM_HEAP_POINTER, buf, 4096)", "mram_read: nb_of_bytes must be at most 2048"),
        ("mram_write(buf, DPU_MRAM_HEAP_POINTER, 0)", "mram_write: nb_of_bytes must be at least 8"),
        ("mram_write(buf, DPU_MRAM_HEAP_POINTER, 3 * sizeof(uint32_t))",
         "mram_write: nb_of_bytes must be a multiple of 8"),
    ],
)
def test_constant_dma_size_rejected(tmp_path, call, message):
    src = tmp_path / "bad_dma.c"
    src.write_text(f"#include <mram.h>\n#include <stdint.h>\nuint64_t buf[512];\nvoid f(void) {{ {call}; }}\n")
    proc = _front_end(src)
    assert proc.returncode != 0, "constant DMA size was accepted"
    assert message in proc.stderr and "DMA rule: 8 <= size <= 2048, size % 8 == 0" in proc.stderr, proc.stderr


def test_valid_and_variable_dma_sizes_accepted(tmp_path):
    src = tmp_path / "ok_dma.c"
    src.write_text(
        "#include <mram.h>\n#include <stdint.h>\nuint64_t buf[512];\n"
        "void f(unsigned n) { mram_read(DPU_MRAM_HEAP_POINTER, buf, 8); mram_read(DPU_MRAM_HEAP_POINTER, buf, 2048);"
        " mram_write(buf, DPU_MRAM_HEAP_POINTER, n); mram_read((__mram_ptr void *)(uintptr_t)n, buf, 12 + 4); }\n"
    )
    _check(_front_end(src, STRICT), "valid DMA sizes")


def test_nr_tasklets_over_24_rejected_by_defs_h(tmp_path):
    src = tmp_path / "nr.c"
    src.write_text("#include <defs.h>\n")
    proc = _front_end(src, ["-DNR_TASKLETS=25"])
    assert proc.returncode != 0 and "NR_TASKLETS must not exceed 24" in proc.stderr


HEADERS = sorted(p.name for p in INCLUDE.glob("*.h"))


def test_every_header_compiles_standalone(tmp_path):
    assert len(HEADERS) >= 25

    def compile_alone(header: str):
        src = tmp_path / f"alone_{header}.c"
        src.write_text(f"#include <{header}>\n")
        return header, _front_end(src, STRICT)

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for header, proc in pool.map(compile_alone, HEADERS):
            _check(proc, f"#include <{header}> alone")
