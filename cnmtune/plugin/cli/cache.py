"""`cnmtune cache ...`: what the build cache holds, and cleaning it."""

from __future__ import annotations

from typing import Optional

import typer

from cnmtune.display import Table
from cnmtune.errors import UsageError
from cnmtune.plugin.cli.output import console, emit_json
from cnmtune.runtime.toolchain.cache import MAX_BYTES_ENV, TUNING_FILE, BuildCache, kinds_record, usage_by_kind

cache_app = typer.Typer(help="Inspect and clean the build cache (binaries, IR, objects, trace sets).",
                        no_args_is_help=True)


def _bytes_text(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _print_kinds(heading: str, kinds: dict[str, tuple[int, int]]) -> None:
    console.print(heading, highlight=False, markup=False, soft_wrap=True)
    table = Table()
    for column in ("kind", "entries", "size"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, (entries, size) in sorted(kinds.items()):
        table.add_row(kind, f"{entries:,}", _bytes_text(size))
    table.add_row("total", f"{sum(n for n, _ in kinds.values()):,}", _bytes_text(sum(b for _, b in kinds.values())),
                  style="bold")
    console.print(table)


@cache_app.command("info")
def info_command(as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Where the cache is, its entries and bytes per kind, the total and the size bound."""
    info = BuildCache().info()
    if as_json:
        emit_json(info.to_dict())
        return
    _print_kinds(f"build cache: {info.root}", info.kinds)
    console.print(f"bound {_bytes_text(info.bound)} (${MAX_BYTES_ENV}): past it, the least recently used entries "
                  f"go; the tuning cache ({TUNING_FILE}, {_bytes_text(info.tuning_bytes)}) is never cleaned",
                  highlight=False, markup=False, soft_wrap=True)


@cache_app.command("clean")
def clean_command(
    older_than: Optional[float] = typer.Option(None, "--older-than", min=0, help="only entries unused for N days"),
    to_bound: bool = typer.Option(False, "--to-bound", help="only the least recently used entries past the bound"),
    as_json: bool = typer.Option(False, "--json", help="print what was freed as JSON"),
) -> None:
    """Remove cached build outputs and trace sets: all, those unused for N days, or down to the bound."""
    if older_than is not None and to_bound:
        raise UsageError("--older-than and --to-bound choose different entries: give one of them")
    cache = BuildCache()
    removed = cache.clean(older_than, to_bound)
    kinds = usage_by_kind(removed)
    if as_json:
        emit_json({"root": str(cache.root), "entries": len(removed), "bytes": sum(e.bytes for e in removed),
                   "kinds": kinds_record(kinds)})
    elif removed:
        _print_kinds(f"freed from {cache.root}:", kinds)
    else:
        console.print(f"nothing to free in {cache.root}", highlight=False, markup=False, soft_wrap=True)
