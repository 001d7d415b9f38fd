"""Counts in what cnmtune says, with their noun in the right number: '1 DPU', '2 launches'."""

from __future__ import annotations


def plural(noun: str, count: int) -> str:
    """`noun` as `count` of it reads: 'DPU' for 1, 'DPUs' for 2; 'launch', 'launches'."""
    if count == 1:
        return noun
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def counted(count: int, noun: str) -> str:
    """'1 DPU', '64 DPUs', '2 launches'."""
    return f"{count} {plural(noun, count)}"
