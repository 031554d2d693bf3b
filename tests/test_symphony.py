"""Tests for switch_agent/symphony.py: Algorithm 1 and §3.4/§3.5 of the paper, line by line.

The tracker is pure: every test passes its own clock values (``now_s``). A job's
window grid is anchored at its first packet's time; tests send their first packet (and
the rest of window 0, unless said otherwise) at T0, so ``at(w)`` = T0 + (w + 0.5) * T_WIN
lies in the middle of window ``w``, well away from any boundary (tests about boundaries
use their own, exact times).
"""

import math
import random

import pytest

from switch_agent.config import SymphonyParams
from switch_agent.symphony import SymphonyTracker, WindowRecord

K, TAU, T_WIN_S, N_WARMUP, N_SAMPLE = 0.01, 0.25, 0.1, 2, 8
T0 = 1.0          # time of each test's first packet, unless said otherwise
JOB = 1


def params(**changes) -> SymphonyParams:
    return SymphonyParams(**{"k": K, "tau": TAU, "t_win_s": T_WIN_S, "n_warmup": N_WARMUP,
                             "n_sample": N_SAMPLE, **changes})


def make_tracker(records=None):
    on_window = records.append if records is not None else None
    return SymphonyTracker(params(), on_window=on_window)


def at(window: int, frac: float = 0.5) -> float:
    """A time inside window ``window`` of a job whose first packet came at T0."""
    return T0 + (window + frac) * T_WIN_S


def send(t, step, psns, *, now_s, job=JOB, last=False):
    """Observe packets of one step with the given PSNs; returns their P values."""
    return [t.observe(job, step, psn, last, now_s) for psn in psns]


def fill_window(t, window, *, n_lag, n_op, lag_step=5, op_step=6, job=JOB):
    """``n_lag`` packets of ``lag_step`` then ``n_op`` of ``op_step`` (none LAST) in a window.

    Window 0's packets start at T0 (the first packet anchors the job's grid there).
    """
    send(t, lag_step, range(n_lag), now_s=T0 if window == 0 else at(window), job=job)
    send(t, op_step, range(n_op), now_s=at(window, 0.6), job=job)


# --- state creation (§3.3, docs/architecture.md §5.3) -------------------------------------------------

def test_first_packet_creates_state_with_its_step_and_its_psn_as_psn_rec():
    t = make_tracker()
    assert t.observe(JOB, 5, 7, False, T0) == 0.0
    # step_min = step, psn_rec = 0, then line 9 (step == step_min): psn_rec = max(0, 7)
    assert t.state(JOB) == (5, 7, 1)


def test_first_packet_with_psn_0_leaves_psn_rec_0():
    t = make_tracker()
    t.observe(JOB, 5, 0, False, T0)
    assert t.state(JOB) == (5, 0, 1)


def test_first_packet_being_last_advances_step_min_immediately():
    t = make_tracker()
    assert t.observe(JOB, 5, 0, True, T0) == 0.0       # a SEND ONLY message
    assert t.state(JOB) == (6, 0, 1)


def test_state_of_an_unknown_job_raises_key_error():
    t = make_tracker()
    with pytest.raises(KeyError):
        t.state(JOB)


# --- progress tracking, Algorithm 1 lines 3-10 ----------------------------------------

def test_psn_rec_is_the_max_psn_seen_in_step_min():
    t = make_tracker()
    send(t, 5, [3, 9, 4, 1], now_s=T0)
    assert t.state(JOB) == (5, 9, 1)


def test_outpacing_non_last_packets_do_not_change_the_state():
    t = make_tracker()
    send(t, 5, [0, 1, 2, 3], now_s=T0)
    send(t, 6, [50, 60], now_s=T0)
    send(t, 9, [70], now_s=T0)
    assert t.state(JOB) == (5, 3, 1)


def test_last_packet_advances_step_min_to_step_plus_1_and_resets_psn_rec():
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)
    assert t.state(JOB) == (5, 9, 1)
    assert t.observe(JOB, 5, 10, True, T0) == 0.0
    assert t.state(JOB) == (6, 0, 1)


