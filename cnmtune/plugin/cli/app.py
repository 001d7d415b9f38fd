"""The `cnmtune` command line: one typer app, every command group registered from its module."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from cnmtune.errors import CnmtuneError
from cnmtune.extras import missing_extra
from cnmtune.plugin.cli.build import compare_command, compile_command, features_command
from cnmtune.plugin.cli.catalog import kernels_command, passes_command
from cnmtune.plugin.cli.dataset import dataset_app
from cnmtune.plugin.cli.model import model_app
from cnmtune.plugin.cli.offload import offload_command
from cnmtune.plugin.cli.output import err_console
from cnmtune.plugin.cli.run import run_command
from cnmtune.plugin.cli.sweep import sweep_command
from cnmtune.plugin.cli.tune import tune_command

app = typer.Typer(
    help="cnmtune: tune UPMEM DPU kernels with LLVM pass pipelines and a learned cost model.",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(dataset_app, name="dataset")
app.add_typer(model_app, name="model")
for name, command in (("tune", tune_command), ("sweep", sweep_command), ("offload", offload_command),
                      ("compile", compile_command), ("features", features_command), ("compare", compare_command),
                      ("run", run_command), ("kernels", kernels_command), ("passes", passes_command)):
    app.command(name)(command)


def main() -> None:
    """Console-script entry: user errors, and a missing optional extra, become one line on stderr
    and the error's exit code (2)."""
    try:
        app()
    except CnmtuneError as exc:
        _fail(exc)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc)
        if error is None:
            raise
        _fail(error)


def _fail(error: CnmtuneError) -> None:
    err_console.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
    sys.exit(error.exit_code)
