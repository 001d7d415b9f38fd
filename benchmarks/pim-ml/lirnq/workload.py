"""LiRnQ: linear regression on integer inputs (no quantisation), PIM-ML (ISPASS'23), cnmtune's own implementation.

Compile time: the element type as a bare define, INT32 (default: fixed point with
SHIFT_AMOUNT = 10 fraction bits) or FLOAT (PIM-ML's TYPE); BL, log2 of the MRAM->WRAM block in
bytes (default 10; a block must hold two rows, so 2^BL >= 8 n). OFFSET = 6, MAX_ROWS = 16
(the most features). PIM-ML's default is NR_TASKLETS = 16.

Size = rows m of the training set. Params: iterations (default 100, one launch each), n_features (default 16, even, at most
16), learning_rate (default 1e-4).

Data (seeded numpy): X integers in 0..49, true weights 1..n, Y = X.W + n noise terms in 0..29 (integers);
FLOAT uses the same values as floats. Weights are fixed point (1.0 = 1024) in INT32.

Host layout, launches, weight update, verification and the deliberate differences from
PIM-ML (notably: no division by m >> (SHIFT_AMOUNT + OFFSET), which is 0 for small m) are
described in ../common/pimml_host.py, shared by the four PIM-ML workloads.
"""

import numpy as np

import pimml_host as _host


class LinearRegressionNQ(_host.PimMlWorkload):
    name = "lirnq"
    logistic = False
    quantized = False
    offset = 6
    max_rows = 16
    defines = {"BL": 10, "INT32": None}
    nr_tasklets = 16
    params = {"iterations": 100, "n_features": 16, "learning_rate": 1e-4}

    def raw_data(self, rng):
        x = rng.integers(0, 50, (self.size, self.n)).astype(np.float64)
        w_true = np.arange(1, self.n + 1, dtype=np.float64)
        y = x @ w_true + rng.integers(0, 30, (self.size, self.n)).sum(axis=1)
        return x, y
