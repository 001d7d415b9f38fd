"""The simulator's native code: compiled once, said once, cached by numba, kept out of timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# a jitted simulator function called in a fresh process, inside a Stopwatch
PROBE = """
import json
import numpy as np
from cnmtune.runtime.sim.interpreter import grown_mram
from cnmtune.runtime.sim.jit import Stopwatch, compile_seconds
watch = Stopwatch()
assert grown_mram(np.zeros(8, np.uint8), 100).shape[0] == 1 << 16
print(json.dumps({"compile_s": compile_seconds(), "timed_s": watch.seconds()}))
"""


def _probe(numba_cache) -> tuple[dict, str]:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NUMBA_CACHE_DIR": str(numba_cache)})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_a_first_compile_is_noted_once_and_a_cached_run_is_silent(tmp_path):
    first, noted = _probe(tmp_path)
    assert noted.count("compiling the simulator's native code") == 1, noted
    assert str(tmp_path) in noted  # where the compiled code goes
    assert first["compile_s"] > 0 and first["timed_s"] < first["compile_s"]  # the compile is not timed
    again, silent = _probe(tmp_path)
    assert silent == "" and again["compile_s"] == 0.0
