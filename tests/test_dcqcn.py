"""Tests for hosts/cc/dcqcn.py: the DCQCN rate machines (Zhu et al., SIGCOMM'15; the
HPCC ns-3 simulator's Mellanox-style variant) and the notification point.

Every expected number below was worked out by hand from the rules in the paper and
the module docstring, using small round parameters (line rate 100, g = 1/2, all
timers 1 s, B = 1000 bytes, F = 2, R_AI = 10, R_HAI = 20) so that every value is a
short binary fraction. The arithmetic is written next to each expectation; nothing
here re-implements the algorithm.
"""

from dataclasses import replace

import pytest

from hosts.cc.base import NotificationPoint
from hosts.cc.dcqcn import DcqcnMlx, DcqcnPaper, DcqcnParams
from runtime.scale import Scale

# --- paper variant -------------------------------------------------------------------

P = DcqcnParams(line_rate_bps=100.0, min_rate_bps=1.0, g=0.5,
                alpha_timer_s=1.0, timer_s=1.0, byte_counter_bytes=1000,
                fast_recovery_steps=2, rai_bps=10.0, rhai_bps=20.0, cnp_interval_s=1.0)


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def assert_rates(rp, target, rate):
    assert rp.target_bps == approx(target), f"Rt {rp.target_bps} != {target}"
    assert rp.rate_bps == approx(rate), f"Rc {rp.rate_bps} != {rate}"


def two_cuts():
    """A paper RP after CNPs at t=0.5 and t=0.75 (no alpha decay in between).

    t=0.5 : alpha = 0.5*1 + 0.5 = 1      Rt = 100   Rc = 100*(1-1/2) = 50
    t=0.75: alpha = 0.5*1 + 0.5 = 1      Rt = 50    Rc = 50*(1-1/2)  = 25
    Next increase timer and next alpha decay: 0.75 + 1 = 1.75.
    """
    rp = DcqcnPaper(P, 0.0)
    rp.on_cnp(0.5)
    rp.on_cnp(0.75)
    assert_rates(rp, 50.0, 25.0)
    assert rp.alpha == 1.0
    assert rp.cuts == 2 and rp.cnps == 2
    return rp


def test_new_flow_starts_at_line_rate_and_nothing_increases_before_first_cut():
    rp = DcqcnPaper(P, 0.0)
    assert_rates(rp, 100.0, 100.0)
    assert rp.alpha == 1.0
    rp.advance(10.0)
    rp.on_sent(1_000_000, 10.0)             # 1000 byte-counter periods' worth of bytes
    assert_rates(rp, 100.0, 100.0)
    assert rp.t_count == 0 and rp.bc_count == 0 and rp.cuts == 0
    assert rp.alpha == approx(0.5 ** 10)    # alpha still decays: 10 periods, no CNP


def test_alpha_decays_every_alpha_timer_without_cnp():
    rp = DcqcnPaper(P, 0.0)
    rp.advance(0.999)
    assert rp.alpha == 1.0
    rp.advance(1.0)
    assert rp.alpha == 0.5                  # (1-g)*1
    rp.advance(2.0)
    assert rp.alpha == 0.25
    rp.advance(4.0)                         # two more decays, at 3 and 4
    assert rp.alpha == 0.0625
    assert_rates(rp, 100.0, 100.0)


def test_alpha_decay_timer_counts_from_construction_time():
    rp = DcqcnPaper(P, now_s=5.0)
    rp.advance(5.999)
    assert rp.alpha == 1.0
    rp.advance(6.0)
    assert rp.alpha == 0.5


def test_first_cnp_cuts_with_alpha_updated_before_the_cut():
    rp = DcqcnPaper(P, 0.0)
    rp.on_cnp(1.5)
    # alpha decayed at t=1: 0.5; CNP: alpha = 0.5*0.5 + 0.5 = 0.75,
    # Rt = 100, Rc = 100*(1 - 0.75/2) = 62.5   (the old alpha 0.5 would give 75)
    assert rp.alpha == approx(0.75)
    assert_rates(rp, 100.0, 62.5)
    assert rp.cuts == 1 and rp.cnps == 1


