"""Where the command line writes: rich consoles for tables and errors, JSON for machines."""

from __future__ import annotations

import json
import sys

from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def emit_json(payload: object) -> None:
    """Print `payload` as indented, key-sorted JSON on stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=True) + "\n")
