"""Loading proxy ELFs, and the one-line error for every file cnmtune cannot read."""

from __future__ import annotations

import struct
from pathlib import Path

import capstone
import pytest

from cnmtune.costmodel import extract_features, load_elf
from cnmtune.costmodel.analysis.rv32_program import decode_rv32
from cnmtune.errors import ElfError, NotAnElf, TruncatedElf, UnsupportedMachine
from proxy_build import zig_cc


def patched(path: Path, tmp_path: Path, offset: int, fmt: str, value: int) -> Path:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    out = tmp_path / f"patched-{offset}.elf"
    out.write_bytes(bytes(data))
    return out


def renamed_section(path: Path, tmp_path: Path, old: bytes, new: bytes) -> Path:
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) >= 1
    out = tmp_path / "renamed.elf"
    out.write_bytes(data.replace(old, new))
    return out


def raises(exc_type, source, *words: str) -> str:
    with pytest.raises(exc_type) as info:
        load_elf(source)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_loads_the_proxy_elf_with_merged_aliases(elf_o0):
    image = load_elf(elf_o0)
    names = [f.name for f in image.functions]
    assert image.machine == "riscv32" and image.text_address == 0x80000000
    assert {"main", "helper", "mem_alloc", "_start", "__mulsi3", "__divsi3"} <= set(names)
    assert not [n for n in names if n.startswith("compiler_rt.") and n.endswith("__mulsi3")]
    assert len({f.address for f in image.functions}) == len(names)
    assert image.symbol("__cnm_text_kernel_start") is not None
    assert "NR_TASKLETS" in image.absolute and image.symbol("NR_TASKLETS") == 4
    assert load_elf(elf_o0.read_bytes(), name="x").functions == image.functions


def test_a_text_file_is_not_an_elf(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is text\n")
    raises(NotAnElf, path, str(path), "not an ELF file")


def test_a_missing_file_names_the_cause(tmp_path):
    raises(ElfError, tmp_path / "nope.elf", "nope.elf", "cannot read")


@pytest.mark.parametrize("keep", [0.5, 0.9, 40])
def test_a_truncated_elf(elf_o0, tmp_path, keep):
    data = elf_o0.read_bytes()
    cut = tmp_path / "cut.elf"
    cut.write_bytes(data[:int(len(data) * keep) if keep < 1 else keep])
    raises(TruncatedElf, cut, "cut.elf", "truncated")


def test_an_x86_64_elf_is_named(tmp_path):
    (tmp_path / "x.c").write_text("int f(void) { return 1; }\n")
    zig_cc(["-target", "x86_64-linux-musl", "-c", "x.c", "-o", "x.o"], tmp_path)
    raises(UnsupportedMachine, tmp_path / "x.o", "x86-64 ELF", "e_machine 62")


@pytest.mark.parametrize("machine, name", [(183, "AArch64"), (40, "ARM"), (3, "x86")])
def test_other_machines_are_named(elf_o0, tmp_path, machine, name):
    raises(UnsupportedMachine, patched(elf_o0, tmp_path, 18, "<H", machine), name)


def test_a_real_upmem_dpu_elf_is_recognised(elf_o0, tmp_path):
    message = raises(UnsupportedMachine, patched(elf_o0, tmp_path, 18, "<H", 245))
    assert "UPMEM DPU ELF (e_machine 245), not a RISC-V proxy binary; extract_features reads " \
           "it with the DPU decoder" in message


def test_elf64_and_compressed_riscv_are_refused(elf_o0, tmp_path):
    raises(UnsupportedMachine, patched(elf_o0, tmp_path, 4, "B", 2), "ELF64")
    raises(UnsupportedMachine, patched(elf_o0, tmp_path, 36, "<I", 0x1), "compressed")


def test_a_relocatable_object_is_not_an_executable(elf_o0, tmp_path):
    raises(ElfError, patched(elf_o0, tmp_path, 16, "<H", 1), "ET_REL", "link it first")


def test_missing_symtab_or_text_is_named(elf_o0, tmp_path):
    raises(ElfError, renamed_section(elf_o0, tmp_path, b".symtab\0", b".nosym\0\0"), ".symtab")
    raises(ElfError, renamed_section(elf_o0, tmp_path, b".text\0", b".txet\0"), ".text")


def test_an_undecodable_word_names_its_address_and_function(elf_o0, tmp_path):
    image = load_elf(elf_o0)
    main = next(f for f in image.functions if f.name == "main")
    text_offset = image.data.index(image.text)
    offset = text_offset + (main.address - image.text_address) + 8
    bad = patched(elf_o0, tmp_path, offset, "<I", 0xFFFFFFFF)
    with pytest.raises(ElfError) as info:
        extract_features(bad)
    assert f"0x{main.address + 8:08x}" in str(info.value) and "main" in str(info.value)


def test_a_fence_with_reserved_fields_set_is_a_fence(elf_o0, tmp_path):
    # The unprivileged spec (FENCE, FENCE.I): base implementations ignore rd, rs1 and an unknown
    # fm, so the word executes as a fence; capstone refuses it, the base-ISA decoding does not.
    word = 0x0B500A0F  # fence with rd = x20, rs1 = x0, fm = 0
    md = capstone.Cs(capstone.CS_ARCH_RISCV, capstone.CS_MODE_RISCV32)
    assert not list(md.disasm_lite(struct.pack("<I", word), 0))
    image = load_elf(elf_o0)
    main = next(f for f in image.functions if f.name == "main")
    index = (main.address - image.text_address) // 4 + 2
    fenced = patched(elf_o0, tmp_path, image.data.index(image.text) + 4 * index, "<I", word)
    assert decode_rv32(load_elf(fenced)).mnemonics[index] == "fence"
