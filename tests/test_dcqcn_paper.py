"""Tests for hosts/cc/dcqcn.py's paper variant (DcqcnPaper, Zhu et al. SIGCOMM 2015)."""

import pytest

from hosts.cc.dcqcn import DcqcnPaper
from runtime.scale import Scale
from tests.dcqcn_util import P, approx, assert_rates


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


# --- paper variant -------------------------------------------------------------------


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
