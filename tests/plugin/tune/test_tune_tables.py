"""`cnmtune tune` read at 80 columns: tables that wrap instead of cutting cells, pipelines by short
id with a legend of their full text, notes silenced by -q, each default stated once in --help."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import CliResult, run_cnmtune

TUNE = ("tune", "va", "--size", "small", "--pipelines", "12", "--dpus", "2", "--tasklets", "2,4", "--top-k", "4",
        "--rounds", "2", "-j", "1", "--exhaustive")  # two rounds: the second one's fine-tuning is in the tables


def cnmtune(*args: str) -> CliResult:
    return run_cnmtune(*args, columns=80)


def legend(output: str) -> dict[str, str]:
    """The pipelines legend printed below the tables: each id with its text joined over its lines."""
    entries: dict[str, str] = {}
    for line in output[output.index("\npipelines:\n"):].splitlines()[2:]:
        if re.match(r"  P\d+ ", line):
            pipeline_id, text = line.split(maxsplit=1)
            entries[pipeline_id] = text
        elif line.startswith("     "):
            entries[pipeline_id] += line.strip()
        else:
            break
    return entries


def test_tune_tables_fit_80_columns_and_the_legend_names_every_pipeline():
    shown, quiet = cnmtune(*TUNE), cnmtune("-q", *TUNE)
    report = json.loads(cnmtune(*TUNE, "--json").stdout)
    assert shown.returncode == quiet.returncode == 0, shown.stderr
    assert "…" not in shown.stdout
    lines = shown.stdout.splitlines()
    # the note of the tuning cache is one line (its path is copied whole); everything else fits 80 columns
    note = [line for line in lines if "in the tuning cache" in line]
    assert len(note) == 1 and re.match(r"(the default build was fastest; )?recorded P\d+ \(\d tasklets\)", note[0])
    assert max(len(line) for line in lines if line not in note) <= 80
    # every pipeline of the report in full, each once, under the id the tables show
    ids = legend(shown.stdout)
    chosen = [c["pipeline"] for c in report["top"]] + [report["chosen"]["pipeline"], report["default"]["pipeline"],
                                                       report["exhaustive"]["best"]["pipeline"]] \
        + list(report["recorded"]["pipelines"].values())  # the fastest of each tasklet count
    assert set(chosen) == set(ids.values()) and len(ids) == len(set(ids.values()))
    assert any("," in pipeline for pipeline in chosen)  # a pass sequence, not only O-levels, is in the legend
    by_text = {text: pipeline_id for pipeline_id, text in ids.items()}
    for rank, c in enumerate(report["top"], 1):
        assert re.search(rf"│ +{rank}( \*)? │ {by_text[c['pipeline']]}\b", shown.stdout)
    # -q drops the note, not the results
    assert "pipelines:" in quiet.stdout and "in the tuning cache" not in quiet.stdout


@pytest.mark.parametrize("command", ["tune", "offload", "sweep"])
def test_help_states_each_default_once(command):
    result = cnmtune(command, "--help")
    assert result.returncode == 0, result.stderr
    options = re.split(r"\n│ +-", result.stdout)[1:]  # one chunk per option (its wrapped lines)
    assert len(options) > 5
    for option in options:
        assert not ("(default:" in option and "[default:" in option), option
