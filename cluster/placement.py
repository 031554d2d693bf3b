"""Where a fabric's nodes go when it spans several servers, what the overlay between them
costs, and what a spec may name as servers: pure arithmetic, no Mininet and no root
(docs/distributed.md). The plan (``emulator.plan.placement``), the size guard
(``emulator.launch.capacity``), the fidelity verdict and the leaf-spine topology all read
it; ``cluster.overlay`` and ``cluster.servers`` build on it.
"""

from __future__ import annotations

import ipaddress
import os

from cluster import ssh
from topologies import wiring

VXLAN_OVERHEAD_BYTES = 50          # outer Ethernet + IPv4 + UDP + VXLAN
UNDERLAY_FRAME_BYTES = wiring.FABRIC_MTU + VXLAN_OVERHEAD_BYTES


def server_of_nodes(leaves: int, spines: int, hosts_per_leaf: int, pods: int, cores: int,
                    servers: int) -> dict[str, int]:
    """Node name -> server: whole pods to one server each (round robin), cores spread."""
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if servers > 1 and pods < servers:
        raise ValueError(f"{servers} servers but {pods} pod(s): whole pods go to one "
                         "server each, so use at most as many servers as pods")
    out = {}
    for t in range(leaves * pods):
        pod = t // leaves
        out[wiring.leaf_name(t)] = pod % servers
        for i in range(hosts_per_leaf):
            out[wiring.host_name(t, i, hosts_per_leaf)] = pod % servers
    for g in range(spines * pods):
        out[wiring.spine_name(g)] = (g // spines) % servers
    for c in range(cores):
        out[wiring.core_name(c)] = c % servers
    return out



def spec_problem(targets: tuple, kind: str, ssh_config: str,
                 underlay: tuple) -> tuple[str, object, str] | None:
    """The first thing wrong with real servers as a spec's ``[topology]`` gives them
    (``servers``, ``ssh_config``, ``underlay``): (its key, its value, what is allowed),
    or None. Each a [user@]host[:port] once, leaf-spine only, an ssh_config that exists,
    one IPv4 underlay address per server; ssh_config and underlay only with them."""
    if not targets:
        for key, v in (("ssh_config", ssh_config), ("underlay", underlay)):
            if v:
                return (key, list(v) if isinstance(v, tuple) else v,
                        "only with real servers (topology.servers = [\"root@host\", ...])")
        return None
    for i, t in enumerate(targets):
        if why := ssh.check_target(t):
            return (f"servers[{i}]", t, f"{why}: a server as you ssh to it, "
                                        "[user@]host[:port]")
    if len(set(targets)) != len(targets):
        return ("servers", list(targets), "each server once")
    if kind != "leafspine":
        return ("servers", list(targets),
                "real servers: leafspine only (whole pods go to one server each)")
    if ssh_config and not os.path.isfile(os.path.expanduser(ssh_config)):
        return ("ssh_config", ssh_config, "no such file")
    if underlay and len(underlay) != len(targets):
        return ("underlay", list(underlay), f"one address per server ({len(targets)})")
    for i, a in enumerate(underlay or ()):
        if not _is_ipv4(a):
            return (f"underlay[{i}]", a,
                    "an IPv4 address (the VXLAN ends' local address on that server)")
    return None


def _is_ipv4(text) -> bool:
    try:
        ipaddress.IPv4Address(text)
        return True
    except (ValueError, TypeError):
        return False
