"""What a compiler or build sees: the CLI, the cnmtune-cc driver (and later the tuner)."""
