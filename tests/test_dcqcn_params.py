"""Tests for hosts/cc/dcqcn.py: DcqcnParams, the notification point, the fast path."""

from dataclasses import replace

import pytest

from hosts.cc.base import NotificationPoint
from hosts.cc.dcqcn import DcqcnMlx, DcqcnPaper, DcqcnParams
from runtime.scale import Scale
from tests.dcqcn_util import P, approx


# --- parameters ----------------------------------------------------------------------

@pytest.mark.parametrize("field", ["line_rate_bps", "min_rate_bps", "alpha_timer_s",
                                   "timer_s", "decrease_interval_s", "cnp_interval_s"])
@pytest.mark.parametrize("value", [0.0, -1.0])
def test_params_reject_non_positive_rates_and_times_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        DcqcnParams(**{field: value})


def test_params_reject_min_rate_above_line_rate():
    with pytest.raises(ValueError, match="min_rate_bps"):
        DcqcnParams(line_rate_bps=1e6, min_rate_bps=2e6)
    DcqcnParams(line_rate_bps=1e6, min_rate_bps=1e6)       # equal is fine


@pytest.mark.parametrize("g", [0.0, -0.1, 1.5])
def test_params_reject_g_outside_zero_one(g):
    with pytest.raises(ValueError, match=r"\bg\b"):
        DcqcnParams(g=g)


def test_params_reject_bad_byte_counter_and_fast_recovery_steps():
    with pytest.raises(ValueError, match="byte_counter_bytes"):
        DcqcnParams(byte_counter_bytes=0)
    with pytest.raises(ValueError, match="fast_recovery_steps"):
        DcqcnParams(fast_recovery_steps=-1)
    DcqcnParams(g=1.0, fast_recovery_steps=0)               # edges are valid


def test_paper_params_scaled_by_dilation_1000():
    real = DcqcnPaper.defaults(10e9)
    p = real.scaled(Scale(1000))
    assert p.line_rate_bps == approx(1e7)
    assert p.min_rate_bps == approx(1e5)
    assert p.alpha_timer_s == approx(0.055)
    assert p.timer_s == approx(0.055)
    assert p.decrease_interval_s == approx(0.004)
    assert p.cnp_interval_s == approx(0.05)
    assert p.byte_counter_bytes == 10 * 1024 * 1024
    assert p.rai_bps == approx(40e3)
    assert p.rhai_bps == approx(200e3)
    assert p.g == 1 / 256 and p.fast_recovery_steps == 5
    assert real.line_rate_bps == 10e9                       # the original is untouched


def test_mlx_params_follow_hpcc_formulas():
    p = DcqcnMlx.defaults(25e9)                             # bw = 25 Gb/s
    assert p.fast_recovery_steps == 1
    assert p.rai_bps == approx(5e6)                         # 5 * 25/25 Mb/s
    assert p.rhai_bps == approx(50e6)                       # 50 * 25/25 Mb/s
    assert p.timer_s == approx(300e-6) and p.alpha_timer_s == approx(1e-6)


# --- notification point --------------------------------------------------------------

def test_np_at_most_one_cnp_per_flow_per_interval():
    np_ = NotificationPoint(1.0)
    assert np_.on_ce("a", 0.0) is True
    assert np_.on_ce("a", 0.5) is False
    assert np_.on_ce("a", 0.999) is False
    assert (np_.sent, np_.suppressed) == (1, 2)
    assert np_.on_ce("a", 1.0) is True      # a full interval after the last CNP
    assert np_.on_ce("a", 1.5) is False     # the interval restarts at the CNP sent at 1.0
    assert np_.on_ce("a", 2.0) is True
    assert (np_.sent, np_.suppressed) == (3, 3)


def test_np_flows_are_independent_and_forget_resets_one_flow():
    np_ = NotificationPoint(1.0)
    assert np_.on_ce("a", 0.0) is True
    assert np_.on_ce("b", 0.1) is True
    assert np_.on_ce("a", 0.2) is False
    assert np_.on_ce("b", 0.3) is False
    np_.forget("a")
    assert np_.on_ce("a", 0.4) is True
    assert np_.on_ce("b", 0.5) is False     # b untouched
    np_.forget("never-seen")                # harmless
    assert (np_.sent, np_.suppressed) == (3, 3)


@pytest.mark.parametrize("interval", [0.0, -1.0])
def test_np_rejects_non_positive_interval(interval):
    with pytest.raises(ValueError, match="cnp_interval_s"):
        NotificationPoint(interval)


# --- the fast path: one advance over a long gap = the same machine stepped finely ------

def _reference_advance(rp, now_s):
    """The timer rule with no shortcut: fire the soonest deadline, one at a time."""
    while True:
        t, kind = min(rp._deadlines())
        if t > now_s:
            return
        rp._fire(kind, t)


@pytest.mark.pure          # patches one controller's advance and reads its __dict__
@pytest.mark.parametrize("cls,params", [
    (DcqcnPaper, P),
    (DcqcnMlx, replace(DcqcnMlx.defaults(10e9).scaled(Scale(1000)))),
    (DcqcnMlx, replace(DcqcnMlx.defaults(10e9).scaled(Scale(1000)), first_cut_at_once=True,
                       clamp_target_rate=True))])
def test_advance_fires_the_same_timers_in_the_same_order_as_one_at_a_time(cls, params):
    # CNPs and sends at irregular times, many alpha periods apart: the batched alpha loop
    # and the cached soonest deadline must leave every field exactly as the plain rule
    import random
    rng = random.Random(7)
    fast, slow = cls(params, 0.0), cls(params, 0.0)
    slow.advance = lambda now_s, rp=slow: _reference_advance(rp, now_s)
    t = 0.0
    period = params.alpha_timer_s
    for _ in range(400):
        t += rng.choice([0.3, 1.0, 2.5, 7.0, 40.0]) * period * rng.random()
        if rng.random() < 0.3:
            fast.on_cnp(t), slow.on_cnp(t)
        else:
            fast.on_sent(4096, t), slow.on_sent(4096, t)
        state = {k: v for k, v in vars(fast).items() if k not in ("_t_next", "advance")}
        assert state == {k: v for k, v in vars(slow).items()
                         if k not in ("_t_next", "advance")}, t
    assert fast.cuts > 3 and fast.cnps > 50
