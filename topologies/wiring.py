"""The fabric's wiring, pure: node names, the address plan, ports, routes, the shape
checks and the shaping commands of every port (``topologies.fabric`` applies them to
Mininet nodes; the spec, the plan, the model and the analysis read them).

Addressing plan (leaf t, host i on it, spine s, core c; leaves and spines numbered
across pods: pod p has leaves p*L .. p*L+L-1 and spines p*S .. p*S+S-1):

    host      10.t.i.2/24, gateway 10.t.i.1 (the leaf's port)
    leaf<->spine  10.(128+s).t.1/24 on the leaf, .2 on the spine (same pod only)
    spine<->core  172.(16+c).s.1/24 on the spine, .2 on the core (multi-pod)

Routing: leaves reach other leaves' hosts (10.t'.0.0/16) over all spines of their pod as
one multipath route (``ecmp``), or host i of any leaf over spine ``i mod S`` (``static``:
ring/channel r, made of host r of every leaf, rides spine r mod S; one pod only). Spines
route 10.t.0.0/16 to leaf t of their pod, and other pods' leaves over all cores
(multipath); a core routes leaf t over all spines of t's pod (multipath). Spine-core
links run at ``core_rate_bps``: the pod's oversubscription is a spine's downlink capacity
over its uplink capacity, L x rate / (C x core rate) (the paper's Table 1: 2 or 4 cores).
"""

from __future__ import annotations

import os
import zlib

from runtime.codec import check, finite
from runtime.scale import DEFAULT as DEFAULT_SCALE, PAPER_LINK_RATE_BPS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABRIC_MTU = 9000
L2_BURST_BYTES = 9100               # HTB burst: one jumbo frame, so shaping stays packet-accurate
DEFAULT_RATE_BPS = DEFAULT_SCALE.rate_bps(PAPER_LINK_RATE_BPS)
DEFAULT_BUFFER_BYTES = 512 * 1024   # per egress port
ROUTING_MODES = ("ecmp", "static")
MAX_LEAVES = 128
MAX_SPINES = 127
MAX_HOSTS_PER_LEAF = 254
MIN_OVERSUBSCRIPTION, MAX_OVERSUBSCRIPTION = 1e-3, 1e3   # spine downlink : uplink capacity


# --- the address plan -----------------------------------------------------------------

def host_ip(leaf: int, i: int) -> str:
    return f"10.{leaf}.{i}.2"


def host_gateway(leaf: int, i: int) -> str:
    return f"10.{leaf}.{i}.1"


def leaf_uplink_ip(leaf: int, spine: int) -> str:
    return f"10.{128 + spine}.{leaf}.1"


def spine_downlink_ip(leaf: int, spine: int) -> str:
    return f"10.{128 + spine}.{leaf}.2"


def spine_uplink_ip(spine: int, core: int) -> str:
    return f"172.{16 + core}.{spine}.1"


def core_downlink_ip(spine: int, core: int) -> str:
    return f"172.{16 + core}.{spine}.2"


def core_rate_bps(rate_bps: float, leaves_per_pod: int, cores: int,
                  oversubscription: float) -> float:
    """Spine-core link rate giving a spine ``oversubscription``:1 (downlinks : uplinks)."""
    return rate_bps * leaves_per_pod / (cores * oversubscription)


def host_name(leaf: int, i: int, hosts_per_leaf: int) -> str:
    return f"h{leaf * hosts_per_leaf + i}"


def leaf_name(leaf: int) -> str:
    return f"leaf{leaf}"


def spine_name(spine: int) -> str:
    return f"spine{spine}"


def core_name(core: int) -> str:
    return f"core{core}"


def leaf_port_to_host(leaf: int, i: int) -> str:
    """Interface of ``leaf`` towards its host ``i`` (ports are numbered in link order:
    hosts first, then spines)."""
    return f"{leaf_name(leaf)}-eth{i + 1}"


