"""Tests for SymphonyTracker's progress: state, Algorithm 1 lines 3-10, lost LAST, jobs, wrap."""

import pytest
from tests.symphony_util import JOB, K, T0, at, fill_window, make_tracker, send


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
