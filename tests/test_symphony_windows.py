"""Tests for SymphonyTracker's windows, outpacing counter, on_window callback, configure/reset."""

import math

import pytest

from switch_agent.symphony import SymphonyTracker, WindowRecord
from tests.symphony_util import (
    JOB, K, N_SAMPLE, N_WARMUP, T0, TAU, T_WIN_S, at, fill_window, make_tracker, params, send,
)


# --- windows (§3.4.2 time-windowed max, §3.4.3 windowed counters) ----------------------

def test_window_close_resets_psn_rec_before_the_new_packet_is_counted():
    records = []
    t = make_tracker(records)
    send(t, 5, range(10), now_s=T0)                   # psn_rec 9
    # First packet of window 1 is outpacing: it sees psn_rec == 0 -> warm-up, P = 0.
    assert t.observe(JOB, 6, 5, False, at(1)) == 0.0
    assert t.state(JOB) == (5, 0, 1)
    assert records[0].psn_rec == 9 and records[0].cnt_total == 10
    # psn_rec is now the max within window 1 only (3, not max(9, 3)).
    t.observe(JOB, 5, 3, False, at(1))
    assert t.state(JOB) == (5, 3, 1)
    send(t, 5, [0], now_s=at(2))
    # The packets of window 1 were counted in window 1.
    assert (records[1].window, records[1].cnt_total, records[1].cnt_op) == (1, 2, 1)


def test_first_packet_of_a_new_window_in_step_min_sets_psn_rec_to_its_psn():
    t = make_tracker()
    send(t, 5, range(20), now_s=T0)
    t.observe(JOB, 5, 4, False, at(1))
    assert t.state(JOB) == (5, 4, 1)
    assert t.observe(JOB, 6, 8, False, at(1)) == pytest.approx(K * 8 / 4)


def test_step_min_and_alpha_survive_the_window_close():
    t = make_tracker()
    fill_window(t, 0, n_lag=9, n_op=4)
    t.observe(JOB, 5, 9, True, at(0, 0.9))               # step_min 6; 4 >= 0.25 * 14
    t.observe(JOB, 7, 0, False, at(1))
    assert t.state(JOB) == (6, 0, 2)


def test_empty_windows_in_between_change_nothing():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=1, n_op=11)
    send(t, 5, [3], now_s=at(5))                         # windows 1..4 were empty
    assert t.state(JOB) == (5, 3, 2)                     # +1 once, not once per window
    assert [r.window for r in records] == [0]
    send(t, 5, [0], now_s=at(6))
    assert [r.window for r in records] == [0, 5]
    assert records[1].t_start_s == pytest.approx(T0 + 5 * T_WIN_S)
    assert records[1].cnt_total == 1


def test_a_long_gap_after_a_low_share_window_lowers_alpha_by_at_most_1():
    t = make_tracker()
    fill_window(t, 0, n_lag=1, n_op=11)
    fill_window(t, 1, n_lag=1, n_op=11)
    fill_window(t, 2, n_lag=12, n_op=0)                  # alpha 3 now
    send(t, 5, [0], now_s=at(50))                        # closes 2: alpha 2
    assert t.state(JOB)[2] == 2


def test_window_grid_is_anchored_at_the_first_packet_time():
    records = []
    t = make_tracker(records)
    t0 = 0.05                                            # not on an absolute 0.1 grid
    t.observe(JOB, 5, 0, False, t0)
    t.observe(JOB, 5, 1, False, 0.12)                    # past 0.1 but still window 0
    t.observe(JOB, 5, 2, False, t0 + 0.099)              # window 0
    assert records == []
    t.observe(JOB, 5, 3, False, t0 + 0.1)                # window 1 starts here
    assert len(records) == 1
    assert records[0].window == 0
    assert records[0].t_start_s == t0
    assert records[0].cnt_total == 3
    assert t.state(JOB) == (5, 3, 1)


