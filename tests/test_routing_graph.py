"""emulator.routing.graph: the link graph and the kernel's routes, as the model sees them.
Pure (the route tables come from topologies.fabric, nothing is set up)."""

import pytest

from emulator.routing.graph import dumbbell, from_topology, leaf_spine
from emulator.spec.schema import TopologySpec
from topologies import wiring

R = 8e6


def first(switch, hops):
    return hops[0]


def test_dumbbell_is_one_switch_with_a_link_each_way_per_host():
    fab = dumbbell(3, rate_bps=R)
    assert fab.hosts == ("h0", "h1", "h2")
    assert fab.switches == ("leaf0",)
    assert fab.host_ips == {"h0": "10.0.0.2", "h1": "10.0.1.2", "h2": "10.0.2.2"}
    assert set(fab.capacity_bps) == {(h, "leaf0") for h in fab.hosts} | \
        {("leaf0", h) for h in fab.hosts}
    assert fab.route("h0", "h2", first) == ("h0", "leaf0", "h2")


def test_ecmp_leaf_reaches_other_leaves_over_every_spine_of_its_pod():
    fab = leaf_spine(4, 4, 4, rate_bps=R, routing="ecmp")
    assert fab.next_hops["leaf0"]["h5"] == ("spine0", "spine1", "spine2", "spine3")
    assert fab.next_hops["leaf0"]["h1"] == ("h1",)
    assert fab.next_hops["spine2"]["h5"] == ("leaf1",)
    assert fab.host_ips["h5"] == wiring.host_ip(1, 1)


def test_static_routing_sends_host_i_of_any_leaf_over_spine_i_mod_s():
    fab = leaf_spine(4, 2, 4, rate_bps=R, routing="static")
    for dst, spine in (("h4", "spine0"), ("h5", "spine1"), ("h6", "spine0"), ("h7", "spine1")):
        assert fab.next_hops["leaf0"][dst] == (spine,)
        assert fab.route("h0", dst, first) == ("h0", "leaf0", spine, "leaf1", dst)


def test_multipod_paths_cross_a_core_at_the_oversubscribed_rate():
    fab = leaf_spine(2, 2, 2, rate_bps=R, routing="ecmp", pods=2, cores=2, oversubscription=2)
    core_rate = wiring.core_rate_bps(R, 2, 2, 2)
    assert core_rate == R / 2
    assert fab.capacity_bps[("spine0", "core1")] == fab.capacity_bps[("core1", "spine3")] \
        == core_rate
    assert fab.next_hops["leaf0"]["h4"] == ("spine0", "spine1")     # h4: pod 1's leaf2
    assert fab.next_hops["spine0"]["h4"] == ("core0", "core1")
    assert fab.next_hops["core0"]["h4"] == ("spine2", "spine3")
    assert fab.next_hops["spine0"]["h2"] == ("leaf1",)               # own pod: direct
    path = fab.route("h0", "h4", first)
    assert path == ("h0", "leaf0", "spine0", "core0", "spine2", "leaf2", "h4")


def test_a_down_link_is_skipped_as_linux_hash_threshold_would():
    fab = leaf_spine(2, 4, 1, rate_bps=R, routing="ecmp")
    offered = []

    def pick(switch, hops):
        offered.append(hops)
        return hops[int(0.6 * len(hops))]          # a flow whose hash is u = 0.6
    assert fab.route("h0", "h1", pick) == ("h0", "leaf0", "spine2", "leaf1", "h1")
    down = {frozenset(("leaf0", "spine2"))}
    # alive: spine0, spine1, spine3 -> floor(0.6 * 3) = 1 -> spine1
    assert fab.route("h0", "h1", pick, down) == ("h0", "leaf0", "spine1", "leaf1", "h1")
    assert offered[-1] == ("spine0", "spine1", "spine3")


def test_no_live_next_hop_is_a_black_hole():
    fab = leaf_spine(2, 2, 1, rate_bps=R, routing="ecmp")
    down = {frozenset(("spine0", "leaf1"))}
    # leaf0 cannot see that spine0 lost leaf1: a flow hashed to spine0 is dropped there
    assert fab.route("h0", "h1", first, down) is None
    assert fab.route("h0", "h1", lambda s, hops: hops[-1], down) == \
        ("h0", "leaf0", "spine1", "leaf1", "h1")
    assert fab.route("h0", "h1", first, {frozenset(("h0", "leaf0"))}) is None


def test_imbalance_slows_one_direction_of_one_hop():
    fab = leaf_spine(2, 2, 2, rate_bps=R)
    slow = fab.imbalanced("leaf0", "spine1", 1.25)
    assert slow.capacity_bps[("leaf0", "spine1")] == R / 1.25
    assert slow.capacity_bps[("spine1", "leaf0")] == R
    assert fab.capacity_bps[("leaf0", "spine1")] == R          # the original is untouched
    with pytest.raises(ValueError):
        fab.imbalanced("leaf0", "h3", 2)                       # h3 is on leaf1
    with pytest.raises(ValueError):
        fab.imbalanced("leaf0", "spine1", 0.5)


def test_from_topology_spec_matches_the_constructors():
    spec = TopologySpec(kind="leafspine", leaves=2, spines=2, hosts_per_leaf=3,
                        routing="static")
    fab = from_topology(spec, R)
    assert fab.hosts == tuple(spec.host_names)
    assert fab.next_hops == leaf_spine(2, 2, 3, rate_bps=R, routing="static").next_hops
    dumb = from_topology(TopologySpec(kind="dumbbell", hosts=4), R)
    assert dumb.hosts == ("h0", "h1", "h2", "h3") and dumb.switches == ("leaf0",)


def test_given_paths_are_checked():
    fab = leaf_spine(2, 2, 1, rate_bps=R)
    good = ("h0", "leaf0", "spine1", "leaf1", "h1")
    assert fab.check_path(list(good), "h0", "h1") == good
    with pytest.raises(ValueError):
        fab.check_path(("h0", "spine1", "leaf1", "h1"), "h0", "h1")
    with pytest.raises(ValueError):
        fab.check_path(good, "h1", "h0")
    assert fab.host("10.1.0.2") == "h1" and fab.host("h1") == "h1"
