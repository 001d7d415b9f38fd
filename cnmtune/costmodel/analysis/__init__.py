"""Static analysis of linked ELFs: what the cost model reads instead of running a program.

ELF readers, the two ISA front-ends (the rv32 proxy and the real DPU), CFG and loops, call
sites, memory footprints, and the feature vector definition (FeatureSchema) that both
front-ends fill.
"""