def test_alpha_is_an_ewma_over_several_cnps():
    rp = DcqcnPaper(P, 0.0)
    rp.advance(3.0)
    assert rp.alpha == 0.125                # decays at 1, 2, 3
    rp.on_cnp(3.0)
    # alpha = 0.0625 + 0.5 = 0.5625; Rt = 100; Rc = 100*(1-0.28125) = 71.875
    assert rp.alpha == approx(0.5625)
    assert_rates(rp, 100.0, 71.875)
    rp.on_cnp(3.5)
    # alpha = 0.28125 + 0.5 = 0.78125; Rt = 71.875; Rc = 71.875*(1-0.390625) = 43.798828125
    assert rp.alpha == approx(0.78125)
    assert_rates(rp, 71.875, 43.798828125)
    rp.on_cnp(4.0)                          # alpha timer restarted at 3.5 -> next decay 4.5
    # alpha = 0.390625 + 0.5 = 0.890625; Rt = 43.798828125;
    # Rc = 43.798828125*(1-0.4453125) = 43.798828125*0.5546875 = 24.294662475585938
    assert rp.alpha == approx(0.890625)
    assert_rates(rp, 43.798828125, 24.294662475585938)
    assert rp.cuts == 3


def test_cnp_restarts_the_alpha_decay_timer():
    rp = DcqcnPaper(P, 0.0)
    rp.on_cnp(0.5)                          # alpha = 1; next decay at 1.5, not 1.0
    rp.advance(1.499)
    assert rp.alpha == 1.0
    rp.advance(1.5)
    assert rp.alpha == 0.5
    rp.advance(3.5)                         # decays at 2.5 and 3.5
    assert rp.alpha == 0.125


def test_timer_increases_fast_recovery_then_additive_never_hyper_without_bytes():
    rp = two_cuts()                         # Rt = 50, Rc = 25, first timer event at 1.75
    rp.advance(1.749)
    assert_rates(rp, 50.0, 25.0)
    assert rp.t_count == 0
    rp.advance(1.75)    # T=1: max(1,0) = 1 <= F=2 -> fast recovery: Rc = (50+25)/2
    assert_rates(rp, 50.0, 37.5)
    rp.advance(2.75)    # T=2: max(2,0) = 2 <= F -> still fast recovery: Rc = (50+37.5)/2
    assert_rates(rp, 50.0, 43.75)
    rp.advance(3.75)    # T=3: max 3 > F, min 0 -> additive: Rt = 60, Rc = (60+43.75)/2
    assert_rates(rp, 60.0, 51.875)
    rp.advance(4.75)    # T=4: BC still 0, so still additive: Rt = 70, Rc = (70+51.875)/2
    assert_rates(rp, 70.0, 60.9375)
    rp.advance(5.75)    # T=5 additive: Rt = 80, Rc = (80+60.9375)/2
    assert_rates(rp, 80.0, 70.46875)
    assert rp.t_count == 5 and rp.bc_count == 0


def test_byte_counter_increase_events_accumulate_partial_bytes():
    rp = two_cuts()                         # Rt = 50, Rc = 25
    rp.on_sent(600, 1.0)                    # 600 < B: no event
    assert_rates(rp, 50.0, 25.0)
    assert rp.bc_count == 0
    rp.on_sent(600, 1.0)                    # 1200 >= B: BC=1, FR; 200 bytes carried over
    assert_rates(rp, 50.0, 37.5)            # Rc = (50+25)/2
    assert rp.bc_count == 1
    rp.on_sent(800, 1.0)                    # 200+800 = B: BC=2, max 2 <= F=2 -> still FR
    assert_rates(rp, 50.0, 43.75)           # Rt = 50, Rc = (50+37.5)/2
    assert rp.bc_count == 2
    rp.on_sent(3000, 1.0)                   # three events at once, BC=3,4,5, all additive
    # BC=3: Rt 60 -> Rc (60+43.75)/2 = 51.875; BC=4: Rt 70 -> Rc (70+51.875)/2 = 60.9375;
    # BC=5: Rt 80 -> Rc (80+60.9375)/2 = 70.46875
    assert_rates(rp, 80.0, 70.46875)
    assert rp.bc_count == 5 and rp.t_count == 0


def test_hyper_increase_once_both_counters_exceed_f_and_target_capped_at_line_rate():
    rp = two_cuts()                         # Rt = 50, Rc = 25
    rp.on_sent(3000, 1.0)
    # BC=1: max 1 <= F=2 -> FR, Rc = (50+25)/2 = 37.5;  BC=2: max 2 <= F -> FR,
    # Rc = (50+37.5)/2 = 43.75;  BC=3: max 3 > F, min 0 -> AI: Rt = 60, Rc = (60+43.75)/2
    assert_rates(rp, 60.0, 51.875)
    assert rp.bc_count == 3 and rp.t_count == 0
    rp.advance(1.75)    # T=1, BC=3: max 3, min 1 <= F -> additive: Rt = 70, Rc = (70+51.875)/2
    assert_rates(rp, 70.0, 60.9375)
    rp.advance(2.75)    # T=2, BC=3: min = 2 = F, not > F -> still additive:
    assert_rates(rp, 80.0, 70.46875)        # Rt = 80, Rc = (80+60.9375)/2
    rp.advance(3.75)    # T=3, BC=3: min = 3 > F -> hyper: Rt = 80+20 = 100, Rc = (100+70.46875)/2
    assert_rates(rp, 100.0, 85.234375)
    assert rp.t_count == 3 and rp.bc_count == 3
    rp.on_sent(1000, 4.0)   # BC=4 hyper: Rt = 120 capped to 100, Rc = (100+85.234375)/2
    assert_rates(rp, 100.0, 92.6171875)
    rp.advance(4.75)    # T=4 hyper: Rt = 100 (cap), Rc = (100+92.6171875)/2
    assert_rates(rp, 100.0, 96.30859375)


