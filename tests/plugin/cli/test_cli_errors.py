"""Bad input a careful user hit, given to the command line's entry point (`cnmtune.plugin.cli.main`,
in this process: no interpreter start per case): each ends in one line naming the cause (no
traceback) and a non-zero exit code, 2 for a command line that cannot run as written and 1 for
work that failed; under --json also {"error": line} on stdout."""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from cnmtune.store import CompileRecord, RunRecord, Status, Store
from tests.conftest import one_line_error, run_cnmtune as cnmtune

VA_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "prim" / "va"
MODEL = Path(__file__).resolve().parents[3] / "cnmtune" / "data" / "l2p.onnx"
USAGE, FAILURE = 2, 1


@pytest.mark.parametrize("option, value", [("--tasklets", "a,b"), ("--dpus", "x")])
def test_an_integer_option_given_a_list_names_the_option_and_the_value(option, value):
    line = one_line_error(cnmtune("run", "va", option, value), USAGE)
    assert line.startswith(f"{option}: expected a valid integer, got '{value}'")


def test_a_size_whose_inputs_cannot_be_allocated_names_the_size():
    line = one_line_error(cnmtune("run", "va", "--size", str(10**12)), FAILURE)
    assert line.startswith("va: cannot make the inputs of size 1,000,000,000,000 (Unable to allocate")


@pytest.mark.parametrize("size", ["-5", "10**12"])
def test_a_size_that_is_neither_a_number_nor_a_preset_lists_the_presets(size):
    line = one_line_error(cnmtune("run", "va", "--size", size), USAGE)
    assert line == (f"--size '{size}': the size must be a positive integer or a preset name of va: "
                    "small (4,096), default (2,621,440), large (8,388,608)")


def test_a_directory_without_workload_py_is_not_a_kernel_directory(tmp_path):
    shutil.copytree(VA_DIR / "dpu", tmp_path / "k" / "dpu")
    line = one_line_error(cnmtune("run", str(tmp_path / "k")), FAILURE)
    assert line.startswith(f"{tmp_path / 'k'} is not a kernel directory (no workload.py)")


def test_a_regular_file_is_not_a_kernel_directory():
    line = one_line_error(cnmtune("run", str(VA_DIR / "workload.py")), FAILURE)
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
def test_a_corrupt_store_is_one_line_naming_the_store(corrupt_store, tmp_path, command):
    args = [a.format(db=corrupt_store, out=tmp_path / "out.csv") for a in command]
    result = cnmtune("-q", *args)  # -q: no progress bar beside the error
    assert one_line_error(result, FAILURE) == f"{corrupt_store}: not a readable cnmtune store (database disk image is malformed)"
    assert not (tmp_path / "out.csv").exists()


def test_json_commands_print_the_error_as_json_on_stdout(corrupt_store):
    result = cnmtune("model", "evaluate", str(MODEL), "--db", str(corrupt_store), "--json")
    line = one_line_error(result, FAILURE)
    assert json.loads(result.stdout) == {"error": line} and "malformed" in line
    result = cnmtune("run", "va", "--dpus", "x", "--json")
    assert json.loads(result.stdout) == {"error": one_line_error(result, USAGE)}


def test_without_json_stdout_stays_empty_and_verbose_adds_the_traceback():
    quiet = cnmtune("run", "va", "--dpus", "x")
    assert quiet.stdout == "" and "Traceback" not in quiet.stderr
    verbose = cnmtune("-v", "run", "va", "--dpus", "x")
    assert verbose.returncode == USAGE and verbose.stderr.startswith("Traceback (most recent call last):")
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


def test_a_read_only_store_directory_says_permission(read_only_dir):
    for args in (("dataset", "stats", str(read_only_dir / "store.sqlite")),
                 ("dataset", "generate", "-k", "va", "--db", str(read_only_dir / "new.sqlite"), "--pipelines", "1")):
        line = one_line_error(cnmtune(*args), FAILURE)
        assert "permission" in line and str(read_only_dir) in line, line


EXAMPLE_VA = Path(__file__).resolve().parents[3] / "examples" / "va"


@pytest.mark.parametrize("args, exit_code, line", [
    (("run", "nosuchkernel"), FAILURE, "no kernel named or at 'nosuchkernel'; registered kernels: "),
    (("run", "va", "--pipeline", "O2,nosuchpass"), USAGE, "unknown pass 'nosuchpass'; `cnmtune passes` lists"),
    (("run", "va", "-D", "BL=99"), USAGE, "va: BL=99 is not valid; choose one of 3, 4, "),
    (("run", "va", "--param", "x=1"), USAGE, "va: bad parameter 'x=1'"),
    (("run", "va", "--device", "gpu"), USAGE, "unknown device 'gpu'; choose sim, "),
    (("offload", "va", "--pipeline", "sroa,nosuchpass"), USAGE, "unknown pass 'nosuchpass'"),
    (("tune", "va", "--app", str(EXAMPLE_VA)), USAGE, f"give a kernel (va) or --app {EXAMPLE_VA}, not both"),
    (("tune", "--app", str(EXAMPLE_VA), "--size", "small", "--tasklets", "8"), USAGE,
     "--size, --tasklets: not used when tuning an application (--app)"),
    (("tune", "va", "--run", "-i 64"), USAGE, "--run: not used when tuning a kernel"),
    (("tune", "va", "--objective", "energy"), USAGE, "unknown objective 'energy'; choose kernel or end-to-end"),
    (("tune", "va", "--dpus", "4,16"), USAGE, "--dpus 4,16: the kernel objective tunes at one DPU count"),
    (("app", "build", str(EXAMPLE_VA), "--dpus", "0"), USAGE,
     "NR_DPUS=0: an application allocates 1 to 2,560 DPUs (a whole UPMEM system"),
    (("app", "build", str(EXAMPLE_VA), "--dpus", "100000"), USAGE, "NR_DPUS=100000: an application allocates 1 "),
    (("app", "run", str(EXAMPLE_VA), "-V", "NR_DPUS=2561"), USAGE, "NR_DPUS=2561: an application allocates 1 "),
], ids=lambda value: " ".join(value[:2]) if isinstance(value, tuple) else None)
def test_a_command_line_that_cannot_run_exits_2_and_failed_work_1(args, exit_code, line):
    assert one_line_error(cnmtune(*args), exit_code).startswith(line)


