"""Tables fit 80 columns without cutting a word: no cell ends in an ellipsis and no word is split over
two lines while a layout that keeps them whole exists."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table as RichTable

from cnmtune.display import Table


def _render(table: RichTable, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), markup=False, emoji=False)
    console.print(table)
    return console.file.getvalue()


def _suite_report(table_type: type[RichTable]) -> RichTable:
    """The kernel-suite table of benchmarks/suite_report.py: a speedup per tasklet count, 11 columns."""
    table = table_type(title="kernel suite, 1 DPU, default preset, O2")
    tasklets = (1, 2, 4, 8, 11, 16)
    for column in ("kernel", "size", *(f"T={t}" for t in tasklets), "IPC@16", "DMA MB", "routines %"):
        table.add_column(column, justify="right" if column != "kernel" else "left")
    for kernel, size in (("hst-s", "1,572,864"), ("scan-ssa", "2,097,152"), ("red", "6,553,600")):
        table.add_row(kernel, size, *(f"{t / 1.5 + 1:.2f}x" for t in tasklets), "0.92", "12.6", "31.4")
    return table


def test_a_wide_table_keeps_every_word_whole_at_80_columns():
    cut = _render(_suite_report(RichTable))
    assert "…" in cut  # rich's own layout of this table: `hst…`, `1.0…`
    shown = _render(_suite_report(Table))
    assert "…" not in shown and max(len(line) for line in shown.splitlines()) <= 80
    words = {"hst-s", "scan-ssa", "6,553,600", "T=16", "IPC@16", "routines", "11.67x", "31.4"}
    assert words <= set(shown.replace("│", " ").split())


def test_a_long_text_column_wraps_between_words_and_short_columns_stay_whole():
    summary = "MICRO: arithmetic-throughput of every type and operation on one DPU, cnmtune's own kernel. " * 2
    table = Table()
    for column in ("kernel", "summary", "size: what it counts; presets", "defines; parameters"):
        table.add_column(column)
    table.add_row("arith\n(micro)", summary, "elements, total over all DPUs; small 4,096", "TYPE=INT32* OP=ADD*")
    shown = _render(table)
    assert "…" not in shown and max(len(line) for line in shown.splitlines()) <= 80
    assert "│" in shown  # its words fit beside its rules: it keeps them
    assert set(summary.split()) | {"TYPE=INT32*", "(micro)", "4,096"} <= set(shown.replace("│", " ").split())
    assert len(shown.splitlines()) < len(_render(table, width=60).splitlines())  # the width left goes to the text


def test_a_table_too_wide_for_its_words_drops_its_rules_and_never_ends_in_an_ellipsis():
    table = Table()
    for k in range(8):
        table.add_column(f"measure-{k}")
    table.add_row(*(f"{k * 1000.5:,.2f}" for k in range(8)))
    shown = _render(table)
    assert "…" not in shown and "│" not in shown  # 8 headers of 9 letters fit 80 columns only without rules
    assert {f"measure-{k}" for k in range(8)} | {"7,003.50"} <= set(shown.split())
    assert "…" not in _render(table, width=40)  # no layout keeps the words: they fold


def test_a_table_that_fits_is_laid_out_as_rich_does():
    tables = [table_type(title="runs") for table_type in (RichTable, Table)]
    for table in tables:
        table.add_column("kernel")
        table.add_column("ms", justify="right")
        table.add_row("va", "1.234")
    assert _render(tables[1]) == _render(tables[0])
