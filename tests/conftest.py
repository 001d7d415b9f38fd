"""Shared fixtures: an isolated build cache, the proxy toolchain, the va kernel, scratch kernels, small
stores and untrained cost models; and the command line and the benchmark scripts run in the test's
process (`run_cnmtune`, `run_script`)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from cnmtune.runtime import Kernel
from cnmtune.runtime.toolchain import BuildCache, ProxyToolchain, Variant

if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs a worker per core: one math thread each (and in
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # their subprocesses), or torch oversubscribes the cores
        os.environ.setdefault(_name, "1")

REPO = Path(__file__).resolve().parents[1]
VA_DIR = REPO / "benchmarks" / "prim" / "va"


@dataclass(frozen=True)
class CliResult:
    """What a command left: its exit code and what it printed on stdout and stderr."""

    returncode: int
    stdout: str
    stderr: str


def run_entry_point(main: Callable[[], int | None], argv: Sequence[str], columns: int = 200, cwd: Path | None = None,
                    env: dict[str, str] | None = None, unset: Sequence[str] = ()) -> CliResult:
    """A command through its entry point `main` in this process, as if run as `argv`: on a terminal
    `columns` wide, from `cwd`, with `env` added to the environment and `unset` removed from it. Its
    exit code (what `main` returned or exited with) and output, without an interpreter start and
    ~2.5 s of imports per command. What needs a process of its own (a signal, the first compile of
    the simulator's native code, `python -m cnmtune` itself, a compiler a Makefile runs) runs the
    command instead."""
    from cnmtune.plugin.cli import output

    stdout, stderr = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", list(argv))
        for name, value in {"COLUMNS": str(columns), **(env or {})}.items():
            patch.setenv(name, value)
        for name in unset:
            patch.delenv(name, raising=False)
        for console in (output.console, output.err_console, output._error_console):
            patch.setattr(console, "_width", columns)  # what COLUMNS sets when the console is made
        for flag in ("verbose", "quiet"):  # -v / -q hold for this command only
            patch.setattr(output.verbosity, flag, getattr(output.verbosity, flag))
        patch.setattr(output.err_console, "quiet", output.err_console.quiet)
        if cwd is not None:
            patch.chdir(cwd)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main()
            except SystemExit as exit_:
                code = exit_.code
            if code is not None and not isinstance(code, int):  # SystemExit(message): what the interpreter does
                print(code, file=sys.stderr)
                code = 1
    return CliResult(code or 0, stdout.getvalue(), stderr.getvalue())


def run_cnmtune(*args: str, **how) -> CliResult:
    """`cnmtune ARGS...` through `cnmtune.plugin.cli.main` in this process (`run_entry_point`; `how`:
    its columns, cwd, env and unset)."""
    from cnmtune.plugin.cli import main

    return run_entry_point(main, ["cnmtune", *args], **how)


def load_script(path: Path) -> ModuleType:
    """A script (benchmarks/NAME.py) imported as a module, its siblings importable as when it runs."""
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"{path.stem}_under_test", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # as for any import: a dataclass of the script looks its module up
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def run_script(path: Path, *args: str, **how) -> CliResult:
    """`python PATH ARGS...`, the script's main() run in this process (`run_entry_point`; `how`: its
    columns, cwd, env and unset)."""
    return run_entry_point(load_script(path).main, [path.name, *args], **how)


def one_line_error(result: CliResult, exit_code: int) -> str:
    """The error line of a refused command, after checking that it exited with `exit_code` and printed
    nothing else on stderr."""
    assert result.returncode == exit_code, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0].removeprefix("error: ")


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Every test session builds into its own cache, so tests never see a stale entry."""
    root = tmp_path_factory.mktemp("cnmtune-cache")
    patcher = pytest.MonkeyPatch()
    patcher.setenv("CNMTUNE_CACHE_DIR", str(root))
    yield root
    patcher.undo()


@pytest.fixture(scope="session")
def toolchain(isolated_cache) -> ProxyToolchain:
    return ProxyToolchain(BuildCache(isolated_cache))


@pytest.fixture(scope="session")
def va() -> Kernel:
    return Kernel.load(VA_DIR)


@pytest.fixture(scope="session")
def va_o2(toolchain, va):
    """va compiled at O2 with 16 tasklets."""
    return toolchain.compile(Variant.of(va, "O2", 16))


@pytest.fixture
def make_kernel(tmp_path):
    """Write a one-file kernel directory from C text and return the loaded Kernel."""
    def make(source: str, name: str = "scratch", workload: str | None = None) -> Kernel:
        root = tmp_path / name
        (root / "dpu").mkdir(parents=True, exist_ok=True)
        (root / "dpu" / "task.c").write_text(source)
        if workload is not None:
            (root / "workload.py").write_text(workload)
        return Kernel.load(root)
    return make


@pytest.fixture(scope="session")
def dask_client(isolated_cache):
    """A real Dask LocalCluster: 2 worker processes, 1 thread each (started after the cache env)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        yield client


@pytest.fixture(scope="session")
def l2p_db(tmp_path_factory, isolated_cache) -> Path:
    """A small real dataset store: va and red, 16 pipelines, DPUs {1,2,4} x tasklets {1,4,16}, small size."""
    from cnmtune.plugin.dataset.generate import DatasetSpec, generate
    from cnmtune.runtime.executor import InlineExecutor
    from cnmtune.store import Store

    db = tmp_path_factory.mktemp("l2p") / "l2p.sqlite"
    spec = DatasetSpec(kernels=("va", "red"), pipelines=16, dpus=(1, 2, 4), tasklets=(1, 4, 16), sizes=("small",))
    with Store(db) as store:
        generate(spec, store, InlineExecutor())
    return db


def _random_model(directory: Path, checkpoint: bool) -> Path:
    """An untrained (seeded) L2P network exported to ONNX in `directory`, with its training
    checkpoint beside it (random.pt) when `checkpoint`."""
    import torch

    from cnmtune.costmodel import L2PConfig, export_onnx, model_schema
    from cnmtune.costmodel.learn.checkpoint import save_checkpoint
    from cnmtune.costmodel.learn.model import L2PModel
    from cnmtune.costmodel.learn.samples import input_columns

    schema = model_schema()
    columns = tuple(input_columns(schema))
    torch.manual_seed(0)
    model = L2PModel(len(columns), L2PConfig(depth=1, width=8, dropout=0.0), columns=columns).eval()
    path = directory / "random.onnx"
    if checkpoint:
        save_checkpoint(path.with_suffix(".pt"), model, {"data_hash": "none"})
    return export_onnx(model, path, schema=schema, toolchain_kind="proxy", llvm_version="test", data_hash="none")


@pytest.fixture(scope="session")
def random_model(tmp_path_factory) -> Path:
    """An untrained L2P network as ONNX, without its checkpoint: enough to drive the tuner quickly."""
    return _random_model(tmp_path_factory.mktemp("random-model"), checkpoint=False)


@pytest.fixture(scope="session")
def adaptable_model(tmp_path_factory) -> Path:
    """The same network with its training checkpoint beside it: a tune fine-tunes it after each round."""
    return _random_model(tmp_path_factory.mktemp("adaptable-model"), checkpoint=True)