def test_last_advance_is_unconditional_even_from_an_outpacing_or_older_step():
    # Lines 3-5 assign step_min <- step + 1 for any LAST (optimistic advancement).
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)
    assert t.observe(JOB, 7, 4, True, T0) == 0.0
    assert t.state(JOB) == (8, 0, 1)
    t.observe(JOB, 5, 10, True, T0)                   # a late LAST of step 5
    assert t.state(JOB) == (6, 0, 1)


def test_late_packet_moves_step_min_back_and_sets_psn_rec_to_its_psn():
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)
    t.observe(JOB, 5, 10, True, T0)                   # step_min -> 6 (optimistic)
    send(t, 6, range(5), now_s=T0)
    assert t.state(JOB) == (6, 4, 1)
    # A straggler of step 5 arrives: lazy correction (lines 6-7), psn_rec = its psn
    # (not the max with the 4 seen in step 6).
    assert t.observe(JOB, 5, 2, False, T0) == 0.0
    assert t.state(JOB) == (5, 2, 1)
    # Step 6 is outpacing again; psn_rec = 2 <= n_warmup: no mark yet.
    assert t.observe(JOB, 6, 4, False, T0) == 0.0
    t.observe(JOB, 5, 3, False, T0)
    assert t.state(JOB) == (5, 3, 1)
    assert t.observe(JOB, 6, 6, False, T0) == pytest.approx(K * 1 * 6 / 3)


@pytest.mark.parametrize("packet", [
    (5, 4, False),      # in step_min
    (5, 1, False),      # in step_min, below psn_rec
    (6, 3, False),      # outpacing
    (4, 1, False),      # late: step < step_min
    (5, 9, True),       # LAST
    (7, 2, True),       # LAST of an outpacing step
])
def test_a_duplicate_packet_leaves_step_min_and_psn_rec_unchanged(packet):
    step, psn, last = packet
    t = make_tracker()
    send(t, 5, range(4), now_s=T0)                    # state (5, 3, 1)
    p1 = t.observe(JOB, step, psn, last, T0)
    after_first = t.state(JOB)
    p2 = t.observe(JOB, step, psn, last, T0)           # retransmission
    assert t.state(JOB) == after_first
    assert p2 == pytest.approx(p1)


def test_duplicates_are_counted_in_the_window_counters_by_design():
    records = []
    t = make_tracker(records)
    t.observe(JOB, 5, 0, False, T0)
    for _ in range(3):
        t.observe(JOB, 6, 1, False, T0)               # the same outpacing packet x3
    t.observe(JOB, 5, 1, False, at(1))                   # closes window 0
    assert (records[0].cnt_total, records[0].cnt_op) == (4, 3)


# --- lost LAST fail-safe (§3.4.1) -------------------------------------------------------

def test_lost_last_makes_next_step_outpacing_and_marked_once_past_warmup():
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)                   # LAST (psn 10) of step 5 is lost
    assert t.state(JOB) == (5, 9, 1)
    ps = send(t, 6, [0, 3, 9, 18], now_s=T0)
    assert ps == pytest.approx([0.0, K * 3 / 9, K * 9 / 9, K * 18 / 9])
    assert all(p > 0 for p in ps[1:])
    # The retransmitted LAST gets through (never throttled) and the step advances.
    assert t.observe(JOB, 5, 10, True, T0) == 0.0
    assert t.state(JOB) == (6, 0, 1)
    assert send(t, 6, [19, 20], now_s=T0) == [0.0, 0.0]


def test_lost_last_early_in_a_step_gives_no_mark_while_psn_rec_within_warmup():
    t = make_tracker()
    send(t, 5, [0, 1, 2], now_s=T0)                   # psn_rec = 2 = n_warmup
    assert send(t, 6, [5, 50, 500], now_s=T0) == [0.0, 0.0, 0.0]
    t.observe(JOB, 5, 3, False, T0)                   # psn_rec = 3 > n_warmup
    assert t.observe(JOB, 6, 6, False, T0) == pytest.approx(K * 6 / 3)


