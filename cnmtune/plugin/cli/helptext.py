"""`--help` of every cnmtune command, laid out to read at 80 columns.

typer's own layout gives an option's long name, short name, negative name and type a column each,
which left the description 17 to 22 characters at 80 columns (`tune --help` ran to 140 lines,
`<bool>` beside every flag). Here an option's names and value type share one column
(``-s, --size <str>``, ``--[no-]knobs``), the description takes the rest of the line with its
default after it, and the text shows as written: no markup, no emoji.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

NAMES_WIDTH = 26  # the names column at most; longer names wrap at their spaces (`--a / --b`)
_NEGATED = re.compile(r"--(?P<name>[\w-]+) / --no-(?P=name)\b")


def print_help(command, ctx) -> None:
    """Print the help of `command` (a typer command or group) on stdout: usage, description, then
    panels of its arguments, options and subcommands."""
    console = Console(highlight=False, markup=False, emoji=False)
    console.print(Padding(Text(command.get_usage(ctx), style="bold"), (1, 1, 1, 1)))
    paragraphs = (command.help or "").split("\n\n")
    for number, paragraph in enumerate(p for p in paragraphs if p):
        console.print(Padding(Text(paragraph, style="dim" if number else ""), (0, 1, 1, 1)))
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    for title, kind in (("Arguments", "argument"), ("Options", "option")):
        rows = [_param_row(p, ctx) for p in params if p.param_type_name == kind]
        _print_panel(console, title, [row for row in rows if row])
    if hasattr(command, "list_commands"):
        subcommands = [command.get_command(ctx, name) for name in command.list_commands(ctx)]
        _print_panel(console, "Commands", [(Text(sub.name, style="bold cyan"), Text(_first_paragraph(sub.help)))
                                           for sub in subcommands if sub is not None and not sub.hidden])


def _param_row(param, ctx) -> tuple[Text, Text] | None:
    """(names and value type, description and default) of one parameter; None for a hidden one."""
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, described = record
    names = Text(_NEGATED.sub(r"--[no-]\g<name>", names), style="bold cyan")
    names.highlight_regex(r"<[^>]*>", "yellow")  # the value's type
    own = param.help or ""
    extra = described[len(own):].strip() if described.startswith(own) else ""  # [default: ...], [required]
    description = Text(own if extra else described)
    if extra:
        description.append(f"{' ' if own else ''}{extra}", style="dim")
    return names, description


def _first_paragraph(text: str | None) -> str:
    return (text or "").split("\n\n")[0]


def _print_panel(console: Console, title: str, rows: list[tuple[Text, Text]]) -> None:
    """`rows` as two columns in a titled box: the first at most NAMES_WIDTH wide, the second the rest;
    text wraps between words, never ends in an ellipsis."""
    if not rows:
        return
    table = Table.grid(padding=(0, 2), expand=True)
    table.add_column(max_width=NAMES_WIDTH, overflow="fold")
    table.add_column(ratio=1, overflow="fold")
    for row in rows:
        table.add_row(*row)
    console.print(Panel(table, title=title, title_align="left", border_style="dim"))