def leaf_port_to_spine(leaf: int, spine: int, hosts_per_leaf: int) -> str:
    """``spine``: its index within the leaf's pod."""
    return f"{leaf_name(leaf)}-eth{hosts_per_leaf + spine + 1}"


def spine_port_to_leaf(spine: int, leaf: int) -> str:
    """``leaf``: its index within the spine's pod."""
    return f"{spine_name(spine)}-eth{leaf + 1}"


def spine_port_to_core(spine: int, core: int, leaves_per_pod: int) -> str:
    return f"{spine_name(spine)}-eth{leaves_per_pod + core + 1}"


def core_port_to_spine(core: int, spine: int) -> str:
    return f"{core_name(core)}-eth{spine + 1}"


def port_toward(switch: str, neighbor: str, hosts_per_leaf: int, leaves_per_pod: int = 0,
                spines_per_pod: int = 0) -> str:
    """The interface of ``switch`` on its link to ``neighbor`` (a host, leaf, spine or
    core). ``leaves_per_pod`` / ``spines_per_pod``: 0 for a single pod."""
    big = 1 << 30
    lp, sp = leaves_per_pod or big, spines_per_pod or big
    if switch.startswith("spine") and neighbor.startswith("leaf"):
        g, t = int(switch[5:]), int(neighbor[4:])
        if t // lp == g // sp:
            return spine_port_to_leaf(g, t % lp)
    if switch.startswith("spine") and neighbor.startswith("core") and leaves_per_pod:
        return spine_port_to_core(int(switch[5:]), int(neighbor[4:]), leaves_per_pod)
    if switch.startswith("core") and neighbor.startswith("spine"):
        return core_port_to_spine(int(switch[4:]), int(neighbor[5:]))
    if switch.startswith("leaf"):
        t = int(switch[4:])
        if neighbor.startswith("spine"):
            g = int(neighbor[5:])
            if t // lp == g // sp:
                return leaf_port_to_spine(t, g % sp, hosts_per_leaf)
        if neighbor.startswith("h"):
            i = int(neighbor[1:]) - t * hosts_per_leaf
            if 0 <= i < hosts_per_leaf:
                return leaf_port_to_host(t, i)
    raise ValueError(f"{switch} has no link to {neighbor}")


def switch_names(topo) -> list[str]:
    """Every switch of a topology (a spec's ``TopologySpec`` or a plan's ``FabricPlan``)."""
    if topo.kind == "dumbbell":
        return ["leaf0"]
    return ([f"leaf{t}" for t in range(topo.leaves * topo.pods)]
            + [f"spine{s}" for s in range(topo.spines * topo.pods)]
            + [f"core{c}" for c in range(topo.cores)])


def neighbors(topo, switch: str) -> list[str]:
    """Nodes one link away from ``switch``."""
    if switch.startswith("core"):
        return [f"spine{g}" for g in range(topo.spines * topo.pods)]
    if switch.startswith("spine"):
        pod = int(switch[5:]) // topo.spines
        return ([f"leaf{t}" for t in range(pod * topo.leaves, (pod + 1) * topo.leaves)]
                + [f"core{c}" for c in range(topo.cores)])
    t = int(switch[4:])
    per = topo.per_leaf
    hosts = [f"h{t * per + i}" for i in range(per)]
    if topo.kind != "leafspine":
        return hosts
    pod = t // topo.leaves
    return hosts + [f"spine{g}" for g in range(pod * topo.spines, (pod + 1) * topo.spines)]


def kernel_hash_seed(switch: str, path_seed: int) -> int:
    """The kernel's multipath hash seed of ``switch`` (``net.ipv4.fib_multipath_hash_seed``,
    per namespace) for a fixed path draw: its own per switch, as HPCC's ns-3 seeds each
    switch's ECMP hash by its node id; never 0 (the kernel's "random")."""
    return zlib.crc32(f"{path_seed}/{switch}".encode()) or 1


