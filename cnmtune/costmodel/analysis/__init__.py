"""Static analysis of linked ELFs: what the cost model reads instead of running a program.

- elf: ELF readers for proxy and real DPU ELFs
- program: code regions and functions, shared by both front-ends
- rv32_isa, rv32_program: the rv32 proxy front-end (capstone)
- dpu_isa, dpu_program: the real DPU front-end (cnmtune's own decoder and its self-checks)
- cfg, calls, callgraph: CFGs and natural loops, call sites, loop weights across kernel calls
- footprint: static WRAM/MRAM use and the tasklet configuration
- frontend: the decoded-program interface and the two front-ends behind it
- features: ONE features_of(program) for both ISAs, and extract_features(elf)
- lowering, lowering_rules: the DPU code the UPMEM compiler would emit for a proxy binary
- schema: the feature vector's columns (FeatureSchema) for proxy and DPU features
"""
