"""Offload decisions (`cnmtune offload`): predicted CNM time against measured CPU time per size."""
