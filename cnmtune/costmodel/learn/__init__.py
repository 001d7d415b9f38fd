"""Learning on static features: samples, the L2P network, training and fine-tuning, ONNX
export and scoring, baselines, the analytical prior, uncertainty, metrics and plots, and the
CostModel interface over them (cost_model: create by kind, load_model by file); and the PerfVec
design model on traces (perfvec_blocks, perfvec, perfvec_onnx)."""