def test_rates_never_exceed_line_rate():
    rp = DcqcnPaper(P, 0.0)
    rp.on_cnp(0.5)                          # Rt = 100, Rc = 50
    rp.advance(1.5)                         # T=1 FR: Rc = 75
    assert_rates(rp, 100.0, 75.0)
    rp.advance(2.5)                         # T=2 FR (max 2 <= F): Rc = (100+75)/2 = 87.5
    assert_rates(rp, 100.0, 87.5)
    for k in range(3, 80):
        # timer and byte counter: T=3 AI (Rt 110 -> 100) first, later hyper increases
        rp.on_sent(5000, k + 0.5)
        assert rp.target_bps == 100.0
        assert rp.rate_bps <= 100.0
    assert rp.rate_bps == approx(100.0)


def test_cnp_resets_increase_counters_byte_counter_and_timer():
    rp = two_cuts()                         # Rt = 50, Rc = 25
    rp.advance(2.75)                        # T=1 FR (Rc 37.5), T=2 FR (Rc (50+37.5)/2 = 43.75)
    assert_rates(rp, 50.0, 43.75)
    assert rp.t_count == 2                  # without a reset, the next timer event (T=3) is AI
    rp.on_sent(600, 3.0)                    # 600 bytes towards the next byte event
    rp.on_cnp(3.0)
    # alpha: decays at 1.75 and 2.75 -> 0.25; CNP: 0.125 + 0.5 = 0.625
    # Rt = 43.75; Rc = 43.75*(1 - 0.3125) = 43.75*11/16 = 30.078125
    assert rp.alpha == approx(0.625)
    assert_rates(rp, 43.75, 30.078125)
    assert rp.t_count == 0 and rp.bc_count == 0
    rp.on_sent(600, 3.5)                    # the 600 from before the CNP were discarded
    assert rp.bc_count == 0
    assert_rates(rp, 43.75, 30.078125)
    rp.advance(3.99)                        # old deadline 3.75 was cancelled; new one is 4.0
    assert rp.t_count == 0
    assert_rates(rp, 43.75, 30.078125)
    rp.advance(4.0)     # T=1 again -> fast recovery, not additive: Rc = (43.75+30.078125)/2
    assert_rates(rp, 43.75, 36.9140625)     # (an AI would give Rt 53.75)
    assert rp.t_count == 1


def test_rate_floor_is_min_rate():
    rp = DcqcnPaper(P, 0.0)
    expected = [  # (Rt, Rc) after each CNP, alpha stays 1 (0.5*1+0.5), each cut halves Rc
        (100.0, 50.0), (50.0, 25.0), (25.0, 12.5), (12.5, 6.25), (6.25, 3.125),
        (3.125, 1.5625),
        (1.5625, 1.0),      # 1.5625/2 = 0.78125 < Rmin = 1
        (1.0, 1.0),         # 1/2 < 1
    ]
    for i, (rt, rc) in enumerate(expected):
        rp.on_cnp(0.1 * (i + 1))
        assert rp.alpha == 1.0
        assert_rates(rp, rt, rc)


def test_late_advance_fires_every_due_deadline_in_order_on_the_original_grid():
    rp = two_cuts()                         # alpha 1, deadlines 1.75, 2.75, 3.75, ...
    rp.advance(3.8)                         # one late call covering three periods
    # increases at 1.75 (T=1 FR: Rc (50+25)/2 = 37.5), 2.75 (T=2 FR: Rc (50+37.5)/2 = 43.75),
    # 3.75 (T=3 AI: Rt 60, Rc (60+43.75)/2 = 51.875)
    assert_rates(rp, 60.0, 51.875)
    assert rp.t_count == 3
    assert rp.alpha == 0.125                # three decays
    rp.advance(4.749)                       # next deadline is 4.75 (grid), not 3.8 + 1
    assert rp.t_count == 3
    assert_rates(rp, 60.0, 51.875)
    rp.advance(4.75)                        # T=4 AI: Rt 70, Rc (70+51.875)/2
    assert_rates(rp, 70.0, 60.9375)