# --- marking probability, lines 11-17 -------------------------------------------------

def test_warmup_gives_p_0_while_psn_rec_at_most_n_warmup():
    t = make_tracker()
    t.observe(JOB, 5, 0, False, T0)
    assert t.observe(JOB, 6, 100, False, T0) == 0.0   # psn_rec 0
    t.observe(JOB, 5, 1, False, T0)
    assert t.observe(JOB, 6, 100, False, T0) == 0.0   # psn_rec 1
    t.observe(JOB, 5, 2, False, T0)
    assert t.observe(JOB, 6, 100, False, T0) == 0.0   # psn_rec 2 == n_warmup
    t.observe(JOB, 5, 3, False, T0)
    assert t.observe(JOB, 6, 100, False, T0) == pytest.approx(0.01 * 100 / 3)


def test_warmup_threshold_follows_n_warmup():
    t = SymphonyTracker(params(n_warmup=0))
    t.observe(JOB, 5, 1, False, T0)                   # psn_rec 1 > 0
    assert t.observe(JOB, 6, 2, False, T0) == pytest.approx(0.01 * 2 / 1)


@pytest.mark.parametrize("psn_rec, psn, expected", [
    (10, 4, 0.004),
    (10, 25, 0.025),
    (3, 3, 0.01),
    (40, 1, 0.00025),
    (7, 0, 0.0),        # psn 0 of an outpacing flow: Δ = 0
])
def test_p_is_k_times_alpha_times_psn_over_psn_rec_with_alpha_1(psn_rec, psn, expected):
    t = make_tracker()
    send(t, 5, [psn_rec], now_s=T0)
    assert t.state(JOB) == (5, psn_rec, 1)
    assert t.observe(JOB, 6, psn, False, T0) == pytest.approx(expected)


def test_p_scales_with_alpha():
    t = make_tracker()
    fill_window(t, 0, n_lag=1, n_op=11)                  # up: alpha 2 at the next close
    fill_window(t, 1, n_lag=1, n_op=11)                  # closes 0 -> alpha 2; up again
    send(t, 5, [10], now_s=at(2))                        # closes 1 -> alpha 3; psn_rec 10
    assert t.state(JOB) == (5, 10, 3)
    assert t.observe(JOB, 6, 4, False, at(2)) == pytest.approx(0.01 * 3 * 4 / 10)
    assert t.observe(JOB, 7, 25, False, at(2)) == pytest.approx(0.01 * 3 * 25 / 10)


def test_p_is_capped_at_1():
    t = make_tracker()
    send(t, 5, [3], now_s=T0)
    assert t.observe(JOB, 6, 300, False, T0) == pytest.approx(1.0)   # k*Δ == 1
    assert t.observe(JOB, 6, 301, False, T0) == 1.0
    assert t.observe(JOB, 6, 0xFFFFFF, False, T0) == 1.0
    t.configure(k=0.5)
    assert t.observe(JOB, 6, 100, False, T0) == 1.0                  # 0.5*100/3 = 16.7


def test_p_is_0_for_packets_of_step_min_whatever_their_psn():
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)
    assert send(t, 5, [10, 500, 0xFFFFFF], now_s=T0) == [0.0, 0.0, 0.0]


def test_p_is_0_for_a_late_packet():
    t = make_tracker()
    send(t, 5, range(10), now_s=T0)
    assert t.observe(JOB, 3, 400, False, T0) == 0.0
    assert t.state(JOB) == (3, 400, 1)


def test_p_is_0_when_k_is_0():
    t = make_tracker()
    t.configure(k=0)
    send(t, 5, range(10), now_s=T0)
    assert send(t, 6, [5, 50, 5000], now_s=T0) == [0.0, 0.0, 0.0]