def test_compile_refuses_an_output_in_a_missing_directory_and_creates_none(tmp_path):
    elf = tmp_path / "no" / "such" / "x.elf"
    assert one_line_error(cnmtune("compile", "va", "-o", str(elf)), FAILURE) == \
        f"cannot write {elf}: no directory {elf.parent}"
    assert not (tmp_path / "no").exists()


def test_the_upmem_devices_pass_over_the_sdk_shim_that_app_env_puts_on_path(monkeypatch):
    """After `eval "$(cnmtune app env)"` the SDK compiler's name on PATH is cnmtune's own shim, not an SDK."""
    exports = dict(shlex.split(line)[1].split("=", 1) for line in cnmtune("app", "env").stdout.splitlines())
    monkeypatch.setenv("PATH", exports["PATH"])
    monkeypatch.delenv("CNMTUNE_UPMEM_SDK", raising=False)
    shim = Path(exports["PATH"].split(os.pathsep)[0]) / "dpu-upmem-dpurte-clang"
    assert shim.is_file()
    for device in ("upmem-sim", "upmem-hw"):
        assert one_line_error(cnmtune("run", "va", "--device", device, "--size", "small"), FAILURE).startswith(
            f"UPMEM SDK not found: the only dpu-upmem-dpurte-clang on PATH is cnmtune's shim ({shim}, from "
            f"`cnmtune app env`), not the SDK's, no --sdk-dir was given")


def test_a_host_program_killed_by_a_signal_is_named(tmp_path):
    (tmp_path / "Makefile").write_text("all:\n")
    host = tmp_path / "host.sh"
    host.write_text("#!/bin/sh\necho before the fault\nkill -SEGV $$\n")
    host.chmod(0o755)
    result = cnmtune("app", "run", str(tmp_path), "--no-build", "--host-binary", "host.sh")
    assert one_line_error(result, FAILURE) == "host program killed by SIGSEGV"
    assert "before the fault" in result.stdout and "host.sh: killed by SIGSEGV" in result.stdout
    result = cnmtune("app", "run", str(tmp_path), "--no-build", "--host-binary", "host.sh", "--json")
    record = json.loads(result.stdout)  # one document: the record, which names the signal
    assert one_line_error(result, FAILURE) == "host program killed by SIGSEGV"
    assert record["killed_by"] == "SIGSEGV" and record["stdout"] == "before the fault\n"


def test_quoted_output_is_cut_between_lines_or_words():
    from cnmtune.plugin.app.project import tail

    words = " ".join(f"word{i}" for i in range(300))
    assert tail(words, 50) == "..." + words[words.index(" ", len(words) - 50) + 1:]
    assert tail(f"make: first\n{words[:40]}\nlast line", 30) == "...last line"  # whole lines first
    assert tail("short", 50) == "short"


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_and_verbose_go_after_the_command_too(tmp_path, flag):
    result = cnmtune("new", "quietk", flag, "--dir", str(tmp_path))
    assert result.returncode == 0 and result.stdout.splitlines() == [f"created {tmp_path / 'quietk'}/ (workload.py, "
                                                                     "dpu/task.c, support/common.h)"]
    verbose = cnmtune("run", "va", "--dpus", "x", "-v")
    assert verbose.returncode == USAGE and verbose.stderr.startswith("Traceback (most recent call last):")


@pytest.mark.parametrize("content", ["random bytes", "pickled object"])
def test_an_unreadable_checkpoint_is_one_short_line_and_verbose_adds_torchs_text(tmp_path, monkeypatch,
                                                                                 content):
    import torch

    from cnmtune.costmodel.learn.checkpoint import save_checkpoint
    from cnmtune.costmodel.learn.model import L2PConfig, L2PModel

    monkeypatch.chdir(tmp_path)
    path = save_checkpoint(Path("model.pt"), L2PModel(4, L2PConfig(depth=1, width=4)))
    if content == "random bytes":  # fixed bytes: what torch raises depends on them (UnpicklingError, IndexError, ...)
        path.write_bytes(random.Random(0).randbytes(4096))
    else:  # a torch file whose pickle holds an object besides tensors
        torch.save({"weight": torch.zeros(2), "origin": Path("elsewhere")}, path)
    args = ("model", "finetune", "model.pt", "--db", "none.sqlite", "--kernel", "va", "-o", "tuned.onnx")
    line = one_line_error(cnmtune(*args), FAILURE)
    assert line.startswith("cannot read checkpoint model.pt: not a cnmtune checkpoint (")
    assert len(f"error: {line}") <= 160 and "weights_only" not in line
    verbose = cnmtune("-v", *args)
    assert verbose.returncode == FAILURE and "Weights only load failed" in verbose.stderr
    assert verbose.stderr.strip().splitlines()[-1] == f"error: {line}"
