"""The `cnmtune` command line: one typer app, every command group registered from its module.

`main` is the one error handler of every command: whatever stops a command ends in one line on
stderr (and ``{"error": line}`` on stdout when the command line asks for --json) and a non-zero
exit code, 2 for a command line that cannot run as written (a usage error) and 1 for work that
failed; ``-v`` adds the traceback for bug reports (with the library error a cnmtune error was
raised from). Ctrl-C ends in the line 'interrupted' and exit code 130.

Help shows its text as written, laid out for 80 columns (cnmtune.plugin.cli.helptext): neither
markdown, which would eat `*`, `_` and `<...>` (``frequency_mhz*1.0`` would show as an emphasis),
nor rich markup.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import sys
import traceback

import typer
from typer.core import TyperCommand, TyperGroup

from cnmtune.errors import CnmtuneError, UsageError
from cnmtune.extras import missing_extra
from cnmtune.plugin.cli.application import application_app
from cnmtune.plugin.cli.build import compare_command, compile_command, features_command
from cnmtune.plugin.cli.cache import cache_app
from cnmtune.plugin.cli.catalog import kernels_command, passes_command
from cnmtune.plugin.cli.dataset import dataset_app
from cnmtune.plugin.cli.helptext import print_help
from cnmtune.plugin.cli.model import model_app
from cnmtune.plugin.cli.new import new_command
from cnmtune.plugin.cli.offload import offload_command
from cnmtune.plugin.cli.output import (FAILURE_EXIT, INTERRUPTED_EXIT, USAGE_EXIT, console, print_error,
                                      set_verbosity, verbosity, warn)
from cnmtune.plugin.cli.run import run_command
from cnmtune.plugin.cli.sweep import sweep_command
from cnmtune.plugin.cli.tune import tune_command
from cnmtune.plugin.process_exit import skip_exit_collections

VERBOSE_HELP = "with an error, also print its traceback"
QUIET_HELP = "no progress bars or notes; results and errors still print"


def _literal(text: str | None) -> str | None:
    """Help text with each paragraph's lines joined: a docstring's line breaks are not the layout's."""
    if not text:
        return text
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


def _also_verbose(value: bool) -> None:
    if value:
        set_verbosity(True, verbosity.quiet)


def _also_quiet(value: bool) -> None:
    if value:
        set_verbosity(verbosity.verbose, True)


def _verbosity_flags(  # eager: in effect before another option's value is refused
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP, expose_value=False, is_eager=True,
                                 callback=_also_verbose),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP, expose_value=False, is_eager=True,
                               callback=_also_quiet),
) -> None:
    """The global -v and -q, taken after a command's name too (`cnmtune run -q va`)."""


def _flag_params() -> list:
    holder = typer.Typer(add_completion=False)
    holder.command()(_verbosity_flags)
    return typer.main.get_command(holder).params


class LiteralCommand(TyperCommand):
    """A command whose help shows as written, taking the global -v and -q after its name too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.help = _literal(self.help)
        for param in self.params:
            param.help = _literal(getattr(param, "help", None))
        self.params += _flag_params()

    def format_help(self, ctx, formatter) -> None:
        print_help(self, ctx)


class LiteralGroup(TyperGroup):
    """A command group whose help shows as written."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.help = _literal(self.help)
        for param in self.params:
            param.help = _literal(param.help)

    def format_help(self, ctx, formatter) -> None:
        print_help(self, ctx)


def _literal_help(typer_app: typer.Typer) -> None:
    """Every command and group of `typer_app`, however deep, built as a Literal one."""
    for command in typer_app.registered_commands:
        command.cls = LiteralCommand
    for group in typer_app.registered_groups:
        group.cls = LiteralGroup
        _literal_help(group.typer_instance)


app = typer.Typer(
    help="cnmtune: tune UPMEM DPU kernels with LLVM pass pipelines and a learned cost model.",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    cls=LiteralGroup,
)
app.add_typer(dataset_app, name="dataset")
app.add_typer(model_app, name="model")
app.add_typer(application_app, name="app")
app.add_typer(cache_app, name="cache")
for name, command in (("tune", tune_command), ("sweep", sweep_command), ("offload", offload_command),
                      ("compile", compile_command), ("features", features_command), ("compare", compare_command),
                      ("run", run_command), ("kernels", kernels_command), ("passes", passes_command),
                      ("new", new_command)):
    app.command(name)(command)
_literal_help(app)


def package_version() -> str:
    """The installed cnmtune's version (cnmtune.__version__ when run from a tree without metadata)."""
    try:
        return importlib.metadata.version("cnmtune")
    except importlib.metadata.PackageNotFoundError:
        from cnmtune import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        console.print(f"cnmtune {package_version()}", highlight=False, markup=False)
        raise typer.Exit()


@app.callback()
def global_options(
    verbose: bool = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="print the version and exit"),
) -> None:
    """Options of every command: verbosity and the version."""
    set_verbosity(verbose, quiet)


def main() -> None:
    """Console-script entry: run the app; any error becomes one line and a non-zero exit code."""
    skip_exit_collections()
    args = sys.argv[1:]
    try:
        # usage lines say `cnmtune` however it started (click would name `python -m pytest` in a test run)
        code = app(args=args, prog_name="cnmtune", standalone_mode=False)
    except KeyboardInterrupt:  # typer returns INTERRUPTED_EXIT for Ctrl-C in a command; this one came outside
        code = INTERRUPTED_EXIT
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # typer printed the help already
            sys.exit(exc.exit_code)
        line, exit_code = _error_line(exc)
        if verbosity.verbose:
            traceback.print_exception(exc)
        print_error(line, _wants_json(args))
        sys.exit(exit_code)
    if code == INTERRUPTED_EXIT:
        warn("interrupted")
    sys.exit(code if isinstance(code, int) else 0)


def _error_line(exc: Exception) -> tuple[str, int]:
    """The one line and the exit code of an error that stopped a command."""
    if isinstance(exc, typer.TyperException):  # a usage error: unknown option, bad value, ...
        return _usage_line(exc), exc.exit_code
    if isinstance(exc, typer.Abort):
        return "aborted", FAILURE_EXIT
    if isinstance(exc, ModuleNotFoundError):
        exc = missing_extra(exc) or exc
    if isinstance(exc, CnmtuneError):
        return str(exc), USAGE_EXIT if isinstance(exc, UsageError) else FAILURE_EXIT
    return f"unexpected {type(exc).__name__}: {exc} (a cnmtune bug; rerun with -v for the traceback)", FAILURE_EXIT


def _usage_line(exc: typer.TyperException) -> str:
    """A usage error in one line: the option, what it expects and what it got, where help is."""
    message = exc.format_message()
    cause = exc.__cause__
    if isinstance(exc, typer.BadParameter) and type(cause).__name__ == "ValidationError":
        # typer converts values with pydantic, whose error keeps the text the user gave
        param, first = exc.param, cause.errors()[0]
        name = max(param.opts, key=len) if param.param_type_name == "option" else param.human_readable_name
        expected = first["msg"].split(",")[0].replace("Input should be", "expected")
        message = f"{name}: {expected}, got {first['input']!r}"
    ctx = getattr(exc, "ctx", None)
    message = message.rstrip(".")
    return f"{message} (see '{ctx.command_path} --help')" if ctx is not None else message


def _wants_json(args: list[str]) -> bool:
    """True when the command line asks for JSON (--json is a flag of every command that has it)."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)
