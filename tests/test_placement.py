"""emulator.plan.placement: whole pods per server, only spine-core links cut."""

import pytest

from emulator.plan.placement import plan
from emulator.spec.schema import TopologySpec

RATE = 5e6


def topo(**kw):
    base = dict(kind="leafspine", pods=2, leaves=2, spines=2, hosts_per_leaf=2, cores=2,
                oversubscription=2.0)
    return TopologySpec(**{**base, **kw})


def test_pods_stay_whole_and_only_spine_core_links_cross():
    p = plan(topo(), 2, RATE)
    assert {n: s for n, s in p.server_of.items() if n.startswith(("h", "leaf", "spine"))} == {
        "h0": 0, "h1": 0, "h2": 0, "h3": 0, "leaf0": 0, "leaf1": 0, "spine0": 0, "spine1": 0,
        "h4": 1, "h5": 1, "h6": 1, "h7": 1, "leaf2": 1, "leaf3": 1, "spine2": 1, "spine3": 1}
    assert p.server_of["core0"] == 0 and p.server_of["core1"] == 1
    # spine0, spine1 (server 0) to core1 (server 1); spine2, spine3 to core0.
    assert p.cut_links == (("core0", "spine2"), ("core0", "spine3"), ("core1", "spine0"),
                           ("core1", "spine1"))
    # Core links at 2 leaves x 5 Mb/s / (2 cores x 2:1) = 2.5 Mb/s each.
    assert p.cut_rate_bps == {(0, 1): pytest.approx(4 * 2.5e6)}
    assert p.hosts_per_server == (4, 4)


def test_one_server_cuts_nothing():
    p = plan(topo(), 1, RATE)
    assert p.cut_links == () and p.cut_rate_bps == {} and p.hosts_per_server == (8,)


def test_more_pods_than_servers_go_round_robin():
    p = plan(topo(pods=3), 2, RATE)
    assert p.hosts_per_server == (8, 4)
    assert p.server_of["leaf4"] == 0 and p.server_of["spine5"] == 0


@pytest.mark.parametrize("kw, servers, message", [
    ({}, 3, "3 servers but 2 pod"),
    ({}, 0, "servers must be >= 1"),
    ({"kind": "dumbbell", "pods": 1, "cores": 0}, 1, "only leaf-spine"),
])
def test_what_cannot_be_placed_is_named(kw, servers, message):
    with pytest.raises(ValueError, match=message):
        plan(topo(**kw), servers, RATE)