def test_p_always_in_0_1_and_0_for_non_outpacing_on_a_seeded_random_stream():
    rng = random.Random(20260416)
    t = make_tracker()
    t.configure(k=0.3)
    now = T0
    for _ in range(5000):
        now += rng.uniform(0.0, 0.02)
        step = rng.randrange(0, 8)
        psn = rng.randrange(0, 200)
        last = rng.random() < 0.05
        p = t.observe(JOB, step, psn, last, now)
        assert 0.0 <= p <= 1.0
        step_min, psn_rec, alpha = t.state(JOB)
        assert alpha >= 1
        if step <= step_min or psn_rec <= N_WARMUP:
            assert p == 0.0
        else:
            assert p == pytest.approx(min(1.0, 0.3 * alpha * psn / psn_rec))


# --- adaptive alpha, eq. (2)-(3) and §3.4.3 -------------------------------------------

def test_alpha_goes_up_when_outpacing_share_reaches_tau():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=9, n_op=3)                   # 3 >= 0.25 * 12, and 12 > 8
    assert t.state(JOB)[2] == 1                          # updated only at window end
    send(t, 5, [20], now_s=at(1))
    assert t.state(JOB)[2] == 2
    assert (records[0].cnt_total, records[0].cnt_op, records[0].alpha) == (12, 3, 2)


def test_alpha_stays_at_floor_1_when_outpacing_share_below_tau():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=10, n_op=2)                  # 2 < 0.25 * 12
    send(t, 5, [20], now_s=at(1))
    assert t.state(JOB)[2] == 1
    assert (records[0].cnt_total, records[0].cnt_op, records[0].alpha) == (12, 2, 1)


def test_alpha_goes_down_by_1_per_window_to_the_floor_of_1():
    t = make_tracker()
    fill_window(t, 0, n_lag=1, n_op=11)
    fill_window(t, 1, n_lag=0, n_op=12)                  # closes 0: alpha 2
    fill_window(t, 2, n_lag=12, n_op=0)                  # closes 1: alpha 3
    assert t.state(JOB)[2] == 3
    fill_window(t, 3, n_lag=12, n_op=0)                  # closes 2: alpha 2
    assert t.state(JOB)[2] == 2
    fill_window(t, 4, n_lag=12, n_op=0)                  # closes 3: alpha 1
    assert t.state(JOB)[2] == 1
    fill_window(t, 5, n_lag=12, n_op=0)                  # closes 4: stays 1
    assert t.state(JOB)[2] == 1
    send(t, 5, [0], now_s=at(6))                         # closes 5: stays 1
    assert t.state(JOB)[2] == 1


def test_alpha_keeps_growing_under_persistent_misalignment():
    t = make_tracker()
    for w in range(6):
        fill_window(t, w, n_lag=1, n_op=11)
    send(t, 5, [0], now_s=at(6))
    assert t.state(JOB)[2] == 7


def test_sample_guard_leaves_alpha_unchanged_when_cnt_total_at_most_n_sample():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=1, n_op=7)                   # 8 packets, 7 outpacing
    fill_window(t, 1, n_lag=1, n_op=8)                   # closes 0 (8 <= 8): unchanged
    assert t.state(JOB)[2] == 1
    assert records[-1].cnt_total == 8 and records[-1].alpha == 1
    fill_window(t, 2, n_lag=8, n_op=0)                   # closes 1 (9 > 8): alpha 2
    assert t.state(JOB)[2] == 2
    assert records[-1].cnt_total == 9 and records[-1].alpha == 2
    send(t, 5, [0], now_s=at(3))                         # closes 2 (8 lagging): guarded
    assert t.state(JOB)[2] == 2
    assert records[-1].cnt_total == 8 and records[-1].cnt_op == 0


def test_tau_is_read_live_at_window_close():
    t = make_tracker()
    fill_window(t, 0, n_lag=10, n_op=2)                  # 2/12 < 0.25
    t.configure(tau=0.1)                                 # 2 >= 0.1 * 12
    send(t, 5, [0], now_s=at(1))
    assert t.state(JOB)[2] == 2


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


# --- per-job isolation (§3.5) -----------------------------------------------------------