def check_shape(leaves: int, spines: int, hosts_per_leaf: int, routing: str) -> None:
    """A leaf-spine's shape (per pod); raises ``ConfigError`` naming the field. The spec
    layer reuses this check (it names the spec key)."""
    check(1 <= leaves <= MAX_LEAVES, "leaves", leaves, f"must be in 1..{MAX_LEAVES}")
    check(0 <= spines <= MAX_SPINES, "spines", spines, f"must be in 0..{MAX_SPINES}")
    check(leaves == 1 or spines >= 1, "spines", spines,
          "more than one leaf needs at least one spine")
    check(1 <= hosts_per_leaf <= MAX_HOSTS_PER_LEAF, "hosts_per_leaf", hosts_per_leaf,
          f"must be in 1..{MAX_HOSTS_PER_LEAF}")
    check(routing in ROUTING_MODES, "routing", routing, f"allowed: {', '.join(ROUTING_MODES)}")


def check_pods(pods: int, cores: int, leaves: int, spines: int, routing: str,
               oversubscription: float) -> None:
    check(1 <= pods <= 16, "pods", pods, "must be in 1..16")
    check(pods * leaves <= MAX_LEAVES and pods * spines <= MAX_SPINES, "pods", pods,
          f"pods x leaves must be <= {MAX_LEAVES} and pods x spines <= {MAX_SPINES}")
    check(0 <= cores <= 32 and (pods == 1 or cores >= 1), "cores", cores,
          "must be in 0..32, and >= 1 with several pods (at least one core)")
    check(pods == 1 or spines >= 1, "spines", spines,
          "several pods need at least one spine per pod")
    check(pods == 1 or routing == "ecmp", "routing", routing,
          "several pods are routed with ecmp only")
    check(finite(oversubscription)
          and MIN_OVERSUBSCRIPTION <= oversubscription <= MAX_OVERSUBSCRIPTION,
          "oversubscription", oversubscription,
          f"must be > 0: in [{MIN_OVERSUBSCRIPTION:g}, {MAX_OVERSUBSCRIPTION:g}] "
          "(spine downlink : uplink capacity)")


