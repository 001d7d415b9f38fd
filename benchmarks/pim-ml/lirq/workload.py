"""LiRQ: linear regression on real-valued inputs quantised to int32
fixed point, PIM-ML (ISPASS'23), cnmtune's own implementation.

Compile time: the element type as a bare define, INT32 (default: fixed point with
SHIFT_AMOUNT = 10 fraction bits) or FLOAT (PIM-ML's TYPE); BL, log2 of the MRAM->WRAM block in
bytes (default 10; a block must hold two rows, so 2^BL >= 8 n). OFFSET = 0, MAX_ROWS = 24
(the most features). PIM-ML's default is NR_TASKLETS = 16.

Size = rows m of the training set. Params: iterations (default 100, one launch each), n_features (default 16, even, at most
24), learning_rate (default 0.1).

Data (seeded numpy): X uniform in [0, 1) in steps of 1e-4, true weights 1..n, Y = X.W + n noise terms
uniform in {0, 0.001, ..., 0.299}; INT32 quantises X and Y with a shift of 10 (truncation).

Host layout, launches, weight update, verification and the deliberate differences from
PIM-ML (notably: no division by m >> (SHIFT_AMOUNT + OFFSET), which is 0 for small m) are
described in ../common/pimml_host.py, shared by the four PIM-ML workloads.
"""

import numpy as np

import pimml_host as _host


class LinearRegressionQ(_host.PimMlWorkload):
    name = "lirq"
    logistic = False
    quantized = True
    offset = 0
    max_rows = 24
    defines = {"BL": 10, "INT32": None}
    nr_tasklets = 16
    params = {"iterations": 100, "n_features": 16, "learning_rate": 0.1}

    def raw_data(self, rng):
        x = rng.integers(0, 10_000, (self.size, self.n)) / 10_000
        w_true = np.arange(1, self.n + 1, dtype=np.float64)
        y = x @ w_true + rng.integers(0, 300, (self.size, self.n)).sum(axis=1) / 1000
        return x, y
