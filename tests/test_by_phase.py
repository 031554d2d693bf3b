"""emulator.analysis.by_phase: a 2D ring's time split by phase at each rank, and the
share of each channel's packets marked, on tables small enough to check by hand."""

import pytest

from emulator.analysis.by_phase import compare, marked_shares, phase_names, phase_times


def test_a_2d_rings_steps_name_its_three_phases():
    assert phase_names([0, 0, 0, 1, 1, 0, 0, 0]) == ["rows_rs", "columns", "rows_ag"]
    assert phase_names([0, 0, 0]) == ["rows"]


def _steps(rank, pass_, spans):
    """steps.csv rows of one rank and pass: (ring, start, end) per step, in step order."""
    return [{"rank": rank, "pass": pass_, "step": i, "ring": ring, "start_s": a, "end_s": b}
            for i, (ring, a, b) in enumerate(spans)]


def test_phases_tile_each_ranks_time_and_are_summed_over_collectives():
    # rank 0: rows 0-2 s (two steps), columns to 3 s, rows to 6 s; the second collective
    # the same 10 s later. Rank 1 waits in its columns: 1 s of rows, 4 s of columns.
    steps = (_steps(0, 0, [(0, 0, 1), (0, 1, 2), (1, 2, 3), (0, 3, 6)])
             + _steps(0, 1, [(0, 10, 11), (0, 11, 12), (1, 12, 13), (0, 13, 16)])
             + _steps(1, 0, [(0, 0, 0.5), (0, 0.5, 1), (1, 1, 5), (0, 5, 6)]))
    t = phase_times(steps)
    # rank 0: rs 2 + 2, columns 1 + 1, ag 3 + 3; rank 1: rs 1, columns 4, ag 1
    assert t["rows_rs_s"] == pytest.approx((4 + 1) / 2)
    assert t["columns_s"] == pytest.approx((2 + 4) / 2)
    assert t["rows_ag_s"] == pytest.approx((6 + 1) / 2)


def test_marked_share_is_per_channel():
    flows = [{"ring": 0, "packets": 90, "ce_marks": 9}, {"ring": 0, "packets": 10, "ce_marks": 1},
             {"ring": 1, "packets": 50, "ce_marks": 0}]
    assert marked_shares(flows) == {"rows_marked": pytest.approx(0.1), "columns_marked": 0.0}


def test_a_scheme_that_halves_the_columns_and_lengthens_the_rows():
    a = {s: {"rows_rs_s": 10.0, "columns_s": 4.0, "rows_marked": 0.0} for s in range(1, 9)}
    b = {s: {"rows_rs_s": 12.0 + s / 100, "columns_s": 2.0, "rows_marked": 0.2}
         for s in range(1, 10)}
    res = compare(a, b)
    assert res["seeds"] == list(range(1, 9))           # seed 9 has no pair
    rows, cols = res["metrics"]["rows_rs_s"]["paired"], res["metrics"]["columns_s"]["paired"]
    assert rows.verdict == "higher" and rows.lower == 0 and rows.median > 0.2
    assert cols.verdict == "lower" and cols.median == pytest.approx(-0.5)
    assert "paired" not in res["metrics"]["rows_marked"]      # a share: medians only
    assert res["metrics"]["rows_marked"]["scheme"] == pytest.approx(0.2)
