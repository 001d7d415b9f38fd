"""The cnmtune command line through its entry point (`run_cnmtune`, in the test's process), on real
compiles."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from tests.conftest import CliResult, run_cnmtune as cnmtune

VA_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "prim" / "va"


@pytest.fixture(scope="module")
def va_elf(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "va.elf"
    result = cnmtune("compile", str(VA_DIR), "--pipeline", "O2", "--tasklets", "16", "-o", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_features_lowered_shows_the_dpu_code_of_a_proxy_elf(va_elf):
    result = cnmtune("features", str(va_elf), "--lowered", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    lowered = record["lowered"]
    assert record["feature_schema"]["version"] == "dpu-7"  # the schema of real DPU ELFs
    assert record["kernel_histogram"] == lowered["kernel_histogram"]
    assert 0 < lowered["kernel_dpu_instructions"] < lowered["kernel_rv32_instructions"]
    assert lowered["iram_dpu_instructions"] < lowered["iram_rv32_instructions"]
    assert sum(lowered["kernel_histogram"].values()) == lowered["kernel_dpu_instructions"]
    assert {"ld", "sd", "call"} <= set(lowered["kernel_histogram"]) and "one-to-one" in lowered["rules"]
    table = cnmtune("features", str(va_elf), "--lowered")
    assert "IRAM (kernel + runtime)" in table.stdout and "lsl_add" in table.stdout


def test_compile_then_features_json(va_elf):
    result = cnmtune("features", str(va_elf), "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["iram_instructions"] > 0
    assert sum(record["histogram"].values()) > 0 and record["kernel_histogram"]
    assert len(record["feature_schema"]["hash"]) == 16
    assert record["nr_tasklets"] == 16
    assert record["kernel_calls"]["mram_read"] >= 2


def test_features_table(va_elf):
    result = cnmtune("features", str(va_elf))
    assert result.returncode == 0, result.stderr
    assert "kernel opcode histogram" in result.stdout and "mram_read" in result.stdout


def test_compile_json_record(tmp_path):
    result = cnmtune("compile", str(VA_DIR), "-p", "sroa,instcombine", "-t", "4", "-D", "BL=8",
                     "-o", str(tmp_path / "x.elf"), "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["variant"] == "va[sroa,instcombine, 4 tasklets, BL=8, INT32]"
    assert record["iram_instructions"] == record["kernel_instructions"] + record["runtime_instructions"]
    assert (tmp_path / "x.elf").read_bytes()[:4] == b"\x7fELF"


def test_passes_lists_the_vocabulary():
    result = cnmtune("passes", "--json")
    entries = json.loads(result.stdout)
    names = [p["name"] for p in entries if p["scope"] != "knob"]
    assert "loop-unroll" in names and "sroa" in names and len(names) >= 40
    assert {"name": "unroll-count", "scope": "knob", "range": "0..64"}.items() <= next(
        p for p in entries if p["scope"] == "knob").items()


def test_compare_prints_three_different_histograms(tmp_path):
    plot, records = tmp_path / "h.png", tmp_path / "h.json"
    result = cnmtune("compare", str(VA_DIR), "-p", "O0", "-p", "O2", "--random", "1", "--random-length", "10",
                     "--seed", "7", "--plot", str(plot), "--json-out", str(records), columns=80)
    assert result.returncode == 0, result.stderr
    assert "op lw" in result.stdout
    # at 80 columns: pipelines head their columns by id and are spelled out whole below the table
    # (the "wrote PATH" lines are as long as pytest's temporary paths: a path is never wrapped)
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines() if not line.startswith("wrote ")) <= 80
    data = json.loads(records.read_text())
    header = next(line for line in result.stdout.splitlines() if "┃ feature" in line)
    assert header.replace("┃", " ").split() == ["feature", "P1", "P2", "P3"]
    legend = result.stdout.split("pipelines:\n")[1]
    assert "P1 O0" in legend and "P2 O2" in legend
    assert set(data[2]["pipeline"].split(",")) <= set(legend.replace(",", " ").split())
    histograms = [json.dumps(r["features"]["kernel_histogram"], sort_keys=True) for r in data]
    assert len(set(histograms)) == 3
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _error(result: CliResult, exit_code: int = 1) -> str:
    """stderr of a command that failed (exit code 1) or could not run as written (2)."""
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stderr


def test_broken_c_exit_code_1_with_compiler_message(tmp_path):
    (tmp_path / "bad" / "dpu").mkdir(parents=True)
    (tmp_path / "bad" / "dpu" / "task.c").write_text("int main(void) { return 1 +; }\n")
    message = _error(cnmtune("compile", str(tmp_path / "bad"), "-o", str(tmp_path / "x.elf")))
    assert "does not compile" in message and "expected expression" in message


def test_unknown_pass_exit_code_2():
    message = _error(cnmtune("compile", str(VA_DIR), "-p", "sroa,loop-unrol", "-o", "/dev/null"), 2)
    assert "unknown pass 'loop-unrol' (closest: loop-unroll" in message and "`cnmtune passes`" in message
    assert message.count("\n") == 1 and len(message) < 160  # one short line, not the whole vocabulary


def test_compile_refuses_a_directory_as_its_output(tmp_path):
    message = _error(cnmtune("compile", str(VA_DIR), "-o", str(tmp_path)))
    assert message == f"error: cannot write {tmp_path}: Is a directory\n"


def test_not_an_elf(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text(":x:[b]ok\n")  # the user's bytes shown as they are: no emoji, no markup
    message = _error(cnmtune("features", str(text)))
    assert "not an ELF" in message and "(starts with b':x:[b]ok'," in message


def test_truncated_elf(va_elf, tmp_path):
    cut = tmp_path / "cut.elf"
    cut.write_bytes(va_elf.read_bytes()[:200])
    assert "truncated" in _error(cnmtune("features", str(cut))).lower()


def test_other_machine_is_named(va_elf, tmp_path):
    data = bytearray(va_elf.read_bytes())
    data[18:20] = struct.pack("<H", 62)  # e_machine = x86-64
    other = tmp_path / "x86.elf"
    other.write_bytes(bytes(data))
    assert "x86-64" in _error(cnmtune("features", str(other)))


def test_real_dpu_elf_is_recognised(va_elf, tmp_path):
    data = bytearray(va_elf.read_bytes())
    data[18:20] = struct.pack("<H", 245)
    dpu = tmp_path / "dpu.elf"
    dpu.write_bytes(bytes(data))
    # A proxy ELF relabelled as a DPU one: the DPU decoder's checks refuse its code.
    message = _error(cnmtune("features", str(dpu)))
    assert "DPU" in message and ("self-check" in message or "8-byte DPU" in message)


def test_iram_overflow_exit_code_1(tmp_path):
    body = "\n".join(f"    sink[{i % 64}] = sink[{(i * 7) % 64}] + {i};" for i in range(3000))
    (tmp_path / "big" / "dpu").mkdir(parents=True)
    (tmp_path / "big" / "dpu" / "task.c").write_text(f"volatile int sink[64];\nint main(void) {{\n{body}\nreturn 0;\n}}\n")
    assert "IRAM overflow" in _error(cnmtune("compile", str(tmp_path / "big"), "-p", "O0", "-o", str(tmp_path / "b.elf")))


def test_wram_overflow_exit_code_1(tmp_path):
    (tmp_path / "fat" / "dpu").mkdir(parents=True)
    (tmp_path / "fat" / "dpu" / "task.c").write_text("char big[70000];\nint main(void) { return big[3]; }\n")
    assert "WRAM overflow" in _error(cnmtune("compile", str(tmp_path / "fat"), "-o", str(tmp_path / "f.elf")))


def test_run_verifies_and_reports_times():
    result = cnmtune("run", str(VA_DIR), "--tasklets", "16", "--dpus", "4", "--size", "1048576", "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["verified"] and record["nr_dpus"] == 4 and record["size"] == 1048576
    assert record["kernel_s"] > 0 and record["host_to_dpu_s"] > 0 and record["dpu_to_host_s"] > 0
    assert 0 < record["ipc"] <= 1.0
    assert record["dma_read_bytes"] == 2 * 4 * 1048576 and record["dma_write_bytes"] == 4 * 1048576
    assert len(record["tasklets"]) == 16


def test_run_table_and_a_simulator_fault(tmp_path):
    result = cnmtune("run", str(VA_DIR), "--tasklets", "4", "--dpus", "2", "--size", "small")
    assert result.returncode == 0, result.stderr
    assert "verified" in result.stdout and "DMA wait" in result.stdout
    (tmp_path / "bad" / "dpu").mkdir(parents=True)
    (tmp_path / "bad" / "dpu" / "task.c").write_text("int main(void) { return *(volatile int *)0x40000; }\n")
    message = _error(cnmtune("run", str(tmp_path / "bad"), "--size", "8"))
    assert "no host side" in message
