"""A fabric as the flow-level model sees it: nodes, directed links with a capacity, and per
switch and destination host the equal-cost next hops the kernel routes give.

Nodes are named as the emulated fabric names them (``topologies.wiring``): hosts ``h0``..,
switches ``leaf<t>``, ``spine<g>``, ``core<c>``. Every cable is two directed links (an
egress port each way), each with its own capacity in bit/s of wire bytes (what the
ports' HTB shapers count). Next hops come from the very route tables the emulator
installs (``topologies.wiring.leaf_routes`` / ``spine_routes`` / ``core_routes``): the
next-hop IPs are mapped back to the neighbours that own them, so ``ecmp`` (a leaf reaches
other leaves' hosts over all spines of its pod), ``static`` (host i of any leaf over spine
i mod S), spine routes (own pod's leaf directly, other pods over every core) and core
routes (every spine of the destination's pod) are the kernel's, not a re-statement.

What a route choice does with a down link is Linux's (``ignore_routes_with_linkdown`` on
every switch, hash-threshold multipath, ``fib_rebalance``): the dead next hop is skipped
and a flow's hash ``u`` in [0, 1) picks ``alive[floor(u * len(alive))]``, so a flow that
used the dead hop moves, and so may a few others (the hash space is re-divided). A switch
with no live next hop towards a destination drops the flow's packets (a black hole; no
routing protocol repairs it). See :meth:`LinkGraph.route`.

Pure: no clock, no randomness (the caller's ``pick`` makes the choice).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from topologies import wiring

Link = tuple[str, str]


class LinkGraph:
    """A fabric as a graph, for the model and the simulator (the fabric built in Mininet
    is ``emulator.launch.fabric.LiveFabric``): hosts, switches, directed links ``(a, b)``
    with ``capacity_bps[(a, b)]``, and ``next_hops[switch][dst_host]``: the equal-cost
    neighbours in kernel route order.
    Treat it as immutable; :meth:`with_rates` and :meth:`imbalanced` return new ones."""

    def __init__(self, hosts: Iterable[str], host_ips: Mapping[str, str],
                 host_leaf: Mapping[str, str], capacity_bps: Mapping[Link, float],
                 next_hops: Mapping[str, Mapping[str, tuple[str, ...]]], routing: str,
                 rate_bps: float):
        self.hosts = tuple(hosts)
        self.host_ips = dict(host_ips)
        self.ip_host = {ip: h for h, ip in self.host_ips.items()}
        self.host_leaf = dict(host_leaf)
        self.capacity_bps = dict(capacity_bps)
        self.next_hops = next_hops
        self.routing = routing
        self.rate_bps = rate_bps               # the nominal (host) link rate
        self.links = tuple(self.capacity_bps)  # link id i is self.links[i]
        self.link_id = {ln: i for i, ln in enumerate(self.links)}
        self.switches = tuple(next_hops)

    def with_rates(self, rates_bps: Mapping[Link, float]) -> "LinkGraph":
        """A copy with some directed links at other rates (a slower hop)."""
        unknown = set(rates_bps) - set(self.capacity_bps)
        if unknown:
            raise ValueError(f"no such links: {sorted(unknown)}")
        if any(not r > 0 for r in rates_bps.values()):
            raise ValueError(f"link rates must be > 0, got {dict(rates_bps)}")
        return LinkGraph(self.hosts, self.host_ips, self.host_leaf,
                         {**self.capacity_bps, **rates_bps}, self.next_hops, self.routing,
                         self.rate_bps)

    def imbalanced(self, switch: str, toward: str, ratio: float) -> "LinkGraph":
        """The ``imbalance`` perturbation: the hop ``switch`` -> ``toward`` at its rate /
        ``ratio`` (one direction, as the emulator slows one egress port)."""
        if ratio < 1:
            raise ValueError(f"ratio must be >= 1 (a slower hop), got {ratio}")
        link = (switch, toward)
        if link not in self.capacity_bps:
            raise ValueError(f"{switch} has no link to {toward}")
        return self.with_rates({link: self.capacity_bps[link] / ratio})

    def host(self, name_or_ip: str) -> str:
        """A host's name from its name or its IP address."""
        if name_or_ip in self.host_leaf:
            return name_or_ip
        try:
            return self.ip_host[name_or_ip]
        except KeyError:
            raise ValueError(f"unknown host {name_or_ip!r}") from None

    def route(self, src: str, dst: str, pick: Callable[[str, tuple[str, ...]], str],
              down: frozenset | set = frozenset()) -> tuple[str, ...] | None:
        """The node path src .. dst, ``pick(switch, alive_hops)`` choosing among the live
        equal-cost next hops at every switch; None where the flow is black-holed (a link on
        the way is down and the switch before it has no live alternative). ``down``: the
        cables that are down, as ``frozenset({a, b})``."""
        if src == dst:
            raise ValueError(f"a flow from {src} to itself")
        node = self.host_leaf[src]
        if down and frozenset((src, node)) in down:
            return None
        path = [src, node]
        while node != dst:
            hops = self.next_hops[node].get(dst)
            if hops is None:
                raise ValueError(f"{node} has no route to {dst}")
            if down:
                hops = tuple(h for h in hops if frozenset((node, h)) not in down)
                if not hops:
                    return None
            node = hops[0] if len(hops) == 1 else pick(node, hops)
            path.append(node)
            if len(path) > 16:
                raise RuntimeError(f"routing loop from {src} to {dst}: {path}")
        return tuple(path)

    def check_path(self, path: Iterable[str], src: str, dst: str) -> tuple[str, ...]:
        """``path`` as a tuple, checked to run over links of this fabric from src to dst."""
        path = tuple(path)
        if len(path) < 2 or path[0] != src or path[-1] != dst:
            raise ValueError(f"path {path} does not run from {src} to {dst}")
        bad = [ln for ln in zip(path, path[1:]) if ln not in self.capacity_bps]
        if bad:
            raise ValueError(f"path {path} uses links the fabric does not have: {bad}")
        return path


