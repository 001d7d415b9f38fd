"""The `cnmtune` command line."""

from cnmtune.plugin.cli.main import app, main

__all__ = ["app", "main"]
