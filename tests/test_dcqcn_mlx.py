"""Tests for hosts/cc/dcqcn.py's mlx variant (DcqcnMlx, as HPCC's simulator models the NIC)."""

from dataclasses import replace

from hosts.cc.dcqcn import DcqcnMlx, DcqcnParams
from tests.dcqcn_util import approx, assert_rates


# --- mlx variant ---------------------------------------------------------------------

M = DcqcnParams(line_rate_bps=100.0, min_rate_bps=1.0, g=0.5,
                alpha_timer_s=1.0, timer_s=4.0, decrease_interval_s=0.5,
                fast_recovery_steps=2, rai_bps=10.0, rhai_bps=20.0, cnp_interval_s=1.0)


def test_mlx_first_cnp_sets_alpha_to_one_and_cuts_at_once():
    rp = DcqcnMlx(M, 0.0)
    rp.advance(2.5)
    assert rp.alpha == 0.25                 # no CNP: alpha moves down at 1 and 2
    assert_rates(rp, 100.0, 100.0)
    rp.on_cnp(2.5)
    # alpha := 1; decrease check at this instant: Rt = 100, Rc = 100*(1-1/2) = 50
    assert rp.alpha == 1.0
    assert_rates(rp, 100.0, 50.0)
    assert rp.cuts == 1 and rp.cnps == 1


def test_mlx_later_cnps_cut_once_at_next_decrease_check_and_cut_restarts_rp_timer():
    rp = DcqcnMlx(M, 0.0)
    rp.on_cnp(2.5)                          # Rt 100, Rc 50; checks at 3.0, 3.5, ...
    for t in (2.6, 2.7, 2.9):               # three CNPs within one decrease interval
        rp.on_cnp(t)
        assert_rates(rp, 100.0, 50.0)       # only flagged
    rp.advance(2.999)
    assert rp.cuts == 1
    rp.advance(3.0)                         # one cut, alpha still 1: Rt 50, Rc 25
    assert_rates(rp, 50.0, 25.0)
    assert rp.cuts == 2 and rp.cnps == 4
    rp.advance(3.5)
    assert rp.alpha == 1.0                  # CNPs seen in (2.5, 3.5]: 0.5*1 + 0.5
    assert rp.cuts == 2                     # the flag was consumed by the 3.0 cut
    rp.advance(4.5)
    assert rp.alpha == 0.5                  # no CNP in (3.5, 4.5]
    rp.advance(6.999)                       # first cut's RP deadline 6.5 was replaced by 7.0
    assert_rates(rp, 50.0, 25.0)
    assert rp.t_count == 0 and rp.cuts == 2
    rp.advance(7.0)                         # stage 0: fast recovery, Rc = (50+25)/2
    assert_rates(rp, 50.0, 37.5)


def test_mlx_alpha_moves_up_after_cnp_interval_down_otherwise_and_cut_uses_current_alpha():
    rp = DcqcnMlx(M, 0.0)
    rp.on_cnp(0.0)                          # alpha 1, Rt 100, Rc 50
    rp.advance(1.0)
    assert rp.alpha == 0.5                  # down
    rp.advance(2.0)
    assert rp.alpha == 0.25                 # down
    rp.on_cnp(2.2)
    assert rp.alpha == 0.25                 # a CNP does not touch alpha by itself
    rp.advance(2.5)                         # flagged check: Rt 50, Rc 50*(1-0.125) = 43.75
    assert_rates(rp, 50.0, 43.75)
    rp.advance(3.0)
    assert rp.alpha == 0.625                # up: 0.5*0.25 + 0.5
    rp.advance(4.0)
    assert rp.alpha == 0.3125               # down
    assert rp.cuts == 2


def test_mlx_alpha_update_precedes_decrease_check_at_the_same_instant():
    rp = DcqcnMlx(M, 0.0)
    rp.on_cnp(0.0)                          # Rc 50; alpha ticks at 1, 2, ...; checks 0.5, 1, ...
    rp.advance(1.0)
    assert rp.alpha == 0.5
    rp.on_cnp(1.7)
    rp.advance(2.0)
    # at 2.0 alpha -> 0.25 + 0.5 = 0.75 first, then the cut: Rt 50, Rc 50*(1-0.375) = 31.25
    # (cutting with the old alpha 0.5 would give 37.5), as HPCC ns-3 schedules them
    assert rp.alpha == 0.75
    assert_rates(rp, 50.0, 31.25)


