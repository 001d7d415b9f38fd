"""Tables that fit the terminal they print in (80 columns is the narrowest one aimed at) without
cutting a word."""

from __future__ import annotations

import copy

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Column
from rich.table import Table as RichTable

_UNBOUNDED = 1 << 20  # a width no table reaches: measures a table's natural width
_COMPACT_PADDING = ((0, 1, 0, 0), (0, 0, 0, 0))  # 2 spaces between columns, then 1


class Table(RichTable):
    """rich's Table, laid out for the width it prints at without cutting a word.

    rich shrinks every column of a table wider than the terminal alike and ends a cell that no
    longer fits in "…" (`INT…`, `1.0…`), or splits a header word over lines. Here a column keeps
    at least the width of its longest word (header included) and the width left goes to the
    columns with more text, which wrap between words. A table whose words do not fit beside its
    vertical rules drops them (columns 2, then 1 space apart); only a table still too wide folds
    words, and no cell ever ends in an ellipsis.
    """

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from RichTable.__rich_console__(self._fitted(console, options), console, options)

    def _fitted(self, console: Console, options: ConsoleOptions) -> RichTable:
        """A copy of this table whose columns fit `options.max_width` (self when it fits as it is): with
        its rules where its words fit with them, else columns 2 then 1 space apart."""
        width = options.max_width if self.width is None else self.width
        if _natural_width(self, console, options) <= width:
            return self
        ruled = copy.copy(self)
        ruled.columns = [copy.copy(column) for column in self.columns]
        for column in ruled.columns:
            column.overflow = "fold" if column.overflow == "ellipsis" else column.overflow
        spans, areas = zip(*(_span(ruled, column, console, options) for column in ruled.columns))
        candidates = [ruled, *(_compact(ruled, padding) for padding in _COMPACT_PADDING if ruled.box)]
        # the first that keeps every word whole; else the narrowest, where rich folds them
        return next((table for table in candidates if _fit_columns(table, spans, areas, width, console, options)),
                    candidates[-1])


def _compact(table: RichTable, padding: tuple[int, int, int, int]) -> RichTable:
    """`table` without vertical rules, with `padding`: columns 1 or 2 spaces apart, a rule under the header."""
    compact = copy.copy(table)
    compact.columns = [copy.copy(column) for column in table.columns]
    compact.box, compact.padding, compact.show_edge, compact.pad_edge = box.SIMPLE_HEAD, padding, False, False
    return compact


def _fit_columns(table: RichTable, spans: tuple[Measurement, ...], areas: tuple[int, ...], width: int,
                 console: Console, options: ConsoleOptions) -> bool:
    """Set the width of `table`'s columns so that it is `width` wide at most and each column is as wide
    as its longest word; False when that is too wide."""
    spare = width - _overhead(table, spans, console, options) - sum(s.minimum for s in spans)
    if spare < 0:
        return False
    for column, span, extra in zip(table.columns, spans, _share(spare, [s.maximum - s.minimum for s in spans], areas)):
        column.width = span.minimum + extra
    return True


def _natural_width(table: RichTable, console: Console, options: ConsoleOptions) -> int:
    return Measurement.get(console, options.update_width(_UNBOUNDED), table).maximum


def _span(table: RichTable, column: Column, console: Console,
          options: ConsoleOptions) -> tuple[Measurement, int]:
    """(longest word, longest line) of `column`'s header, footer and cells, within its min_width and
    max_width, and the width of all its lines together. A column of fixed width keeps it; one that
    does not wrap keeps its longest line, and so does each cell of a right-aligned column (a figure
    with its unit: `13.6 %`, `1.02x`)."""
    if column.width is not None:
        return Measurement(column.width, column.width), 0
    measure = options.update_width(_UNBOUNDED)
    titles = [Measurement.get(console, measure, text) for text, shown in ((column.header, table.show_header),
                                                                          (column.footer, table.show_footer)) if shown]
    cells = [Measurement.get(console, measure, cell) for cell in column.cells]
    whole = column.no_wrap or column.justify == "right"
    sizes = titles + cells or [Measurement(1, 1)]
    longest = max(s.maximum for s in sizes)
    least = longest if column.no_wrap else max([s.minimum for s in titles] + [s.maximum if whole else s.minimum
                                                                               for s in cells] or [1])
    return Measurement(least, longest).clamp(column.min_width, column.max_width), sum(s.maximum for s in sizes)


def _overhead(table: RichTable, spans: tuple[Measurement, ...], console: Console, options: ConsoleOptions) -> int:
    """The width of `table`'s rules and padding: its natural width less that of its columns' content."""
    return _natural_width(table, console, options) - sum(s.maximum for s in spans)


def _share(spare: int, wants: list[int], weights: list[int]) -> list[int]:
    """`spare` columns of width split in proportion to `weights` (the text of each column: the more
    text, the more lines a narrow column would take), none given more than it `wants`."""
    given = [0] * len(wants)
    while spare > 0 and (wanting := [i for i, want in enumerate(wants) if given[i] < want]):
        budget, total = spare, sum(weights[i] for i in wanting) or 1
        for i in wanting:  # at least 1 each round: the loop ends
            step = min(wants[i] - given[i], max(1, budget * weights[i] // total), spare)
            given[i], spare = given[i] + step, spare - step
    return given