def leaf_spine(leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4, *,
               rate_bps: float, routing: str = "ecmp", pods: int = 1, cores: int = 0,
               oversubscription: float = 1.0) -> LinkGraph:
    """The emulator's leaf-spine (``topologies.leafspine.LeafSpineTopo``): ``leaves`` and
    ``spines`` per pod, ``cores`` joining the pods, spine-core links at the rate that makes
    a spine ``oversubscription``:1 (``topologies.wiring.core_rate_bps``)."""
    wiring.check_shape(leaves, spines, hosts_per_leaf, routing)
    wiring.check_pods(pods, cores, leaves, spines, routing, oversubscription)
    n_leaves, n_spines = leaves * pods, spines * pods
    core_rate = wiring.core_rate_bps(rate_bps, leaves, cores, oversubscription) if cores \
        else rate_bps
    cap: dict[Link, float] = {}
    hosts, ips, host_leaf = [], {}, {}
    owner: dict[str, str] = {}                 # next-hop IP -> the node that has it
    leaf_names = [wiring.leaf_name(t) for t in range(n_leaves)]
    spine_names = [wiring.spine_name(g) for g in range(n_spines)]
    core_names = [wiring.core_name(c) for c in range(cores)]
    for t, leaf in enumerate(leaf_names):
        for i in range(hosts_per_leaf):
            h = wiring.host_name(t, i, hosts_per_leaf)
            hosts.append(h)
            ips[h] = wiring.host_ip(t, i)
            host_leaf[h] = leaf
            cap[(h, leaf)] = cap[(leaf, h)] = rate_bps
        pod = t // leaves
        for g in range(pod * spines, (pod + 1) * spines):
            cap[(leaf, spine_names[g])] = cap[(spine_names[g], leaf)] = rate_bps
            owner[wiring.spine_downlink_ip(t, g)] = spine_names[g]
            owner[wiring.leaf_uplink_ip(t, g)] = leaf
    for g, spine in enumerate(spine_names):
        for c, core in enumerate(core_names):
            cap[(spine, core)] = cap[(core, spine)] = core_rate
            owner[wiring.core_downlink_ip(g, c)] = core
            owner[wiring.spine_uplink_ip(g, c)] = spine
    tables = {}
    for t, leaf in enumerate(leaf_names):
        tables[leaf] = wiring.leaf_routes(t, leaves, spines, hosts_per_leaf, routing, pods)
    for g, spine in enumerate(spine_names):
        tables[spine] = wiring.spine_routes(g, leaves, spines, pods, cores)
    for c, core in enumerate(core_names):
        tables[core] = wiring.core_routes(c, leaves, spines, pods)
    next_hops = {}
    for switch, routes in tables.items():
        by_prefix = {prefix: tuple(owner[ip] for ip in nhs) for prefix, nhs in routes}
        table = {}
        for h in hosts:
            if host_leaf[h] == switch:
                table[h] = (h,)                  # connected: the leaf's own hosts
                continue
            _, t, i, _ = ips[h].split(".")
            # The plan's only prefixes: 10.t.i.0/24 (static) and 10.t.0.0/16; longest first.
            hops = by_prefix.get(f"10.{t}.{i}.0/24") or by_prefix.get(f"10.{t}.0.0/16")
            if hops:
                table[h] = hops
        next_hops[switch] = table
    return LinkGraph(hosts, ips, host_leaf, cap, next_hops, routing, rate_bps)


def dumbbell(hosts: int = 3, *, rate_bps: float) -> LinkGraph:
    """``topologies.dumbbell``: ``hosts`` hosts on one switch ``leaf0`` (10.0.i.2)."""
    return leaf_spine(1, 0, hosts, rate_bps=rate_bps, routing="ecmp")


def from_topology(topo, rate_bps: float) -> LinkGraph:
    """The fabric of an ``emulator.spec.schema.TopologySpec`` (``rate_bps``: the emulated link
    rate the run uses, e.g. ``emulator.plan.compile(...).link_rate_bps``)."""
    if topo.kind == "dumbbell":
        return dumbbell(topo.hosts, rate_bps=rate_bps)
    return leaf_spine(topo.leaves, topo.spines, topo.hosts_per_leaf, rate_bps=rate_bps,
                      routing=topo.routing, pods=topo.pods, cores=topo.cores,
                      oversubscription=topo.oversubscription)


def of_plan(f) -> LinkGraph:
    """The graph of a run plan's fabric (``plan.FabricPlan``): its shape, routing and
    rates, with the slower hops an imbalance perturbation gives."""
    if f.kind == "dumbbell":
        fab = dumbbell(f.hosts_per_leaf, rate_bps=f.rate_bps)
    else:
        fab = leaf_spine(f.leaves, f.spines, f.hosts_per_leaf, rate_bps=f.rate_bps,
                         routing=f.routing, pods=f.pods, cores=f.cores,
                         oversubscription=f.oversubscription)
    if f.slow_hops:
        fab = fab.with_rates({(sw, toward): rate for sw, toward, rate in f.slow_hops})
    return fab