def test_window_boundary_on_an_exactly_representable_grid():
    records = []
    t = SymphonyTracker(params(t_win_s=0.125), on_window=records.append)
    t.observe(JOB, 5, 0, False, 10.0)
    t.observe(JOB, 5, 1, False, 10.125 - 2 ** -40)       # last instant of window 0
    assert records == []
    t.observe(JOB, 5, 2, False, 10.125)                  # first instant of window 1
    assert [r.window for r in records] == [0]
    t.observe(JOB, 5, 3, False, 10.25 - 2 ** -40)
    assert [r.window for r in records] == [0]
    t.observe(JOB, 5, 4, False, 10.25)
    assert [r.window for r in records] == [0, 1]
    assert records[1].t_start_s == 10.125


def test_window_grid_is_fixed_not_restarted_by_each_close():
    records = []
    t = make_tracker(records)
    t.observe(JOB, 5, 0, False, T0)
    t.observe(JOB, 5, 1, False, T0 + 0.12)               # closes window 0
    t.observe(JOB, 5, 2, False, T0 + 0.21)               # window 2 (0.2..0.3): closes 1
    assert [r.window for r in records] == [0, 1]
    assert [r.t_start_s for r in records] == pytest.approx([T0, T0 + 0.1])


def test_a_packet_with_an_earlier_timestamp_counts_in_the_current_window():
    records = []
    t = make_tracker(records)
    send(t, 5, [0], now_s=T0)
    send(t, 5, [1], now_s=at(1))                         # closes window 0
    t.observe(JOB, 6, 0, False, T0)                   # clock went back: no close
    send(t, 5, [2], now_s=at(2))
    assert [r.window for r in records] == [0, 1]
    assert (records[1].cnt_total, records[1].cnt_op) == (2, 1)


# --- outpacing counter: against step_min before the packet's update --------------------

def test_cnt_op_compares_against_step_min_before_the_update():
    records = []
    t = make_tracker(records)
    now = T0
    t.observe(JOB, 5, 0, False, now)      # first packet: not outpacing
    t.observe(JOB, 5, 1, False, now)      # not outpacing
    t.observe(JOB, 5, 2, True, now)       # LAST of step_min 5: not outpacing; step_min -> 6
    t.observe(JOB, 6, 0, False, now)      # step_min is already 6: not outpacing
    t.observe(JOB, 7, 0, False, now)      # outpacing (1)
    t.observe(JOB, 7, 1, True, now)       # outpacing LAST (2); step_min -> 8
    t.observe(JOB, 6, 1, False, now)      # late (6 < 8): not outpacing; step_min -> 6
    t.observe(JOB, 7, 2, False, now)      # outpacing again (3)
    t.observe(JOB, 5, 3, True, now)       # LAST of an older step: not outpacing; -> 6
    assert t.state(JOB) == (6, 0, 1)
    send(t, 6, [2], now_s=at(1))
    assert (records[0].cnt_total, records[0].cnt_op) == (9, 3)


# --- on_window callback -----------------------------------------------------------------

def test_on_window_receives_the_closed_windows_record():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=9, n_op=3)                   # psn_rec 8, 12 packets, 3 op
    t.observe(JOB, 5, 2, False, at(1))
    assert records == [WindowRecord(job=JOB, window=0, t_start_s=T0, step_min=5, psn_rec=8,
                                    alpha=2, cnt_total=12, cnt_op=3)]
    fill_window(t, 1, n_lag=3, n_op=0, lag_step=6)       # step 6 is outpacing vs 5
    t.observe(JOB, 5, 9, True, at(1, 0.9))               # step_min 6, psn_rec 0
    t.observe(7, 1, 0, False, at(1, 0.9))                # another job: no record for JOB
    t.observe(JOB, 6, 4, False, at(3))                   # closes window 1
    assert len(records) == 2
    r = records[1]
    assert r.job == JOB and r.window == 1
    assert r.t_start_s == pytest.approx(T0 + T_WIN_S)
    assert (r.step_min, r.psn_rec) == (6, 0)
    assert (r.cnt_total, r.cnt_op) == (5, 3)             # 5,2 + three of step 6 + LAST
    assert r.alpha == 2                                  # 5 <= n_sample: guarded


