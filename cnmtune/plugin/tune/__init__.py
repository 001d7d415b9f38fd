"""The autotuner (`cnmtune tune`) and the tuning cache that cnmtune-cc reads."""
