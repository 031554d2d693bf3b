"""Leaf-spine fabric: T leaves (ToRs), S spines, H hosts per leaf (paper Table 1: 4+4).

    sudo mn --custom topologies/leafspine.py --topo leafspine,4,4,4 --controller none

or from Python::

    from topologies.leafspine import LeafSpineTopo
    net = Mininet(topo=LeafSpineTopo(4, 4, 4), controller=None)

Addresses, routes, qdiscs and the switch agents come from ``topologies.fabric``.
"""

import inspect
import os
import sys

if __package__ in (None, ""):   # loaded by `mn --custom` (no __file__): find the project
    _here = inspect.currentframe().f_code.co_filename
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(_here))))

from mininet.topo import Topo  # noqa: E402

from topologies import fabric  # noqa: E402


class LeafSpineTopo(Topo):
    """Every leaf links to every spine; ``hosts_per_leaf`` hosts hang off each leaf."""

    def build(self, leaves=4, spines=4, hosts_per_leaf=4, rate_bps=fabric.DEFAULT_RATE_BPS,
              buffer_bytes=fabric.DEFAULT_BUFFER_BYTES, routing="ecmp", agent=None,
              rundir=None, with_agent=True, port_rates=None, pq=False):
        """``port_rates``: {switch name: {interface: rate_bps}} overrides of single
        egress ports (a slower hop); ``agent``: agent config keys (red, symphony, ...)."""
        fabric.check_shape(leaves, spines, hosts_per_leaf, routing)
        switch_opts = dict(cls=fabric.FabricSwitch, rate_bps=rate_bps, buffer_bytes=buffer_bytes,
                           agent=agent, rundir=rundir, with_agent=with_agent, inNamespace=True,
                           pq=pq)
        port_rates = port_rates or {}
        for t in range(leaves):
            name = fabric.leaf_name(t)
            self.addSwitch(name, routes=fabric.leaf_routes(t, leaves, spines, hosts_per_leaf, routing),
                           port_rate_bps=port_rates.get(name), **switch_opts)
        for s in range(spines):
            name = fabric.spine_name(s)
            self.addSwitch(name, routes=fabric.spine_routes(s, leaves),
                           port_rate_bps=port_rates.get(name), **switch_opts)
        for t in range(leaves):
            for i in range(hosts_per_leaf):
                h = self.addHost(fabric.host_name(t, i, hosts_per_leaf), cls=fabric.FabricHost,
                                 ip=fabric.host_ip(t, i) + "/24",
                                 defaultRoute="via " + fabric.host_gateway(t, i),
                                 rate_bps=rate_bps, buffer_bytes=buffer_bytes)
                self.addLink(h, fabric.leaf_name(t),
                             params2={"ip": fabric.host_gateway(t, i) + "/24"})
            for s in range(spines):
                self.addLink(fabric.leaf_name(t), fabric.spine_name(s),
                             params1={"ip": fabric.leaf_uplink_ip(t, s) + "/24"},
                             params2={"ip": fabric.spine_downlink_ip(t, s) + "/24"})


def leafspine(leaves=4, spines=4, hosts_per_leaf=4, routing="ecmp"):
    """`mn --topo leafspine,T,S,H[,routing]`"""
    return LeafSpineTopo(int(leaves), int(spines), int(hosts_per_leaf), routing=routing)


topos = {"leafspine": leafspine}