def test_no_callback_is_fine():
    t = make_tracker()
    fill_window(t, 0, n_lag=9, n_op=3)
    t.observe(JOB, 5, 0, False, at(1))
    assert t.state(JOB) == (5, 0, 2)


# --- configure / reset (live reconfiguration, "late start") ---------------------------

def test_configure_changes_k_live_without_touching_state():
    t = make_tracker()
    send(t, 5, [10], now_s=T0)
    assert t.observe(JOB, 6, 4, False, T0) == pytest.approx(0.004)
    t.configure(k=0.05)
    assert t.k == 0.05
    assert t.state(JOB) == (5, 10, 1)
    assert t.observe(JOB, 6, 4, False, T0) == pytest.approx(0.02)


def test_configure_changes_n_warmup_live():
    t = make_tracker()
    send(t, 5, [3], now_s=T0)
    assert t.observe(JOB, 6, 3, False, T0) == pytest.approx(0.01)
    t.configure(n_warmup=3)
    assert t.observe(JOB, 6, 3, False, T0) == 0.0


def test_configure_none_keeps_every_parameter():
    t = make_tracker()
    t.configure()
    assert (t.k, t.tau, t.t_win_s, t.n_warmup, t.n_sample) == (K, TAU, T_WIN_S, N_WARMUP,
                                                               N_SAMPLE)


@pytest.mark.parametrize("kwargs, name", [
    ({"k": -0.01}, "k"),
    ({"k": math.nan}, "k"),
    ({"tau": -0.1}, "tau"),
    ({"tau": 1.5}, "tau"),
    ({"tau": math.nan}, "tau"),
    ({"t_win_s": 0}, "t_win_s"),
    ({"t_win_s": -0.1}, "t_win_s"),
    ({"t_win_s": math.nan}, "t_win_s"),
    ({"n_warmup": -1}, "n_warmup"),
    ({"n_sample": -1}, "n_sample"),
])
def test_configure_rejects_bad_values_naming_the_parameter(kwargs, name):
    t = make_tracker()
    with pytest.raises(ValueError, match=name):
        t.configure(**kwargs)
    assert (t.k, t.tau, t.t_win_s, t.n_warmup, t.n_sample) == (K, TAU, T_WIN_S, N_WARMUP,
                                                               N_SAMPLE)
    with pytest.raises(ValueError, match=name):
        SymphonyTracker(params(**kwargs))


def test_a_rejected_configure_changes_nothing():
    t = make_tracker()
    with pytest.raises(ValueError, match="tau"):
        t.configure(k=0.5, tau=2.0)
    assert t.k == K


def test_configure_t_win_re_anchors_the_grid_at_the_current_window_start():
    records = []
    t = make_tracker(records)
    send(t, 5, [0], now_s=T0)
    send(t, 5, [1], now_s=T0 + 0.35)                     # window 3 = [T0+0.3, T0+0.4)
    assert [r.window for r in records] == [0]
    t.configure(t_win_s=0.2)                             # current window: [T0+0.3, T0+0.5)
    send(t, 5, [2], now_s=T0 + 0.45)                     # still the same window
    assert [r.window for r in records] == [0]
    send(t, 5, [3], now_s=T0 + 0.52)                     # next window on the new grid
    assert len(records) == 2
    assert records[1].t_start_s == pytest.approx(T0 + 0.3)
    assert records[1].cnt_total == 2


def test_reset_forgets_every_job():
    t = make_tracker()
    for w in range(3):
        fill_window(t, w, n_lag=1, n_op=11)
    send(t, 5, [0], now_s=at(3))
    t.observe(2, 9, 4, False, at(3))
    assert t.state(JOB)[2] == 4
    t.reset()
    with pytest.raises(KeyError):
        t.state(JOB)
    with pytest.raises(KeyError):
        t.state(2)
    # A job is created afresh: alpha 1, new step_min, grid anchored at the new time.
    records = []
    t.on_window = records.append
    t.observe(JOB, 40, 2, False, at(3, 0.9))
    assert t.state(JOB) == (40, 2, 1)
    t.observe(JOB, 40, 3, False, at(4, 0.8))             # < 0.1 s after the new t0
    assert records == []
