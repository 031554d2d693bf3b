"""A fabric's nodes spread over several servers (docs/distributed.md): on which server
each node is, as which class, and how two nodes are linked -- what a topology asks of the
nodes it declares. The caller gives it to the topology (``LeafSpineTopo(..., nodes=)``,
as Mininet's ``Mininet(topo, switch=, host=, link=)`` takes its node classes), so the
topology only declares nodes and links.

Whole pods go to one server each (``cluster.placement``); a link between two servers is
a VXLAN pair over their underlay (``cluster.overlay``); with ssh, every node is started
and configured through its server's sshd (``cluster.remote``).
"""

from __future__ import annotations

from cluster import overlay, placement, remote
from topologies import fabric


class ServerNodes:
    """``servers``: how many stand-in servers to make on this machine, or a
    :class:`cluster.overlay.ServerSet` (real servers, ``cluster.servers.Servers``: reached
    over ssh); ``ssh`` (stand-in servers): each runs an sshd and every node is reached
    through it. ``overlay`` is the server set the :class:`LiveFabric` starts and
    removes."""

    def __init__(self, servers, *, leaves: int, spines: int, hosts_per_leaf: int,
                 pods: int = 1, cores: int = 0, ssh: bool = False):
        given = servers if isinstance(servers, overlay.ServerSet) else None
        n = given.n if given else servers
        self.server_of = placement.server_of_nodes(leaves, spines, hosts_per_leaf, pods,
                                                   cores, n)
        self.overlay = given or (overlay.StandInServers(n) if n > 1 else None)
        self.ssh = bool(given or ssh and self.overlay)

    def _on(self, name: str) -> dict:
        return {"overlay": self.overlay, "server": self.server_of[name]} if self.ssh else {}

    def switch(self, name: str) -> dict:
        return {"cls": remote.RemoteFabricSwitch if self.ssh else fabric.FabricSwitch,
                **self._on(name)}

    def host(self, name: str) -> dict:
        return {"cls": remote.RemoteFabricHost if self.ssh else fabric.FabricHost,
                **self._on(name)}

    def link(self, a: str, b: str) -> dict:
        sa, sb = self.server_of[a], self.server_of[b]
        return {} if sa == sb else {"cls": overlay.VxlanLink, "overlay": self.overlay,
                                    "servers": (sa, sb)}