def test_mlx_increase_stages_fast_recovery_then_additive_at_f_then_hyper():
    rp = DcqcnMlx(M, 0.0)
    rp.on_cnp(0.0)                          # Rt 100, Rc 50
    rp.on_cnp(0.1)                          # cut at check 0.5 (alpha still 1): Rt 50, Rc 25
    rp.advance(0.5)
    assert_rates(rp, 50.0, 25.0)
    rp.on_sent(10**7, 1.0)                  # no byte counter in mlx
    assert_rates(rp, 50.0, 25.0)
    steps = [
        (4.5, 50.0, 37.5),       # stage 0 < F: FR, Rc = (50+25)/2
        (8.5, 50.0, 43.75),      # stage 1 < F: FR, Rc = (50+37.5)/2
        (12.5, 60.0, 51.875),    # stage 2 == F: AI, Rt 60, Rc = (60+43.75)/2
        (16.5, 80.0, 65.9375),   # stage 3 > F: HAI, Rt 80, Rc = (80+51.875)/2
        (20.5, 100.0, 82.96875), # HAI, Rt 100, Rc = (100+65.9375)/2
        (24.5, 100.0, 91.484375),  # HAI, Rt 120 capped at 100, Rc = (100+82.96875)/2
    ]
    for t, rt, rc in steps:
        rp.advance(t - 0.001)
        assert rp.rate_bps < rc
        rp.advance(t)
        assert_rates(rp, rt, rc)
    assert rp.cuts == 2


def test_mlx_without_clamp_back_to_back_cuts_keep_rt_and_recovery_jumps_halfway_back():
    """HPCC ns-3 (CheckRateDecreaseMlx, CLAMP_TARGET_RATE 0): Rt <- Rc only if an RP-timer
    stage passed since the last cut. Derived by hand from M (alpha 1 until t = 1: a CNP
    before every alpha update; then halved at 2, 3, 4, 5 without CNPs)."""
    hp = replace(M, clamp_target_rate=False)
    ours, rp = DcqcnMlx(M, 0.0), DcqcnMlx(hp, 0.0)
    for r in (ours, rp):
        r.on_cnp(0.0)                           # cut at once: Rt 100, Rc 50
        r.on_cnp(0.1)
        r.advance(0.5)                          # a back-to-back cut, no stage between
        r.on_cnp(0.6)
        r.advance(1.0)                          # and another
    assert_rates(ours, 25.0, 12.5)              # ours: Rt follows Rc down every cut
    assert_rates(rp, 100.0, 12.5)               # HPCC: Rt kept at 100 since the first cut
    rp.advance(5.0)                             # stage 0, fast recovery: halfway to Rt
    assert_rates(rp, 100.0, 56.25)
    rp.on_cnp(5.1)
    rp.advance(5.5)                             # a stage passed since the last cut: clamp,
    assert_rates(rp, 56.25, 56.25 * (1 - 0.0625 / 2))       # alpha 1/16 by now
    assert rp.cuts == ours.cuts + 1 == 4


def test_mlx_first_cnp_may_arm_the_checks_without_cutting_as_hpcc():
    """HPCC ns-3 (cnp_received_mlx): the first CNP sets alpha 1 and Rt = Rc (rate times
    rateOnFirstCNP = 1) and schedules the first decrease check a decrease interval later."""
    rp = DcqcnMlx(replace(M, first_cut_at_once=False), 0.0)
    rp.on_cnp(2.5)
    assert rp.alpha == 1.0 and rp.cuts == 0
    assert_rates(rp, 100.0, 100.0)
    rp.advance(2.999)
    assert rp.cuts == 0
    rp.advance(3.0)                             # the first check: one cut
    assert_rates(rp, 100.0, 50.0)
    assert rp.cuts == 1


def test_mlx_late_advance_processes_decrease_alpha_and_increase_in_time_order():
    rp = DcqcnMlx(M, 0.0)
    rp.on_cnp(0.0)                          # Rt 100, Rc 50, RP timer 4.0
    rp.on_cnp(4.1)
    # the on_cnp's own advance to 4.1: alpha 1 -> 0.5, 0.25, 0.125, 0.0625 (t = 1..4);
    # increase at 4.0, stage 0: Rc = (100+50)/2 = 75
    assert rp.alpha == 0.0625
    assert_rates(rp, 100.0, 75.0)
    rp.advance(10.0)
    # 4.5 check: cut Rt 75, Rc 75*(1-0.03125) = 72.65625, RP timer -> 8.5 (8.0 cancelled)
    # alpha 5.0: up 0.03125+0.5 = 0.53125; 6, 7, 8, 9, 10: halvings -> 0.0166015625
    # 8.5 increase, stage 0: Rc = (75+72.65625)/2 = 73.828125
    assert_rates(rp, 75.0, 73.828125)
    assert rp.t_count == 1 and rp.cuts == 2
    assert rp.alpha == approx(0.0166015625)