def test_late_on_sent_applies_due_timer_events_before_counting_bytes():
    rp = two_cuts()
    rp.on_sent(1000, 3.8)
    # first the timer: T=1 at 1.75 FR (Rc (50+25)/2 = 37.5), T=2 at 2.75 FR
    # (Rc (50+37.5)/2 = 43.75), T=3 at 3.75: max 3 > F=2, min 0 -> AI (Rt 60,
    # Rc (60+43.75)/2 = 51.875); then the byte event BC=1: max 3, min 1 -> AI:
    # Rt 70, Rc (70+51.875)/2 = 60.9375
    # (bytes first would give BC=1 FR 37.5, T=1 FR 43.75, T=2 FR (50+43.75)/2 = 46.875,
    #  T=3 AI: Rt 60, Rc (60+46.875)/2 = 53.4375)
    assert_rates(rp, 70.0, 60.9375)
    assert rp.t_count == 3 and rp.bc_count == 1


def test_late_cnp_applies_due_timer_events_before_the_cut():
    rp = two_cuts()
    rp.on_cnp(2.0)
    # at 1.75: alpha 1 -> 0.5 and T=1 FR: Rc = 37.5; then the CNP:
    # Rt = 37.5, alpha = 0.25 + 0.5 = 0.75, Rc = 37.5*(1-0.375) = 23.4375
    assert rp.alpha == approx(0.75)
    assert_rates(rp, 37.5, 23.4375)
    assert rp.t_count == 0


@pytest.mark.parametrize("source", ["timer", "bytes"])
def test_paper_exactly_f_fast_recovery_events_then_additive(source):
    """F = 2: events 1 and 2 of either counter are fast recovery, event 3 is additive."""
    rp = two_cuts()                         # Rt = 50, Rc = 25, first timer event at 1.75
    expected = [
        (50.0, 37.5),       # event 1: count 1 <= F: FR, Rc = (50+25)/2
        (50.0, 43.75),      # event 2: count 2 <= F: FR, Rc = (50+37.5)/2
        (60.0, 51.875),     # event 3: count 3 > F, other counter 0: AI, Rt 60, Rc (60+43.75)/2
        (70.0, 60.9375),    # event 4: AI (never hyper with one counter), Rc (70+51.875)/2
    ]
    for n, (rt, rc) in enumerate(expected, start=1):
        if source == "timer":
            rp.advance(0.75 + n)            # deadlines 1.75, 2.75, 3.75, 4.75
        else:
            rp.on_sent(1000, 1.0)           # one B per call, before the first timer deadline
        assert_rates(rp, rt, rc)
        assert (rp.t_count, rp.bc_count) == ((n, 0) if source == "timer" else (0, n))


def test_paper_default_params_five_fast_recovery_events_then_additive():
    """DcqcnPaper.defaults at a custom dilation of 10^6: line rate 10 Gb/s -> 10^4,
    Rmin 100, R_AI 40, R_HAI 200, T = K = 55 µs -> 55 s, B = 10 MiB, g = 1/256, F = 5."""
    p = DcqcnPaper.defaults(10e9).scaled(Scale(1e6))
    assert p.fast_recovery_steps == 5
    assert (p.line_rate_bps, p.min_rate_bps, p.rai_bps) == (1e4, 100.0, 40.0)
    rp = DcqcnPaper(p, 0.0)
    rp.on_cnp(0.0)      # alpha = (255/256)*1 + 1/256 = 1; Rt = 10000, Rc = 10000*(1-1/2) = 5000
    rp.on_cnp(1.0)      # no decay before 55: alpha = 1; Rt = 5000, Rc = 2500
    assert rp.alpha == 1.0
    assert_rates(rp, 5000.0, 2500.0)
    # increase events only from the timer, at 1 + 55k (no bytes sent, so BC = 0, never hyper);
    # each fast recovery halves the gap Rt - Rc = 2500: 1250, 625, 312.5, 156.25, 78.125
    expected = [
        (5000.0, 3750.0),       # T=1 FR
        (5000.0, 4375.0),       # T=2 FR
        (5000.0, 4687.5),       # T=3 FR
        (5000.0, 4843.75),      # T=4 FR
        (5000.0, 4921.875),     # T=5 FR (the fifth, = F)
        (5040.0, 4980.9375),    # T=6 AI: Rt 5000+40, Rc = (5040+4921.875)/2
        (5080.0, 5030.46875),   # T=7 AI: Rt 5080, Rc = (5080+4980.9375)/2
    ]
    for k, (rt, rc) in enumerate(expected, start=1):
        rp.advance(55.0 * k + 10.0)         # past 1 + 55k, before 1 + 55(k+1)
        assert rp.t_count == k
        assert_rates(rp, rt, rc)


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
