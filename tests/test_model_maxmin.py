"""emulator.model.maxmin: progressive filling, caps and strict priority on hand-solved
networks. Pure."""

import random

import pytest

from emulator.model.maxmin import INF, max_min_rates


def test_one_flow_gets_its_narrowest_link():
    assert max_min_rates([["a", "b"]], {"a": 10.0, "b": 4.0}) == [4.0]


def test_two_flows_on_one_link_get_half_each():
    assert max_min_rates([["l"], ["l"]], {"l": 10.0}) == [5.0, 5.0]


def test_three_link_parking_lot():
    # The long flow 0 crosses links 1, 2, 3 (capacities 1, 2, 3); flow i crosses link i
    # alone. Link 1 is the long flow's bottleneck (1/2 each); the short flows of links 2
    # and 3 take the rest of theirs.
    cap = {1: 1.0, 2: 2.0, 3: 3.0}
    rates = max_min_rates([[1, 2, 3], [1], [2], [3]], cap)
    assert rates == pytest.approx([0.5, 0.5, 1.5, 2.5], rel=1e-12)


def test_equal_parking_lot_gives_everyone_half():
    rates = max_min_rates([[1, 2, 3], [1], [2], [3]], {1: 1.0, 2: 1.0, 3: 1.0})
    assert rates == [0.5, 0.5, 0.5, 0.5]


def test_identical_flows_get_exactly_capacity_over_n():
    # lockstep exactness: no rounding between identical bottlenecks
    cap = {i: 10e9 for i in range(8)}
    rates = max_min_rates([[i, (i + 1) % 8] for i in range(8)], cap)
    assert rates == [5e9] * 8


def test_a_cap_freezes_a_flow_and_the_rest_share_what_is_left():
    rates = max_min_rates([["l"], ["l"], ["l"]], {"l": 9.0}, caps_bps=[1.0, INF, INF])
    assert rates == pytest.approx([1.0, 4.0, 4.0], rel=1e-12)


def test_a_cap_above_the_fair_share_does_not_bind():
    assert max_min_rates([["l"], ["l"]], {"l": 4.0}, caps_bps=[3.0, INF]) == [2.0, 2.0]


def test_strict_priority_on_one_link():
    cap = {"l": 10.0}
    assert max_min_rates([["l"], ["l"]], cap, levels=[0, 1]) == [10.0, 0.0]
    # the high flow is capped: the low one gets the rest
    assert max_min_rates([["l"], ["l"], ["l"]], cap, caps_bps=[2.0, INF, INF],
                         levels=[0, 1, 1]) == pytest.approx([2.0, 4.0, 4.0])


def test_strict_priority_over_two_links():
    # high flow h on a (cap 10) and b (cap 4): it gets 4; the low flow on a gets 6
    rates = max_min_rates([["a", "b"], ["a"]], {"a": 10.0, "b": 4.0}, levels=[0, 1])
    assert rates == pytest.approx([4.0, 6.0])


def test_per_hop_levels_when_a_flow_is_high_at_one_port_and_low_at_the_next():
    # f crosses A (high there) then B (low there); g is high at B; h is low at A.
    # B: g takes 7 of 10, f gets 3; A: f uses 3 of 10, h gets the other 7.
    cap = {"A": 10.0, "B": 10.0, "g_only": 7.0}
    paths = [["A", "B"], ["B", "g_only"], ["A"]]
    levels = [[0, 1], [0, 0], [1]]
    stats = {}
    rates = max_min_rates(paths, cap, levels=levels, stats=stats)
    assert rates == pytest.approx([3.0, 7.0, 7.0], rel=1e-12)
    assert stats["unconverged"] == 0


def test_per_hop_levels_that_are_uniform_agree_with_per_flow_levels():
    rnd = random.Random(3)
    links = list(range(6))
    cap = {ln: rnd.uniform(1, 10) for ln in links}
    paths = [rnd.sample(links, rnd.randint(1, 3)) for _ in range(9)]
    levels = [rnd.randint(0, 2) for _ in paths]
    per_flow = max_min_rates(paths, cap, levels=levels)
    per_hop = max_min_rates(paths, cap, levels=[[v] * len(p) for p, v in zip(paths, levels)])
    assert per_hop == pytest.approx(per_flow, rel=1e-9)


def test_a_priority_cycle_still_gives_a_feasible_allocation():
    # f: low at B, high at C; g: high at B, low at C. Any split f + g = 10 is a fixed
    # point; the result must fill both links and exceed neither.
    cap = {"B": 10.0, "C": 10.0}
    rates = max_min_rates([["B", "C"], ["B", "C"]], cap, levels=[[1, 0], [0, 1]])
    assert sum(rates) == pytest.approx(10.0, rel=1e-9)
    assert all(r >= 0 for r in rates)


def test_random_allocations_are_feasible_and_max_min():
    """Feasible, and every flow has a bottleneck: a full link on which no flow gets
    more than it (the max-min characterization)."""
    rnd = random.Random(7)
    for _ in range(50):
        links = list(range(rnd.randint(1, 6)))
        cap = {ln: rnd.uniform(1, 10) for ln in links}
        paths = [rnd.sample(links, rnd.randint(1, len(links))) for _ in range(rnd.randint(1, 8))]
        rates = max_min_rates(paths, cap)
        load = {ln: sum(r for r, p in zip(rates, paths) if ln in p) for ln in links}
        assert all(load[ln] <= cap[ln] * (1 + 1e-9) for ln in links)
        for i, p in enumerate(paths):
            assert any(load[ln] >= cap[ln] * (1 - 1e-9)
                       and all(rates[j] <= rates[i] * (1 + 1e-9)
                               for j, q in enumerate(paths) if ln in q)
                       for ln in p)


def test_a_high_flow_starves_its_low_neighbour_through_a_shared_nic():
    # a and b leave one host (its link H: no priority, equal share); at port P, a is high,
    # b and c are low. As a grows b and c lose P, so a ends up with all of H: [c, 0, 0].
    cap = {"H": 10.0, "P": 10.0, "G": 10.0}
    stats = {}
    rates = max_min_rates([["H", "P"], ["H", "P"], ["G", "P"]], cap,
                          levels=[[2, 1], [2, 2], [2, 2]], stats=stats)
    assert rates == pytest.approx([10.0, 0.0, 0.0], abs=1e-6)
    assert stats["unconverged"] == 0


def test_a_capacity_that_is_not_a_number_is_refused():
    # NaN compares false with every share: it used to give every flow an infinite rate
    with pytest.raises(ValueError, match=r"capacity of link 'a' is nan: must be a number >= 0"):
        max_min_rates([["a"], ["b"]], {"a": float("nan"), "b": 1.0})


def test_a_filling_that_fixes_no_flow_raises_instead_of_looping_for_ever(monkeypatch):
    # a broken share (here: the tie tolerance below zero, so no link ever reaches it)
    # used to spin for ever and hang the suite; the filling must say so
    from emulator.model import maxmin
    monkeypatch.setattr(maxmin, "TIE", -0.5)
    with pytest.raises(ArithmeticError, match=r"max-min filling stuck: share 5\.0 fixes none "
                                              r"of 2 flows"):
        max_min_rates([["l"], ["l"]], {"l": 10.0})
