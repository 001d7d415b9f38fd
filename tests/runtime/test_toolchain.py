"""The proxy toolchain on real compiles: pipelines, cache, capacity checks, bad input."""

from __future__ import annotations

import hashlib
import os

import pytest
from elftools.elf.elffile import ELFFile

from cnmtune.dpu.memory_map import IRAM_BASE, IRAM_CAPACITY_INSTRUCTIONS
from cnmtune.dpu.elf_tables import symbol_values
from cnmtune.errors import (CompileError, ElfError, IramOverflow, KernelError, LinkError, NotAnElf, TruncatedElf,
                            WramOverflow)
from cnmtune.passes import NAMES, Pipeline, random_pipeline
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant, zig
from cnmtune.runtime.toolchain.layout import read_memory_use

SMALL_KERNEL = """
#include <defs.h>
#include <mram.h>
#include <stdint.h>
__host uint32_t result;
int main(void) { if (me() == 0) result = 42; return 0; }
"""


def _symbols(path):
    with open(path, "rb") as handle:
        elf = ELFFile(handle)
        text = elf.get_section_by_name(".text")
        return {s.name: s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols()}, text["sh_addr"]


def test_va_o2_links_with_dpu_memory_map(va_o2):
    symbols, text_addr = _symbols(va_o2.elf_path)
    assert text_addr == IRAM_BASE
    assert symbols["__cnm_text_kernel_start"] <= symbols["main"] < symbols["__cnm_text_kernel_end"]
    assert symbols["DPU_INPUT_ARGUMENTS"] < 0x10000
    assert symbols["__sys_used_mram_end"] >= 0x08000000
    assert 0 < va_o2.memory.kernel_instructions < IRAM_CAPACITY_INSTRUCTIONS
    assert va_o2.memory.wram_stack_bytes == 16 * 1024
    assert len(va_o2.elf_hash) == 64


def test_symbols_read_without_pyelftools_agree_with_it(va_o2):
    with open(va_o2.elf_path, "rb") as handle:
        expected: dict[str, int] = {}
        for symbol in ELFFile(handle).get_section_by_name(".symtab").iter_symbols():
            if symbol.name:
                expected.setdefault(symbol.name, symbol["st_value"])
    assert symbol_values(va_o2.elf_path.read_bytes(), "va") == expected


