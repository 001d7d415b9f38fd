"""What the benchmark scripts share: where their results go, the hardware rows they read, verdicts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from cnmtune.atomic import atomic_write

#: Every script's default output folder; git ignores it (.gitignore), so runs leave the checkout clean.
RESULTS = Path(__file__).resolve().parent / "results"
SHOWN = "benchmarks/results"  # RESULTS as --help shows it


def json_option(parser: argparse.ArgumentParser, name: str, what: str = "the result", flag: str = "--json") -> None:
    """`flag` PATH: where the script writes its JSON (default RESULTS/name)."""
    parser.add_argument(flag, type=Path, default=RESULTS / name, metavar="PATH",
                        help=f"write {what} as JSON here (default: {SHOWN}/{name}, which git ignores)")


def out_option(parser: argparse.ArgumentParser, what: str) -> None:
    """--out DIR: where the script writes its JSON and plots (default RESULTS)."""
    parser.add_argument("--out", type=Path, default=RESULTS, metavar="DIR",
                        help=f"folder for {what} (default: {SHOWN}, which git ignores)")


def write_json(path: Path, data, **dumps) -> Path:
    """Write `data` as JSON (indent 2 unless `dumps` says otherwise), creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, **{"indent": 2, **dumps}) + "\n").encode())
    return path


def verdict(met: bool) -> str:
    """A target's verdict as rich markup."""
    return "[green]met[/]" if met else "[red]missed[/]"


def data_option(parser: argparse.ArgumentParser) -> None:
    """--data DIR: the folder holding the real UPMEM times (default: the copy cnmtune ships)."""
    from cnmtune.runtime.sim import calibration  # only the scripts that read the rows pay for the import

    parser.add_argument("--data", type=Path, default=calibration.DATA, metavar="DIR",
                        help=f"folder holding {calibration.FITTED_CSV} and {calibration.VALIDATION_CSV} "
                             "(default: the real UPMEM times shipped in cnmtune/data/calibration)")


def data_files(parser: argparse.ArgumentParser, folder: Path, *names: str) -> list[Path]:
    """The named CSVs of --data `folder`; a usage error that says what to pass when one is missing."""
    from cnmtune.runtime.sim import calibration

    paths = [folder / name for name in names]
    missing = [path.name for path in paths if not path.is_file()]
    if missing:
        parser.error(f"--data {folder}: no {' and no '.join(missing)} there; pass a folder holding "
                     f"{calibration.FITTED_CSV} and {calibration.VALIDATION_CSV}, or leave --data out for "
                     f"the copy shipped in {calibration.DATA}")
    return paths