def test_jobs_have_independent_state_when_interleaved():
    t = make_tracker()
    for psn in range(10):
        t.observe(1, 5, psn, False, T0)
        t.observe(2, 100 + psn, 0, True, T0)          # job 2 races through steps
        t.observe(3, 0, psn * 3, False, T0)
    assert t.state(1) == (5, 9, 1)
    assert t.state(2) == (110, 0, 1)
    assert t.state(3) == (0, 27, 1)


def test_marking_of_a_job_is_unaffected_by_another_jobs_steps():
    t = make_tracker()
    send(t, 5, range(11), now_s=T0, job=1)            # job 1: step_min 5, psn_rec 10
    before = t.observe(1, 6, 4, False, T0)
    assert before == pytest.approx(0.004)
    # Job 2 uses lower, equal and higher step numbers, LAST packets, big PSNs.
    send(t, 2, range(50), now_s=T0, job=2)
    send(t, 5, [1000], now_s=T0, job=2, last=True)
    send(t, 6, [3], now_s=T0, job=2)
    assert t.state(1) == (5, 10, 1)
    assert t.observe(1, 6, 4, False, T0) == pytest.approx(before)
    assert t.observe(2, 6, 4, False, T0) == 0.0       # job 2's own step_min is 6


def test_alpha_and_windows_are_per_job():
    records = []
    t = make_tracker(records)
    fill_window(t, 0, n_lag=1, n_op=11, job=1)           # job 1 (grid at T0) misaligned
    t.observe(2, 5, 0, False, T0 + 0.09)                 # job 2 anchors its grid at T0+0.09
    send(t, 5, range(1, 12), now_s=T0 + 0.10, job=2)     # job 2 aligned
    t.observe(1, 5, 0, False, T0 + 0.16)                 # job 1: window 1 -> close
    t.observe(2, 5, 12, False, T0 + 0.16)                # job 2: still its window 0
    assert [(r.job, r.window) for r in records] == [(1, 0)]
    t.observe(2, 5, 13, False, T0 + 0.20)                # job 2: window 1 -> close
    assert [(r.job, r.window) for r in records] == [(1, 0), (2, 0)]
    assert records[1].t_start_s == pytest.approx(T0 + 0.09)
    assert records[1].cnt_total == 13
    assert t.state(1)[2] == 2
    assert t.state(2)[2] == 1


# --- 16-bit step wrap-around (serial-number arithmetic) -------------------------------

def test_last_of_step_0xffff_wraps_step_min_to_0():
    t = make_tracker()
    send(t, 0xFFFF, range(5), now_s=T0)
    t.observe(JOB, 0xFFFF, 5, True, T0)
    assert t.state(JOB) == (0, 0, 1)
    send(t, 0, range(4), now_s=T0)
    assert t.state(JOB) == (0, 3, 1)


def test_step_0_after_step_min_0xffff_is_outpacing():
    records = []
    t = make_tracker(records)
    send(t, 0xFFFF, range(6), now_s=T0)               # psn_rec 5
    assert t.observe(JOB, 0, 4, False, T0) == pytest.approx(0.01 * 4 / 5)
    assert t.observe(JOB, 1, 10, False, T0) == pytest.approx(0.01 * 10 / 5)
    assert t.state(JOB) == (0xFFFF, 5, 1)
    send(t, 0xFFFF, [6], now_s=at(1))
    assert (records[0].cnt_total, records[0].cnt_op) == (8, 2)


def test_step_0xfffe_when_step_min_is_0_is_a_late_packet():
    t = make_tracker()
    send(t, 0xFFFF, range(3), now_s=T0)
    t.observe(JOB, 0xFFFF, 3, True, T0)               # step_min 0
    assert t.observe(JOB, 0xFFFE, 7, False, T0) == 0.0
    assert t.state(JOB) == (0xFFFE, 7, 1)
    # and step 0 is now outpacing relative to 0xfffe
    assert t.observe(JOB, 0, 14, False, T0) == pytest.approx(0.01 * 14 / 7)


def test_last_of_step_0xfffe_advances_to_0xffff():
    t = make_tracker()
    t.observe(JOB, 0xFFFE, 0, True, T0)
    assert t.state(JOB) == (0xFFFF, 0, 1)


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
