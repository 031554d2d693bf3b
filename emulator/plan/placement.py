"""Placing a fabric on several servers (docs/distributed.md): the first, pure piece of
running past one machine.

Whole pods go to one server each (round robin when there are more pods than servers),
core switches are spread over the servers, so only spine-core links cross machines —
the oversubscribed links, which carry the least traffic. ``plan()`` returns where every
node goes and what crosses: the cut links and their emulated rate per pair of servers,
which the servers' network must carry, and the hosts per server, which must stay within
what one server emulates faithfully (``benchmarks/scale.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from cluster.placement import server_of_nodes
from emulator.spec.schema import TopologySpec
from topologies.wiring import neighbors, switch_names


@dataclass(frozen=True)
class Placement:
    server_of: dict            # node name -> server index
    cut_links: tuple           # (node a, node b) pairs on different servers
    cut_rate_bps: dict         # (server i, server j), i < j -> emulated bit/s each way
    hosts_per_server: tuple


def plan(topo: TopologySpec, servers: int, link_rate_bps: float) -> Placement:
    """Pods to servers, cores spread; raises ValueError naming what does not fit."""
    if topo.kind != "leafspine":
        raise ValueError(f"only leaf-spine fabrics are placed on servers, not {topo.kind!r}")
    server_of = server_of_nodes(topo.leaves, topo.spines, topo.hosts_per_leaf, topo.pods,
                                topo.cores, servers)
    core_rate = (link_rate_bps * topo.leaves / (topo.cores * topo.oversubscription)
                 if topo.cores else link_rate_bps)
    cut, rate = [], defaultdict(float)
    for sw in switch_names(topo):
        for n in neighbors(topo, sw):
            a, b = server_of[sw], server_of[n]
            if a != b and (n.startswith("h") or sw < n):
                cut.append((sw, n))
                link = core_rate if "core" in (sw[:4], n[:4]) else link_rate_bps
                rate[(min(a, b), max(a, b))] += link
    hosts = [0] * servers
    for node, s in server_of.items():
        if node.startswith("h"):
            hosts[s] += 1
    return Placement(server_of, tuple(sorted(cut)), dict(rate), tuple(hosts))
