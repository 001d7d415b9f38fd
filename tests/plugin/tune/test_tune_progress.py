"""`cnmtune tune` as a user sees it while it works: a line per stage of the search on a pipe
(fine-tuning included), nothing but warnings under -q, a one-line warning when the model's
checkpoint cannot be read (these through the command line's entry point, in the test's process), and
Ctrl-C ending in one line and exit code 130 (a process of its own, signalled)."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

from tests.conftest import run_cnmtune as cnmtune

TUNE = ("tune", "va", "--size", "small", "--pipelines", "2", "--no-knobs", "--no-tune-defines", "--dpus", "2",
        "--tasklets", "2,4", "--top-k", "2", "--rounds", "2", "-j", "1", "--no-save")
STAGE_LINE = re.compile(r"^((?:tasklets|default build|round \d+): )?(compile|score|run|fine-tune): "
                        r"(\d+)(?: / (\d+) \(\d+ %\))?, ")


def test_on_a_pipe_every_stage_prints_a_line_fine_tuning_included(adaptable_model):
    result = cnmtune(*TUNE, "--model", str(adaptable_model))
    assert result.returncode == 0, result.stderr
    found = [STAGE_LINE.match(line) for line in result.stderr.splitlines()]
    assert found and all(found), result.stderr
    # a line when a stage ends (and one a minute in a long one): 'round 2: fine-tune: 3 / 3 (100 %), ...'
    labels = [f"{m[1] or ''}{m[2]}" for m in found if m[3] == m[4]]
    assert len(labels) == len(set(labels)), labels
    assert labels[:3] == ["compile", "score", "default build: run"], labels
    later = [labels.index(label) for label in ("round 1: run", "round 2: fine-tune", "round 2: run")]
    assert later == sorted(later), labels


def test_quiet_shows_only_the_warning_that_the_checkpoint_is_unreadable(adaptable_model, tmp_path):
    model = tmp_path / "random.onnx"
    for source in (adaptable_model, adaptable_model.with_suffix(".pt.json")):
        shutil.copy(source, tmp_path / source.name)
    model.with_suffix(".pt").write_bytes(random.Random(0).randbytes(4096))
    result = cnmtune("-q", *TUNE, "--model", str(model))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"warning: model not adapted: cannot read checkpoint "
                                          f"{model.with_suffix('.pt')}: not a cnmtune checkpoint (torch could "
                                          "not unpickle it)"]
    assert "model not adapted" in result.stdout  # the result table says it too


def _default_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_ends_a_tune_in_one_line_with_exit_code_130(random_model):
    # knobs on and unusual tasklet counts (not in the build cache yet): the compile workers start
    # knob servers, and Ctrl-C reaches them all (the terminal signals the whole process group)
    args = ("tune", "va", "--size", "small", "--pipelines", "2", "--dpus", "2", "--tasklets", "3,5", "--top-k", "4",
            "--rounds", "5", "-j", "2", "--no-save", "--model", str(random_model))
    # the tune starts as from an interactive shell, with Ctrl-C at its default action: a test run
    # started in the background of a non-interactive shell (CI's, nohup) ignores SIGINT, and a
    # child inherits that, so it would never see the Ctrl-C
    process = subprocess.Popen([sys.executable, "-m", "cnmtune", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_default_ctrl_c)
    try:
        first = process.stderr.readline()
        assert first.startswith("compile: "), first + process.stderr.read()
        os.killpg(process.pid, signal.SIGINT)  # while the compile workers and knob servers start
        rest = process.stderr.read()
        assert process.wait(timeout=60) == 130, rest
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.stdout.close()
        process.stderr.close()
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert rest.splitlines()[-1] == "interrupted" and len(rest.splitlines()) <= 2, rest
    deadline = time.monotonic() + 20  # the workers and their knob servers are gone with the tune
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("processes of the interrupted tune are still running")
