"""Design sweeps (`cnmtune sweep`): stored traces re-timed under a factorial DpuConfig grid."""