def leaf_routes(leaf: int, leaves: int, spines: int, hosts_per_leaf: int,
                routing: str, pods: int = 1) -> list[tuple[str, list[str]]]:
    """(destination prefix, next hops) of one leaf towards the other leaves' hosts
    (``leaves``, ``spines``: per pod)."""
    routes = []
    pod_spines = range((leaf // leaves) * spines, (leaf // leaves + 1) * spines)
    for other in range(leaves * pods):
        if other == leaf:
            continue
        if routing == "ecmp":
            routes.append((f"10.{other}.0.0/16",
                           [spine_downlink_ip(leaf, s) for s in pod_spines]))
        else:
            for i in range(hosts_per_leaf):
                routes.append((f"10.{other}.{i}.0/24", [spine_downlink_ip(leaf, i % spines)]))
    return routes


def spine_routes(spine: int, leaves: int, spines: int = 1, pods: int = 1,
                 cores: int = 0) -> list[tuple[str, list[str]]]:
    """Own pod's leaves directly; other pods' leaves over every core."""
    pod = spine // spines
    routes = []
    for leaf in range(leaves * pods):
        if leaf // leaves == pod:
            routes.append((f"10.{leaf}.0.0/16", [leaf_uplink_ip(leaf, spine)]))
        else:
            routes.append((f"10.{leaf}.0.0/16",
                           [core_downlink_ip(spine, c) for c in range(cores)]))
    return routes


def core_routes(core: int, leaves: int, spines: int, pods: int) -> list[tuple[str, list[str]]]:
    """Leaf t over every spine of its pod."""
    return [(f"10.{leaf}.0.0/16",
             [spine_uplink_ip(g, core) for g in range((leaf // leaves) * spines,
                                                      (leaf // leaves + 1) * spines)])
            for leaf in range(leaves * pods)]


# --- shaping (one place for qdiscs) ----------------------------------------------------

from switch_agent.pipeline import PQ_HIGH_DSCP  # noqa: E402  (lagging flows' DSCP, pq)


PORT_QDISCS = ("fifo", "pq")  # one drop-tail FIFO | two strict-priority classes
PQ_LEAF_RATE_BPS = 8           # pq leaf classes' own rate: nothing; they borrow everything


def shape_commands(intf: str, rate_bps: float, buffer_bytes: int,
                   qdisc: str = "fifo") -> list[str]:
    """HTB at ``rate_bps`` with a bounded byte FIFO as its only leaf (drop-tail); with
    ``pq``, two leaf classes instead: prio 0 for packets to which the agent gave DSCP
    ``PQ_HIGH_DSCP`` (lagging flows; a u32 filter on the TOS byte), prio 1 for the rest,
    each with its own FIFO of ``buffer_bytes`` (strict priority, docs/architecture.md §5.4).

    The pq leaves get no rate of their own (8 bit/s; HTB stores their bucket as time, so
    it holds ~150 bytes) and an explicit quantum (only used between equal prios), so every
    byte they send is borrowed from the parent, which HTB hands to the lower prio first:
    the port is one token bucket (rate, ``L2_BURST_BYTES``) exactly like the FIFO port,
    and the agent's queue model is the same. (Giving the leaves real guarantees — 99 % and
    1 % — let each leaf spend tokens of its own besides the parent's; the fidelity monitor
    found the model 7-15 KB off the kernel's backlog on one port per pq run, because how
    much a busy period's start drained depended on which leaf had saved what.)"""
    check(qdisc in PORT_QDISCS, "qdisc", qdisc, f"allowed: {', '.join(PORT_QDISCS)}")
    pq = qdisc == "pq"
    rate = int(rate_bps)
    b = L2_BURST_BYTES
    root = [f"tc qdisc replace dev {intf} root handle 1: htb default {20 if pq else 1}",
            f"tc class replace dev {intf} parent 1: classid 1:1 htb rate {rate}bit "
            f"ceil {rate}bit burst {b} cburst {b}"]
    if not pq:
        return root + [f"tc qdisc replace dev {intf} parent 1:1 handle 10: bfifo "
                       f"limit {int(buffer_bytes)}"]
    return root + _pq_leaf_commands("replace", intf, rate) + [
        f"tc qdisc replace dev {intf} parent 1:10 handle 10: bfifo limit {int(buffer_bytes)}",
        f"tc qdisc replace dev {intf} parent 1:20 handle 20: bfifo limit {int(buffer_bytes)}",
        f"tc filter replace dev {intf} parent 1: protocol ip prio 1 u32 "
        f"match ip dsfield {PQ_HIGH_DSCP << 2:#x} 0xfc flowid 1:10",
    ]


def _pq_leaf_commands(verb: str, intf: str, rate: int) -> list[str]:
    frame = FABRIC_MTU + 14
    return [f"tc class {verb} dev {intf} parent 1:1 classid 1:{10 * (p + 1)} htb "
            f"rate {PQ_LEAF_RATE_BPS}bit ceil {rate}bit burst {frame} cburst {L2_BURST_BYTES} "
            f"quantum {L2_BURST_BYTES} prio {p}" for p in (0, 1)]


def rate_commands(intf: str, rate_bps: float, qdisc: str = "fifo") -> list[str]:
    """Change a shaped port's rate in place (queued packets stay queued)."""
    pq = qdisc == "pq"
    rate = int(rate_bps)
    b = L2_BURST_BYTES
    cmds = [f"tc class change dev {intf} parent 1: classid 1:1 htb rate {rate}bit "
            f"ceil {rate}bit burst {b} cburst {b}"]
    return cmds + (_pq_leaf_commands("change", intf, rate) if pq else [])


def interface_commands(intf: str) -> list[str]:
    return [f"ip link set dev {intf} mtu {FABRIC_MTU}",
            f"ethtool -K {intf} tso off gso off gro off >/dev/null 2>&1 || true"]
