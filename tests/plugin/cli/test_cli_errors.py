"""Bad input a careful user hit, given to the command line's entry point (`cnmtune.plugin.cli.main`,
in this process: no interpreter start per case): each ends in one line naming the cause (no
traceback) and a non-zero exit code; under --json also {"error": line} on stdout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cnmtune.plugin.cli import main
from cnmtune.store import CompileRecord, RunRecord, Status, Store

VA_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "prim" / "va"
MODEL = Path(__file__).resolve().parents[3] / "cnmtune" / "data" / "l2p.onnx"


@dataclass(frozen=True)
class Result:
    """What a command left: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cnmtune(capsys, monkeypatch):
    """Run `cnmtune ARGS...` through the console-script entry point; its exit code and output."""
    def run(*args: str) -> Result:
        monkeypatch.setattr(sys, "argv", ["cnmtune", *args])
        with pytest.raises(SystemExit) as exit_:
            main()
        out, err = capsys.readouterr()
        return Result(exit_.value.code, out, err)
    return run


def one_line_error(result: Result, exit_code: int = 2) -> str:
    """The error line of a failed command, after checking it is the only thing on stderr."""
    assert result.returncode == exit_code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize("option, value", [("--tasklets", "a,b"), ("--dpus", "x")])
def test_an_integer_option_given_a_list_names_the_option_and_the_value(cnmtune, option, value):
    line = one_line_error(cnmtune("run", "va", option, value))
    assert line.startswith(f"{option}: expected a valid integer, got '{value}'")


def test_a_size_whose_inputs_cannot_be_allocated_names_the_size(cnmtune):
    line = one_line_error(cnmtune("run", "va", "--size", str(10**12)))
    assert line.startswith("va: cannot make the inputs of size 1,000,000,000,000 (Unable to allocate")


@pytest.mark.parametrize("size", ["-5", "10**12"])
def test_a_size_that_is_neither_a_number_nor_a_preset_lists_the_presets(cnmtune, size):
    line = one_line_error(cnmtune("run", "va", "--size", size))
    assert line == (f"--size '{size}': the size must be a positive integer or a preset name of va: "
                    "small (4,096), default (2,621,440), large (8,388,608)")


def test_a_directory_without_workload_py_is_not_a_kernel_directory(cnmtune, tmp_path):
    shutil.copytree(VA_DIR / "dpu", tmp_path / "k" / "dpu")
    line = one_line_error(cnmtune("run", str(tmp_path / "k")))
    assert line.startswith(f"{tmp_path / 'k'} is not a kernel directory (no workload.py)")


def test_a_regular_file_is_not_a_kernel_directory(cnmtune):
    line = one_line_error(cnmtune("run", str(VA_DIR / "workload.py")))
    assert line == (f"{VA_DIR / 'workload.py'} is not a directory: a kernel directory (dpu/*.c and workload.py) "
                    "was expected")


@pytest.fixture(scope="module")
def corrupt_store(tmp_path_factory) -> Path:
    """A real store of 300 compiles and runs with 32 KiB of text written over its middle pages."""
    path = tmp_path_factory.mktemp("corrupt") / "store.sqlite"
    with Store(path) as store, store.batch():
        for i in range(300):
            store.record_compile(CompileRecord("va", "O2", f"BL={i}", 1, f"{i:064x}", Status.OK))
            store.record_run(RunRecord("va", f"{i:064x}", 1, 1, 4096, "c", Status.OK, cycles=10, kernel_seconds=1e-3,
                                       verified=True, defines=f"BL={i}"))
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(size // 2 - 16384)
        fh.write(b"garbage!" * 4096)
    return path


@pytest.mark.parametrize("command", [
    ("dataset", "stats", "{db}"),
    ("dataset", "export", "{db}", "{out}"),
    ("dataset", "generate", "-k", "va", "--db", "{db}", "--pipelines", "1", "--dpus", "1", "--tasklets", "1",
     "--sizes", "small", "-j", "1"),
    ("model", "evaluate", str(MODEL), "--db", "{db}"),
], ids=lambda command: " ".join(command[:2]))
def test_a_corrupt_store_is_one_line_naming_the_store(cnmtune, corrupt_store, tmp_path, command):
    args = [a.format(db=corrupt_store, out=tmp_path / "out.csv") for a in command]
    result = cnmtune("-q", *args)  # -q: no progress bar beside the error
    assert one_line_error(result) == f"{corrupt_store}: not a readable cnmtune store (database disk image is malformed)"
    assert not (tmp_path / "out.csv").exists()


def test_json_commands_print_the_error_as_json_on_stdout(cnmtune, corrupt_store):
    result = cnmtune("model", "evaluate", str(MODEL), "--db", str(corrupt_store), "--json")
    line = one_line_error(result)
    assert json.loads(result.stdout) == {"error": line} and "malformed" in line
    result = cnmtune("run", "va", "--dpus", "x", "--json")
    assert json.loads(result.stdout) == {"error": one_line_error(result)}


def test_without_json_stdout_stays_empty_and_verbose_adds_the_traceback(cnmtune):
    quiet = cnmtune("run", "va", "--dpus", "x")
    assert quiet.stdout == "" and "Traceback" not in quiet.stderr
    verbose = cnmtune("-v", "run", "va", "--dpus", "x")
    assert verbose.returncode == 2 and verbose.stderr.startswith("Traceback (most recent call last):")
    assert verbose.stderr.strip().splitlines()[-1] == quiet.stderr.strip()


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory holding a real store that cnmtune cannot write in: mode 0555, and immutable
    (chattr +i) when the tests run as root, who writes in any directory whatever its mode."""
    store_dir = tmp_path / "ro"
    store_dir.mkdir()
    with Store(store_dir / "store.sqlite"):
        pass
    root = os.geteuid() == 0
    if subprocess.run(["chattr", "+i", str(store_dir)] if root else ["chmod", "555", str(store_dir)]).returncode:
        pytest.skip("running as root on a file system without chattr +i: root writes in every directory")
    yield store_dir
    subprocess.run(["chattr", "-i", str(store_dir)] if root else ["chmod", "755", str(store_dir)], check=True)


def test_a_read_only_store_directory_says_permission(cnmtune, read_only_dir):
    for args in (("dataset", "stats", str(read_only_dir / "store.sqlite")),
                 ("dataset", "generate", "-k", "va", "--db", str(read_only_dir / "new.sqlite"), "--pipelines", "1")):
        line = one_line_error(cnmtune(*args))
        assert "permission" in line and str(read_only_dir) in line, line
