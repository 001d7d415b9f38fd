"""The `cnmtune` command line."""

from cnmtune.plugin.cli.app import app, main

__all__ = ["app", "main"]
