"""The search's moves on a real kernel's space: neighbours by dimension, crossovers, the grid."""

from __future__ import annotations

from cnmtune.passes import knob_pipelines
from cnmtune.plugin.tune.moves import Point, crossovers, neighbours, pipeline_neighbours, tuned_defines
from cnmtune.plugin.tune.space import Grid, search_space
from cnmtune.runtime.registry import find_kernel

KNOBS = tuple(p.text for p in knob_pipelines())
PIPELINES = ("O0", "O1", "O2", "O3", "instcombine,licm", *KNOBS)


def test_an_o_level_moves_along_its_knobs_and_to_the_adjacent_level_a_sequence_does_not():
    assert pipeline_neighbours("O2", PIPELINES) == ["O1", "O3", *(k for k in KNOBS if k.startswith("O2"))]
    runtime = "O3,unroll-runtime=1"
    expected = {"O3", "O2,unroll-runtime=1", *(k for k in KNOBS if k.startswith("O3") and k != runtime)}
    found = pipeline_neighbours(runtime, PIPELINES)  # in the order of the pipeline set
    assert set(found) == expected and found == sorted(found, key=PIPELINES.index)
    assert pipeline_neighbours("O0", PIPELINES) == [] and pipeline_neighbours("instcombine,licm", PIPELINES) == []


def test_the_neighbours_of_the_default_build_change_one_dimension_each():
    va = find_kernel("va")
    space = search_space(va, 4096, 2, 0, 10, (4,), (4, 8, 16))
    point = Point("O2", (), 16, 4)
    moves = neighbours(point, space, lambda tuned: space.grid)
    assert list(moves) == ["define BL", "tasklets", "pipeline"]
    # every other block size, nearest to va's own BL=10 first; BL=10 itself is the base: no define
    assert [dict(p.tuned)["BL"] for p in moves["define BL"]] == [9, 11, 8, 7, 6, 5, 4, 3]
    assert all((p.pipeline, p.tasklets, p.dpus) == ("O2", 16, 4) for p in moves["define BL"])
    assert moves["tasklets"] == [Point("O2", (), 8, 4)]
    assert [p.pipeline for p in moves["pipeline"]] == pipeline_neighbours("O2", space.pipelines)
    assert tuned_defines(space, {"BL": 10}) == () and tuned_defines(space, {"BL": 8}) == (("BL", 8),)


def test_a_move_the_grid_refuses_lands_on_the_largest_valid_tasklet_count_below():
    va = find_kernel("va")
    space = search_space(va, 4096, 2, 0, 10, (4,), (4, 8, 16))
    small = Grid(((4, (4,)), (8, (4,))))  # e.g. a large block leaves WRAM for 8 tasklets

    def grid(tuned):
        return small if dict(tuned).get("BL", 10) >= 11 else space.grid

    moves = neighbours(Point("O2", (), 16, 4), space, grid)
    assert Point("O2", (("BL", 11),), 8, 4) in moves["define BL"]
    assert Point("O2", (("BL", 11),), 16, 4) not in moves["define BL"]


def test_crossovers_mix_two_points_and_keep_only_valid_children():
    grid = Grid(((4, (4,)), (16, (4,))))
    a, b = Point("O2", (("BL", 8),), 16, 4), Point("O3", (), 4, 4)
    children = crossovers(a, b, lambda tuned: grid)
    assert len(children) == 6 and a not in children and b not in children
    assert Point("O3", (("BL", 8),), 16, 4) in children and Point("O2", (), 4, 4) in children
    assert crossovers(a, a, lambda tuned: grid) == []
