"""Counts read in the right number: '1 DPU', not '1 DPUs' or '1 DPU(s)'."""

from __future__ import annotations

from cnmtune.wording import counted, plural


def test_counts_read_in_the_right_number():
    assert [counted(1, "DPU"), counted(64, "DPU"), counted(1, "tasklet"), counted(0, "tasklet")] \
        == ["1 DPU", "64 DPUs", "1 tasklet", "0 tasklets"]
    assert [plural("launch", 1), plural("launch", 3), plural("transfer", 2)] == ["launch", "launches", "transfers"]
