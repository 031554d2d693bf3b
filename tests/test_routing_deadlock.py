"""PFC's deadlock check (emulator/routing/deadlock.py): a ring of switches routing two
hops clockwise holds the classic cycle of links that pause each other; the leaf-spine's
up-down routes hold none, with every cable up or any one of them cut."""

import itertools

from emulator.routing import deadlock
from emulator.routing.graph import LinkGraph, leaf_spine


def ring() -> LinkGraph:
    """s0, s1, s2 in a ring, host hi on si; everything goes clockwise (s0 > s1 > s2 > s0)."""
    hosts = ("h0", "h1", "h2")
    sw = ("s0", "s1", "s2")
    links = {}
    for i in range(3):
        links[(hosts[i], sw[i])] = links[(sw[i], hosts[i])] = 1e9
        links[(sw[i], sw[(i + 1) % 3])] = 1e9
    hops = {sw[i]: {hosts[j]: (hosts[j],) if j == i else (sw[(i + 1) % 3],)
                    for j in range(3)} for i in range(3)}
    return LinkGraph(hosts, {h: f"10.0.{i}.2" for i, h in enumerate(hosts)},
                     dict(zip(hosts, sw)), links, hops, "static", 1e9)


def test_a_ring_routed_two_hops_clockwise_can_deadlock():
    loop = deadlock.cycle(deadlock.dependencies(ring()))
    assert loop is not None and set(loop) == {("s0", "s1"), ("s1", "s2"), ("s2", "s0")}


def test_cutting_the_ring_leaves_no_cycle():
    assert deadlock.cycle(deadlock.dependencies(ring(), [frozenset(("s1", "s2"))])) is None


def test_leaf_spine_routes_go_up_then_down_whatever_cable_is_down():
    for routing in ("ecmp", "static"):
        fab = leaf_spine(4, 4, 4, rate_bps=1e9, routing=routing)
        cables = {frozenset(link) for link in fab.links}
        assert deadlock.cycle(deadlock.dependencies(fab)) is None
        for cut in itertools.islice(sorted(cables, key=sorted), 0, None, 3):
            assert deadlock.cycle(deadlock.dependencies(fab, [cut])) is None, (routing, cut)
        deps = deadlock.dependencies(fab)
        assert ("h0", "leaf0") in deps and ("leaf0", "spine0") in deps[("h0", "leaf0")]