def test_memory_use_of_a_cut_foreign_or_unlinked_file_is_one_clear_error(toolchain, va_o2, tmp_path):
    data = va_o2.elf_path.read_bytes()
    cut, text = tmp_path / "cut.elf", tmp_path / "text.elf"
    cut.write_bytes(data[:len(data) // 2])
    text.write_bytes(b"int main(void) { return 0; }\n")
    with pytest.raises(TruncatedElf, match=r"cut.elf: truncated ELF \(section"):
        read_memory_use(cut)
    with pytest.raises(NotAnElf, match="text.elf: not an ELF file"):
        read_memory_use(text)
    with pytest.raises(ElfError, match="not linked with cnmtune's DPU linker script"):
        read_memory_use(toolchain.runtime_objects()[0])  # a relocatable object: no boundary symbols


def test_pipelines_change_the_binary(toolchain, va, va_o2):
    o0 = toolchain.compile(Variant.of(va, "O0", 16))
    rand = toolchain.compile(Variant.of(va, random_pipeline(10, seed=7), 16))
    assert len({o0.elf_hash, va_o2.elf_hash, rand.elf_hash}) == 3
    assert o0.memory.kernel_instructions > va_o2.memory.kernel_instructions


def test_tasklets_and_defines_reach_compile_and_link(toolchain, va):
    small = toolchain.compile(Variant.of(va, "O2", 2, {"BL": 6}))
    assert small.memory.wram_stack_bytes == 2 * 1024
    symbols, _ = _symbols(small.elf_path)
    assert symbols["NR_TASKLETS"] == 2


HELPER_KERNEL = """
#include <defs.h>
#include <stdint.h>
__host uint32_t data[64];
__host uint32_t kept;
static inline int odd(uint32_t v) { return v & 1; }
int main(void) {
    uint32_t n = 0;
    for (int i = 0; i < 64; i++)
        if (odd(data[i]))
            n++;
    kept = n;
    return 0;
}
"""


def test_o2_inlines_static_helpers_as_the_upmem_compiler_does(toolchain, make_kernel):
    """The front end's IR carries no noinline (L2P's -O0 front end puts it on every function),
    so O2 inlines a static helper as PrIM's `dpu-upmem-dpurte-clang -O2` does; O0 keeps it."""
    kernel = make_kernel(HELPER_KERNEL)
    ir = toolchain.frontend(Variant.of(kernel, "O2", 1), kernel.sources[0])
    assert "define internal i32 @odd" in ir and "noinline" not in ir
    o2, _ = _symbols(toolchain.compile(Variant.of(kernel, "O2", 1)).elf_path)
    o0, _ = _symbols(toolchain.compile(Variant.of(kernel, "O0", 1)).elf_path)
    assert "odd" in o0 and "odd" not in o2


UNUSED_HELPER_KERNEL = """
#include <defs.h>
#include <stdint.h>
__host uint32_t result;
#ifdef WITH_HELPER
__attribute__((noinline)) uint32_t scaled_sum(uint32_t n) {
    uint32_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += i ^ (s >> 3);
    return s;
}
#endif
int main(void) {
#ifdef CALL_HELPER
    result = scaled_sum(result);
#else
    result = me() + 1;
#endif
    return 0;
}
"""


def test_an_unused_function_is_dropped_at_link_time(toolchain, make_kernel):
    """Each function has its own section (function_sections), so --gc-sections drops a non-static
    function nothing calls, as the SDK's -ffunction-sections build does: the program is the one
    without it, symbol and IRAM. Called (and not inlined), it is there."""
    kernel = make_kernel(UNUSED_HELPER_KERNEL)
    ir = toolchain.frontend(Variant.of(kernel, "O2", 1, {"WITH_HELPER": None}), kernel.sources[0])
    assert '@scaled_sum(i32 noundef %0) #0 section ".text.scaled_sum" {' in ir
    unused = toolchain.compile(Variant.of(kernel, "O2", 1, {"WITH_HELPER": None}))
    without = toolchain.compile(Variant.of(kernel, "O2", 1))
    called = toolchain.compile(Variant.of(kernel, "O2", 1, {"WITH_HELPER": None, "CALL_HELPER": None}))
    assert "scaled_sum" not in _symbols(unused.elf_path)[0] and "scaled_sum" in _symbols(called.elf_path)[0]
    assert unused.memory == without.memory and unused.memory.kernel_instructions < called.memory.kernel_instructions


def test_second_compile_hits_the_cache(toolchain, va):
    variant = Variant.of(va, "sroa,instcombine,loop-rotate", 8)
    first = toolchain.compile(variant)
    second = toolchain.compile(variant)
    assert second.cached and second.elf_hash == first.elf_hash and second.elf_path == first.elf_path


def test_pipelines_that_give_the_same_objects_share_one_link(tmp_path, va, monkeypatch):
    toolchain = ProxyToolchain(BuildCache(tmp_path))  # its own cache: no other test has linked these
    links = []
    link = toolchain.link
    monkeypatch.setattr(toolchain, "link", lambda *args, **kw: links.append(args[1]) or link(*args, **kw))
    plain = toolchain.compile(Variant.of(va, "O0", 4))
    # va declares no prototype it does not use: the pass changes nothing, and the objects are the same
    stripped = toolchain.compile(Variant.of(va, "strip-dead-prototypes", 4))
    assert not stripped.cached and stripped.elf_path == plain.elf_path and stripped.elf_hash == plain.elf_hash
    assert links == [plain.elf_path]
    other = toolchain.compile(Variant.of(va, "O0", 8))  # other link parameters: a link of its own
    assert other.elf_hash != plain.elf_hash and links == [plain.elf_path, other.elf_path]
    assert toolchain.compile(Variant.of(va, "strip-dead-prototypes", 4)).cached


def test_source_edit_invalidates_the_cache(toolchain, make_kernel):
    kernel = make_kernel(SMALL_KERNEL)
    first = toolchain.compile(Variant.of(kernel, "O2", 1))
    (kernel.root / "dpu" / "task.c").write_text(SMALL_KERNEL.replace("42", "43"))
    second = toolchain.compile(Variant.of(kernel, "O2", 1))
    assert not second.cached and second.elf_hash != first.elf_hash


def test_the_digest_covers_the_source_files_rglob_finds(make_kernel):
    """Kernel.digest hashes the source files ``sorted(rglob("*"))`` lists (os.walk finds them): in
    subdirectories, hidden or linked; not other files, nor those of a linked directory."""
    kernel = make_kernel(SMALL_KERNEL)
    dpu = kernel.root / "dpu"
    (dpu / "sub" / "deeper").mkdir(parents=True)
    (dpu / "sub" / "deeper" / "a.h").write_text("#define A 1\n")
    (dpu / "sub.h").write_text("#define S 1\n")  # sorts after the directory sub/, as rglob's paths do
    (dpu / ".hidden.inc").write_text("1\n")
    outside = kernel.root.parent / "outside"
    (outside / "linked").mkdir(parents=True)
    (outside / "linked" / "x.h").write_text("#define X 1\n")
    (outside / "real.h").write_text("#define R 1\n")
    (dpu / "alias.h").symlink_to(outside / "real.h")
    (dpu / "linked").symlink_to(outside / "linked", target_is_directory=True)
    listed = [f for f in sorted(dpu.rglob("*")) if f.is_file() and f.suffix in (".c", ".h", ".S", ".s", ".inc", ".py")]
    expected = hashlib.sha256()
    for file in listed:
        expected.update(f"dpu/{file.relative_to(dpu)}".encode() + b"\0" + file.read_bytes())
    assert kernel.include_dirs == (dpu,) and kernel.digest() == expected.hexdigest()
    assert [str(f.relative_to(dpu)) for f in listed] == [".hidden.inc", "alias.h", "sub/deeper/a.h", "sub.h", "task.c"]
    before = kernel.digest()
    (dpu / "notes.txt").write_text("not a source\n")
    (outside / "linked" / "x.h").write_text("#define X 2\n")
    assert kernel.digest() == before
    (outside / "real.h").write_text("#define R 2\n")
    assert kernel.digest() != before


@pytest.mark.parametrize("name", NAMES)
def test_every_pass_produces_a_linked_program(toolchain, va, name):
    binary = toolchain.compile(Variant.of(va, Pipeline(passes=(name,)), 4))
    symbols, _ = _symbols(binary.elf_path)
    assert "DPU_INPUT_ARGUMENTS" in symbols and "__sys_used_mram_end" in symbols


@pytest.mark.parametrize("level", ["O1", "O3", "Os", "Oz"])
def test_levels_compile(toolchain, va, level):
    assert toolchain.compile(Variant.of(va, level, 4)).memory.kernel_instructions > 0


def test_broken_c_shows_compiler_message(toolchain, make_kernel):
    kernel = make_kernel("int main(void) { return undefined_thing; }\n")
    with pytest.raises(CompileError) as err:
        toolchain.compile(Variant.of(kernel, "O2", 1))
    text = str(err.value)
    assert "scratch[O2, 1 tasklet]" in text and "task.c does not compile" in text
    assert "undefined_thing" in text


def test_a_source_that_does_not_compile_fails_once_per_toolchain(toolchain, make_kernel, monkeypatch):
    """The other pipelines of the same build report the front end's failure without running zig
    again, each under its own name; other defines, or the source fixed, compile again."""
    kernel = make_kernel("int main(void) { return undefined_thing; }\n")
    frontends = []  # the -D flags of every front-end run
    real_run = zig.run

    def counted(args, **kwargs):
        if "-emit-llvm" in args:
            frontends.append([a for a in args if a.startswith("-DNR_TASKLETS")])
        return real_run(args, **kwargs)

    monkeypatch.setattr(zig, "run", counted)
    builds = (("O2", 1), ("O3", 1), ("sroa,instcombine", 1), ("O2", 2))
    messages = []
    for pipeline, tasklets in builds:
        with pytest.raises(CompileError) as err:
            toolchain.compile(Variant.of(kernel, pipeline, tasklets))
        messages.append(str(err.value))
    assert frontends == [["-DNR_TASKLETS=1"], ["-DNR_TASKLETS=2"]]
    assert [m.splitlines()[0] for m in messages] == [
        f"scratch[{p}, {t} tasklet{'s' * (t > 1)}]: task.c does not compile" for p, t in builds]
    assert all("undefined_thing" in m and m.splitlines()[1:] == messages[0].splitlines()[1:] for m in messages)
    (kernel.root / "dpu" / "task.c").write_text("int main(void) { return 0; }\n")
    assert toolchain.compile(Variant.of(kernel, "O2", 1)).memory.kernel_instructions > 0


def test_a_front_end_failure_clang_did_not_place_in_a_file_is_tried_again(toolchain, make_kernel, monkeypatch,
                                                                           tmp_path):
    """A failure with no error at a line of a file (here zig cannot open its cache; a full disk
    alike) may not recur: the next build of the same sources runs the front end again."""
    kernel = make_kernel(SMALL_KERNEL + "/* sources no other test builds: not in the build cache */\n")
    assert toolchain.identity  # zig's version is read (once a process) before its cache is broken
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ZIG_GLOBAL_CACHE_DIR", str(tmp_path / "a-file" / "zig"))
    with pytest.raises(CompileError, match="unable to open global cache directory"):
        toolchain.compile(Variant.of(kernel, "O2", 1))
    monkeypatch.delenv("ZIG_GLOBAL_CACHE_DIR")
    assert toolchain.compile(Variant.of(kernel, "O2", 1)).memory.kernel_instructions > 0


def test_undefined_function_is_a_link_error(toolchain, make_kernel):
    kernel = make_kernel("void missing(void); int main(void) { missing(); return 0; }\n")
    with pytest.raises(LinkError, match="missing"):
        toolchain.compile(Variant.of(kernel, "O0", 1))


def test_iram_overflow(toolchain, make_kernel):
    body = "\n".join(f"    sink[{i % 64}] = sink[{(i * 7) % 64}] + {i};" for i in range(3000))
    kernel = make_kernel(f"volatile int sink[64];\nint main(void) {{\n{body}\n    return 0;\n}}\n")
    with pytest.raises(IramOverflow, match=r"IRAM overflow: \d+ DPU instructions \(lowered from kernel \d+ .* "
                                           r"exceed the DPU's 4096"):
        toolchain.compile(Variant.of(kernel, "O0", 1))


def test_iram_is_judged_on_lowered_dpu_instructions(toolchain, make_kernel):
    """Stores of 32-bit constants: lui + addi + sw in rv32i, move + sw on a DPU. Over 4096 rv32i
    instructions, under 4096 DPU ones: the program fits, as it would built by the UPMEM SDK."""
    body = "\n".join(f"    sink[{i % 64}] = {0x12345678 + 4097 * i};" for i in range(1500))
    kernel = make_kernel(f"volatile int sink[64];\nint main(void) {{\n{body}\n    return 0;\n}}\n")
    memory = toolchain.compile(Variant.of(kernel, "O2", 1)).memory
    assert memory.iram_instructions > 4096 >= memory.iram_dpu_instructions
    assert memory.iram_dpu_instructions < 0.7 * memory.iram_instructions


def test_wram_overflow_from_globals(toolchain, make_kernel):
    kernel = make_kernel("char big[70000];\nint main(void) { big[1] = 1; return big[2]; }\n")
    with pytest.raises(WramOverflow, match=r"WRAM overflow: \d+ B \(globals \d+"):
        toolchain.compile(Variant.of(kernel, "O0", 1))


def test_wram_overflow_from_stacks(toolchain, make_kernel):
    kernel = make_kernel(SMALL_KERNEL)
    with pytest.raises(WramOverflow, match="stacks 98304"):
        toolchain.compile(Variant.of(kernel, "O0", 24, {"STACK_SIZE_DEFAULT": 4096}))


DEEP_STACK = """
#include <defs.h>
#include <stdint.h>
__host uint32_t out[NR_TASKLETS];
int main(void) {
    volatile uint32_t buf[512];  /* 2 KiB of stack: more than the default 1 KiB */
    uint32_t sum = 0;
    for (int i = 0; i < 512; i++) buf[i] = i + me();
    for (int i = 0; i < 512; i++) sum += buf[i];
    out[me()] = sum;
    return 0;
}
"""

DEEP_WORKLOAD = """
import numpy as np
from cnmtune.runtime.workload import Workload

class Deep(Workload):
    name = "deep"
    nr_tasklets = 4
    sizes = {"small": 1}

    def inputs(self):
        return {}

    def reference(self, inputs):
        return {"out": np.array([sum(range(512)) + 512 * t for t in range(self.tasklets)], np.uint32)}

    def execute(self, device, inputs):
        device.launch()
        return {"out": np.frombuffer(device.push_from("out", 4 * self.tasklets)[0], np.uint32)}
"""


def test_stack_size_define_reaches_the_link(toolchain, make_kernel):
    """-D STACK_SIZE_DEFAULT sizes the linked stacks (what `cnmtune run/compile -D` pass), so a
    kernel needing 2 KiB of stack runs with 4 KiB and overflows the default 1 KiB."""
    from cnmtune.costmodel import extract_features
    from cnmtune.errors import CnmtuneError
    from cnmtune.runtime.target import SimTarget

    kernel = make_kernel(DEEP_STACK, workload=DEEP_WORKLOAD)
    variant = Variant.of(kernel, "O2", 4, {"STACK_SIZE_DEFAULT": 4096})
    assert (variant.stack_size, variant.defines) == (4096, ())
    assert "-DSTACK_SIZE_DEFAULT=4096" in variant.define_flags()
    assert variant.label == "deep[O2, 4 tasklets, STACK_SIZE_DEFAULT=4096]"
    binary = toolchain.compile(variant)
    assert binary.memory.wram_stack_bytes == 4 * 4096
    assert extract_features(binary.elf_path).footprint.stack_size == 4096
    assert SimTarget().run(variant, 1, 1).verified
    # a DPU runs on past its stack (no check) and corrupts the neighbouring memory; the error says so
    with pytest.raises(CnmtuneError, match=r"DPU 0, tasklet 0: the stack reached 2,[0-9]{3} B of its 1,024 B"):
        SimTarget().run(Variant.of(kernel, "O2", 4), 1, 1)
    with pytest.raises(KernelError, match="STACK_SIZE_DEFAULT=100: the stack size must be a positive multiple of 8"):
        Variant.of(kernel, "O2", 4, {"STACK_SIZE_DEFAULT": 100})


def test_bad_tasklets_and_defines_are_refused(va):
    with pytest.raises(KernelError, match="NR_TASKLETS=25"):
        Variant.of(va, "O2", 25)
    with pytest.raises(KernelError, match="BL=99"):
        Variant.of(va, "O2", 16, {"BL": 99})


def test_missing_kernel_dir(tmp_path):
    from cnmtune.runtime import Kernel

    with pytest.raises(KernelError, match="does not exist"):
        Kernel.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KernelError, match=r"no device sources"):
        Kernel.load(tmp_path / "empty")


def test_a_zig_tool_past_its_timeout_is_one_compile_error(tmp_path):
    """A hung front end or linker ends in a CompileError naming the tool and the limit (a stalled link
    was once recorded as a raw subprocess.TimeoutExpired). The tool hangs for sure: it reads a named
    pipe that nobody writes."""
    fifo = tmp_path / "never-written.c"
    os.mkfifo(fifo)
    with pytest.raises(CompileError, match=r"^zig cc did not finish within 0\.5 s$"):
        zig.run(["cc", "-E", str(fifo)], timeout=0.5)
