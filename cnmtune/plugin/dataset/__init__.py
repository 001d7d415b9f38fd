"""Dataset generation (`cnmtune dataset`): kernels x pipelines x configurations into the store."""
