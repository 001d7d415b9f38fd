"""The training recipe of the L2P cost model: one place for the CLI, the benchmarks and the shipped model.

No torch here, so the CLI can show these defaults without importing it. Why each value differs
from the L2P paper's (or does not) is measured in benchmarks/reproduce_l2p.py and written up in
cnmtune/data/MODEL.md.
"""

from __future__ import annotations

#: L2PConfig fields that differ from the paper's network (depth 12, width 256, dropout 0.5 stay):
#: log1p of the count columns and the analytical prior inside the network, its DMA term at the
#: kernel's constant block size.
MODEL_DEFAULTS: dict = {"log_inputs": True, "prior": True, "block_prior": True}

#: Keyword arguments of ``cnmtune.costmodel.learn.training.train``. The paper trains with Adam and
#: early stopping; a reduce-on-plateau learning rate (halve after ``lr_patience`` epochs
#: without a better validation loss) is added: with dropout 0.5 the validation loss is noisy
#: and a constant rate stops far from the best fit.
TRAIN_DEFAULTS: dict = {"epochs": 300, "patience": 40, "batch_size": 256, "lr": 1e-3, "weight_decay": 0.0,
                        "lr_patience": 10}

#: Epochs of fine-tuning (``training.finetune``; one Adam step each while the tuning set fits one
#: minibatch, as 1 % of a kernel does). The paper does not give its count; 100 left the tuning
#: loss itself at 0.1-0.2 (log units squared) on kernels far from the training set (bs, uni),
#: still falling fast: 1,000 reach 0.04 and below, in ~10 s on one thread (MODEL.md). The rate
#: anneals to 0 over them (cosine), so the last epochs settle instead of oscillating.
FINETUNE_EPOCHS = 1000

#: The learning rate a fine-tuning starts from (Adam, annealed to 0 over its epochs).
FINETUNE_LR = 1e-3

#: Kernels the shipped model (cnmtune/data/l2p.onnx) is not trained on: the transfer targets.
#: Three have a sibling in the training set (hst-s, scan-ssa, lorq), bs has none.
SHIPPED_HELD_OUT: tuple[str, ...] = ("bs", "hst-l", "lornq", "scan-rss")
