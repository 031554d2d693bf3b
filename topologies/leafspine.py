"""Leaf-spine fabric: T leaves (ToRs), S spines, H hosts per leaf (paper Table 1: 4+4).

    sudo python3 topologies/leafspine.py [SPEC] [--scheme S] [--script FILE]

builds a spec's fabric (default the main job's, runs/table1.toml) with its switch agents
and opens the interactive CLI (``symphony-emu cli``: Mininet's commands and the
project's); ``exit`` removes all it made. As a Mininet custom topology (routes, qdiscs
and agents by ``topologies.fabric``):

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
    _venv = os.path.join(sys.path[0], ".venv", "bin", "python")
    if __name__ == "__main__" and sys.prefix == sys.base_prefix and os.path.exists(_venv):
        # run as a script by a Python outside the project's environment (`sudo python3`):
        # go on in the environment scripts/setup.sh made, where Mininet is
        os.execv(_venv, [_venv, os.path.abspath(_here), *sys.argv[1:]])

from mininet.topo import Topo  # noqa: E402

from topologies import fabric, wiring  # noqa: E402


class LocalNodes:
    """Every node on this machine: the fabric's own switch and host classes, veth links
    (a fabric over several servers is ``cluster.nodes.ServerNodes``, which its caller
    gives the topology)."""
    overlay = None
    ssh = False

    def switch(self, name: str) -> dict:
        return {"cls": fabric.FabricSwitch}

    def host(self, name: str) -> dict:
        return {"cls": fabric.FabricHost}

    def link(self, a: str, b: str) -> dict:
        return {}


class LeafSpineTopo(Topo):
    """Every leaf links to every spine of its pod; ``hosts_per_leaf`` hosts hang off each
    leaf. With ``pods`` > 1 (``leaves`` and ``spines`` per pod) every spine also links to
    every one of ``cores`` core switches, at the rate that gives ``oversubscription``:1
    (paper Table 1's multi-pod fabric: 2 or 4 cores)."""

    def build(self, leaves=4, spines=4, hosts_per_leaf=4, rate_bps=wiring.DEFAULT_RATE_BPS,
              buffer_bytes=wiring.DEFAULT_BUFFER_BYTES, routing="ecmp", agents=None,
              rundir=None, with_agent=True, port_rates=None, qdisc="fifo", pods=1, cores=0,
              oversubscription=1.0, nodes=None, agent_processes=0, pin_cpus=False,
              path_seed=None):
        """``port_rates``: {switch name: {interface: rate_bps}} overrides of single
        egress ports (a slower hop); ``agents``: {switch name: AgentConfig} (a run plan's
        ``agents``; missing ones get ``topologies.fabric.default_agent``); ``qdisc``:
        every switch port's (``fifo`` | ``pq``, the scheme's); ``nodes``: each node's
        class and server and each link's class (:class:`LocalNodes` by default; over
        several servers ``cluster.nodes.ServerNodes``, whose server set the
        :class:`LiveFabric` starts and removes as ``self.overlay``); ``agent_processes`` > 0: the
        switches' agents run in that many processes, started by the :class:`LiveFabric`
        once every switch is up (``topologies.fabric.start_agents``, each on one CPU with
        ``pin_cpus``), instead of one per switch as each starts. ``path_seed``: a fixed
        path draw, each switch's kernel hash seeded by it (None: the kernel's own)."""
        wiring.check_shape(leaves, spines, hosts_per_leaf, routing)
        self.rundir = rundir             # the run's folder: its ledger (emulator.launch.ledger)
        self.agent_processes = agent_processes if with_agent else 0
        self.pin_cpus = pin_cpus
        wiring.check_pods(pods, cores, leaves, spines, routing, oversubscription)
        nodes = nodes or LocalNodes()
        self.overlay, self.ssh = nodes.overlay, nodes.ssh

        def link(a, b, **opts):
            self.addLink(a, b, **opts, **nodes.link(a, b))
        agents = agents or {}
        switch_opts = dict(rate_bps=rate_bps, buffer_bytes=buffer_bytes,
                           rundir=rundir,
                           with_agent="later" if with_agent and agent_processes else with_agent,
                           inNamespace=True,
                           qdisc=qdisc, path_seed=path_seed)
        port_rates = port_rates or {}
        core_rate = wiring.core_rate_bps(rate_bps, leaves, cores, oversubscription) if cores \
            else rate_bps

        def rates(name, extra=None):
            return {**(extra or {}), **port_rates.get(name, {})} or None
        for t in range(leaves * pods):
            name = wiring.leaf_name(t)
            self.addSwitch(name, routes=wiring.leaf_routes(t, leaves, spines, hosts_per_leaf,
                                                           routing, pods),
                           port_rate_bps=rates(name), agent=agents.get(name), **switch_opts,
                           **nodes.switch(name))
        for g in range(spines * pods):
            name = wiring.spine_name(g)
            uplinks = {wiring.spine_port_to_core(g, c, leaves): core_rate for c in range(cores)}
            self.addSwitch(name, routes=wiring.spine_routes(g, leaves, spines, pods, cores),
                           port_rate_bps=rates(name, uplinks), agent=agents.get(name),
                           **switch_opts, **nodes.switch(name))
        for c in range(cores):
            name = wiring.core_name(c)
            down = {wiring.core_port_to_spine(c, g): core_rate for g in range(spines * pods)}
            self.addSwitch(name, routes=wiring.core_routes(c, leaves, spines, pods),
                           port_rate_bps=rates(name, down), agent=agents.get(name),
                           **switch_opts, **nodes.switch(name))
        for t in range(leaves * pods):
            for i in range(hosts_per_leaf):
                name = wiring.host_name(t, i, hosts_per_leaf)
                h = self.addHost(name, ip=wiring.host_ip(t, i) + "/24",
                                 defaultRoute="via " + wiring.host_gateway(t, i),
                                 rate_bps=rate_bps, buffer_bytes=buffer_bytes, **nodes.host(name))
                link(h, wiring.leaf_name(t), params2={"ip": wiring.host_gateway(t, i) + "/24"})
            pod = t // leaves
            for g in range(pod * spines, (pod + 1) * spines):
                link(wiring.leaf_name(t), wiring.spine_name(g),
                     params1={"ip": wiring.leaf_uplink_ip(t, g) + "/24"},
                     params2={"ip": wiring.spine_downlink_ip(t, g) + "/24"})
        for g in range(spines * pods):
            for c in range(cores):
                link(wiring.spine_name(g), wiring.core_name(c),
                     params1={"ip": wiring.spine_uplink_ip(g, c) + "/24"},
                     params2={"ip": wiring.core_downlink_ip(g, c) + "/24"})


def leafspine(leaves=4, spines=4, hosts_per_leaf=4, routing="ecmp"):
    """`mn --topo leafspine,T,S,H[,routing]`"""
    return LeafSpineTopo(int(leaves), int(spines), int(hosts_per_leaf), routing=routing)


def multipod(pods=2, leaves=4, spines=4, hosts_per_leaf=4, cores=2, oversubscription=1.0):
    """`mn --topo multipod,P,T,S,H,C[,oversubscription]`: P pods of T leaves and S spines,
    C cores"""
    return LeafSpineTopo(int(leaves), int(spines), int(hosts_per_leaf), pods=int(pods),
                         cores=int(cores), oversubscription=float(oversubscription))


topos = {"leafspine": leafspine, "multipod": multipod}


def main(argv: list[str]) -> int:
    """``python3 topologies/leafspine.py [SPEC] [cli options]``: the spec's fabric and the
    CLI, as ``symphony-emu cli SPEC`` (which owns the fabric's life: built, agents started,
    everything removed at ``exit`` or Ctrl-C)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    given = bool(argv) and not argv[0].startswith("-")
    spec = os.path.abspath(argv[0]) if given else os.path.join(root, "runs", "table1.toml")
    # the command line stands above this floor: run it, rather than import it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    os.execve(sys.executable, [sys.executable, "-m", "emulator.cli", "cli", spec,
                               *(argv[1:] if given else argv)], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
