"""cnmtune-cc: a drop-in DPU compiler driver that applies tuned pipelines."""

from cnmtune.plugin.cc.driver import main

__all__ = ["main"]
