"""cnmtune: a compiler-integrated cost-model plugin for UPMEM compute-near-memory systems."""

__version__ = "0.1.0"
