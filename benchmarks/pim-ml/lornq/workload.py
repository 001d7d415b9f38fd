"""LoRnQ: logistic regression on integer inputs (no quantisation),
with a sigmoid look-up table, PIM-ML (ISPASS'23), cnmtune's own implementation.

Compile time: the element type as a bare define, INT32 (default: fixed point with
SHIFT_AMOUNT = 10 fraction bits) or FLOAT (PIM-ML's TYPE); BL, log2 of the MRAM->WRAM block in
bytes (default 8; a block must hold two rows, so 2^BL >= 8 n). OFFSET = 0, MAX_ROWS = 16
(the most features). PIM-ML's default is NR_TASKLETS = 12.
WRAM: the 40 KB sigmoid table (also loaded by FLOAT builds, as in PIM-ML) leaves room for at
most 13 tasklets at BL = 8 (4 at BL = 11); the workload refuses more with a KernelError.

Size = rows m of the training set. Params: iterations (default 100, one launch each), n_features (default 16, even, at most
16), learning_rate (default 1e-3).

Data (seeded numpy): X integers in -50..49, true weights uniform in [-1, 1] (multiples of 1/8), Y = 1 where
X.W >= 0 (sigma >= 0.5) else 0. Weights are fixed point (1.0 = 1024) in INT32.

Host layout, launches, weight update, verification and the deliberate differences from
PIM-ML (notably: no division by m >> (SHIFT_AMOUNT + OFFSET), which is 0 for small m) are
described in ../common/pimml_host.py, shared by the four PIM-ML workloads.
"""

import numpy as np

import pimml_host as _host


class LogisticRegressionNQ(_host.PimMlWorkload):
    name = "lornq"
    logistic = True
    quantized = False
    offset = 0
    max_rows = 16
    defines = {"BL": 8, "INT32": None}
    nr_tasklets = 12
    params = {"iterations": 100, "n_features": 16, "learning_rate": 1e-3}

    def raw_data(self, rng):
        x = rng.integers(-50, 50, (self.size, self.n)).astype(np.float64)
        w_true = rng.integers(-8, 9, self.n) / 8
        return x, (x @ w_true >= 0).astype(np.float64)
