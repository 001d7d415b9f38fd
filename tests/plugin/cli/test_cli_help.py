"""Every command's --help shows its text as written: a `*`, a `<...>`, a backtick or a `[...]` of a
docstring or an option's help survives (markdown rendering turned `frequency_mhz*1.0+revolver*2`
into `frequency_mhz1.0+revolver2` and `<cache>/traces` into `/traces`); and it reads at 80
columns: no word cut to an ellipsis or split over two lines, `tune --help` within 80 lines."""

from __future__ import annotations

import inspect
import re
import sys

import pytest
import typer
from typer.models import ParameterInfo

from cnmtune.plugin.cli import app, main

# a word holding a character that markdown or rich markup would render instead of showing
MARKUP_WORD = re.compile(r"\S*(?:\*|<[^>\s]+>|`|\[[^\]\s]*\])\S*")


def _help_sources(typer_app: typer.Typer, path: tuple[str, ...] = ()):
    """(command path, the help texts its source declares) of every command and group, however deep."""
    yield path, [typer_app.info.help] if isinstance(typer_app.info.help, str) else []
    for command in typer_app.registered_commands:
        parameters = inspect.signature(command.callback).parameters.values()
        yield (*path, command.name), [inspect.getdoc(command.callback),
                                      *(p.default.help for p in parameters if isinstance(p.default, ParameterInfo))]
    for group in typer_app.registered_groups:
        yield from _help_sources(group.typer_instance, (*path, group.name))


COMMANDS = dict(_help_sources(app))


def test_every_command_is_walked():
    assert {("sweep",), ("tune",), ("dataset", "generate"), ("model", "train"), ("app", "run"), ()} <= set(COMMANDS)
    assert any("frequency_mhz*1.0+revolver*2" in text for text in COMMANDS[("sweep",)] if text)


def _help(path: tuple[str, ...], columns: int, capsys, monkeypatch) -> str:
    """What `cnmtune PATH --help` prints in a terminal `columns` wide."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(sys, "argv", ["cnmtune", *path, "--help"])
    with pytest.raises(SystemExit) as exit_:
        main()
    shown = capsys.readouterr().out
    assert exit_.value.code == 0 and "Usage: cnmtune" in shown
    return shown


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda path: " ".join(path) or "cnmtune")
def test_help_shows_markup_characters_literally(path, capsys, monkeypatch):
    shown = _help(path, 400, capsys, monkeypatch)  # no word of the help is wrapped
    words = {word for text in COMMANDS[path] if text for word in MARKUP_WORD.findall(text)}
    missing = sorted(word for word in words if word not in shown)
    assert not missing, f"cnmtune {' '.join(path)} --help does not show {missing}"


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda path: " ".join(path) or "cnmtune")
def test_help_reads_at_80_columns(path, capsys, monkeypatch):
    shown = _help(path, 80, capsys, monkeypatch)
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in shown
    # every word of the help on one line, whole: a word cut or split over lines is not in the output
    cut = sorted({word for text in COMMANDS[path] if text for word in text.split() if word not in shown})
    assert not cut, f"cnmtune {' '.join(path)} --help at 80 columns cuts {cut}"
    assert "<bool>" not in shown  # a flag takes no value
    if path == ("tune",):
        assert len(lines) <= 80 and "--[no-]knobs" in shown
