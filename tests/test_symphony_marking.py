"""Tests for SymphonyTracker's marking probability (lines 11-17) and adaptive alpha (eq. 2-3)."""

import random

import pytest

from switch_agent.symphony import SymphonyTracker
from tests.symphony_util import JOB, N_WARMUP, T0, at, fill_window, make_tracker, params, send


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
