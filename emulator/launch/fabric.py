"""Bring a fabric up from a topology, and take down exactly what was brought up.

    with LiveFabric(LeafSpineTopo(4, 4, 4, rundir=run_dir)) as fab:
        fab.net["h0"].cmd("ping -c1 10.1.0.2")
        fab.agent("leaf0", {"cmd": "stats"})

Teardown happens on normal exit, on exceptions and on Ctrl-C or SIGTERM (a second one
does not interrupt it): agents get SIGTERM (they write their final counters), then
Mininet stops every node and link it created. Afterwards the recorded process ids and
interface names are checked; anything still there is removed by pid / by name and
reported — never by pattern, so nothing that another run or user owns is touched (no
``mn -c``). With a run folder, everything is written in its ledger before it exists
(``emulator.launch.ledger``), and every process dies with this one (``OwnedNode``), so
even a SIGKILL leaves nothing that ``symphony-emu clean`` cannot find.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from mininet.log import setLogLevel
from mininet.net import Mininet

from emulator.launch.ledger import Ledger
from topologies.dumbbell import DumbbellTopo
from emulator.launch.capacity import default_processes
from topologies.fabric import FabricSwitch, start_agents
from topologies.leafspine import LeafSpineTopo


def topology(plan, rundir: str):
    """The Mininet topology of a run plan (``emulator.plan.RunPlan``): its shape, rates,
    port qdisc and one agent configuration per switch."""
    f = plan.fabric
    opts = dict(rate_bps=f.rate_bps, buffer_bytes=f.buffer_bytes, routing=f.routing,
                agents=plan.agents, rundir=rundir, port_rates=f.port_rates, qdisc=f.port_qdisc,
                agent_processes=plan.agent_processes or default_processes(len(plan.agents)),
                pin_cpus=plan.pin_cpus, path_seed=f.path_seed)
    if f.kind == "dumbbell":
        return DumbbellTopo(f.hosts_per_leaf, **opts)
    nodes = None                              # every node here (LocalNodes)
    if f.servers > 1 or f.server_targets:     # whole pods on servers, cut links over VXLAN
        from cluster.nodes import ServerNodes
        servers = f.servers
        if f.server_targets:                  # real servers, over the user's ssh
            from cluster.servers import Servers
            servers = Servers(list(f.server_targets), f.ssh_config or None,
                              list(f.underlay) or None, f.underlay_bps or None)
        nodes = ServerNodes(servers, leaves=f.leaves, spines=f.spines,
                            hosts_per_leaf=f.hosts_per_leaf, pods=f.pods, cores=f.cores,
                            ssh=f.ssh)
    return LeafSpineTopo(f.leaves, f.spines, f.hosts_per_leaf, pods=f.pods, cores=f.cores,
                         oversubscription=f.oversubscription, nodes=nodes, **opts)


class LiveFabric:
    """A fabric brought up in Mininet from a topology: its nodes, links, agents and
    overlay, live until :meth:`stop` takes down exactly what :meth:`start` made (the
    model's view of the same fabric is ``emulator.routing.graph.LinkGraph``; the plan's
    description of it, ``emulator.plan.FabricPlan``)."""

    def __init__(self, topo, *, log_level: str = "warning", rundir: str | None = None):
        self.topo = topo
        self.rundir = rundir or getattr(topo, "rundir", None)
        self.ledger: Ledger | None = None
        self.net: Mininet | None = None
        self.pids: dict[str, int] = {}       # node name -> shell pid (holds its namespace)
        self.agent_pids: dict[str, int] = {}
        self.intfs: list[str] = []
        self.leftovers: list[str] = []
        self.overlay = None
        self._ssh_tmp: str | None = None     # the ssh state of a run with no folder
        setLogLevel(log_level)

    # --- lifecycle -----------------------------------------------------------------
    def __enter__(self) -> "LiveFabric":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        # Mininet.init() would raise machine-wide sysctls and limits; we only need more
        # file descriptors, for this process.
        Mininet.inited = True
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
        self.overlay = getattr(self.topo, "overlay", None)   # stand-in servers, if any
        try:
            if self.rundir is not None:
                self.ledger = Ledger(self.rundir)
            if self.overlay is not None:
                ssh = getattr(self.topo, "ssh", False)
                for ns in self.overlay.namespaces(ssh):
                    self._note("netns", ns)
                self.overlay.start()
                if ssh:                    # every node is then started over ssh
                    if self.rundir is None:
                        self._ssh_tmp = tempfile.mkdtemp(prefix="symphony-emu-ssh-")
                    lg = self.ledger
                    self.overlay.start_ssh(os.path.join(self.rundir or self._ssh_tmp, "ssh"),
                                           note_dir=lg.dir if lg else None,
                                           note_process=lg.process if lg else None,
                                           note_server=lg.server if lg else None)
            for name in self.topo.nodes():
                self._note("node", name)
            self.net = Mininet(topo=self.topo, controller=None, build=False, autoSetMacs=False,
                               waitConnected=False)
            self.net.build()
            self._record()
            self.net.start()
            later = [s for s in self.switches if s.with_agent == "later"]
            if later:
                start_agents(later, self.topo.agent_processes, pin=self.topo.pin_cpus)
            self.agent_pids = {s.name: s.agent_proc.pid for s in self.switches
                               if s.agent_proc is not None}
        except BaseException:
            self.stop()
            raise

    def _note(self, kind: str, name: str) -> None:
        if self.ledger is not None:
            getattr(self.ledger, kind)(name)

    def _record(self) -> None:
        remote: dict[int, list[dict]] = {}       # server -> its nodes' shells
        for node in self.net.hosts + self.net.switches:
            if getattr(node, "access", None) is not None:
                # its pid is the server's, so it goes into the server's own ledger
                remote.setdefault(node.server, []).append(
                    {"kind": "node", "name": node.name, "pid": node.pid})
                node.ledger = self.ledger    # the local ssh clients of what it starts
                continue
            if node.pid:
                self.pids[node.name] = node.pid
                if self.ledger is not None:
                    self.ledger.node(node.name, node.pid)
            node.ledger = self.ledger        # what the node starts from now on, too
            self.intfs += [i for i in node.intfNames() if i != "lo"]
        for server, recs in remote.items():
            self.overlay.note(server, recs)

    def stop(self) -> None:
        """Stop everything this fabric created; idempotent; tolerant of half-built nets."""
        held = _hold_signals()       # a second Ctrl-C or SIGTERM must not cut the teardown
        try:
            net, self.net = self.net, None
            if net is not None:
                self._check_remote(net)
                for sw in net.switches:
                    if isinstance(sw, FabricSwitch):
                        sw.stop_agent()
                try:
                    net.stop()
                except Exception as e:           # keep going: the checks below clean up
                    self.leftovers.append(f"mininet stop failed: {e!r}")
                self._sweep()
            self._stop_overlay()
            if self.ledger is not None:
                self.ledger.close(self.leftovers)
                self.ledger = None
        finally:
            _restore_signals(held)

    def _check_remote(self, net) -> None:
        """Before the teardown talks to every node: the nodes on servers whose shells no
        longer answer (a server or the network to it gone) are left to end with their
        ssh sessions, and named (a teardown would otherwise wait on them for ever)."""
        from cluster.remote import answering
        remote = [n for n in net.hosts + net.switches if getattr(n, "access", None) is not None]
        for n in remote:
            n.tearing_down = True
        for n in answering(remote):
            self.leftovers.append(f"node {n.lost}")

    def _stop_overlay(self) -> None:
        ov, self.overlay = getattr(self, "overlay", None), None
        if ov is not None:
            stuck = ov.stop()
            if self._ssh_tmp is not None:
                shutil.rmtree(self._ssh_tmp, ignore_errors=True)
                self._ssh_tmp = None
            if stuck:
                self.leftovers.append(f"namespaces that would not go: {stuck}")
                print(f"symphony-emu: could not delete namespaces {stuck}", file=sys.stderr)

    def _sweep(self) -> None:
        for name, pid in list(self.agent_pids.items()) + list(self.pids.items()):
            if _alive(pid):
                self.leftovers.append(f"process {pid} ({name})")
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for pid in list(self.agent_pids.values()) + list(self.pids.values()):
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
        for intf in self.intfs:
            if os.path.exists(f"/sys/class/net/{intf}"):
                self.leftovers.append(f"interface {intf}")
                subprocess.run(["ip", "link", "del", "dev", intf], capture_output=True)
        if self.leftovers:
            print("symphony-emu: teardown removed leftovers: " + ", ".join(self.leftovers),
                  file=sys.stderr)

    # --- access ----------------------------------------------------------------------
    @property
    def switches(self) -> list[FabricSwitch]:
        return [s for s in self.net.switches if isinstance(s, FabricSwitch)]

    @property
    def hosts(self):
        return self.net.hosts

    def __getitem__(self, name: str):
        return self.net[name]

    def agent(self, switch: str, command: dict, timeout_s: float = 5.0) -> dict:
        """Send a control command to a switch's agent (see ``switch_agent.control``)."""
        sw = self.net[switch]
        if sw.control_name is None:
            raise RuntimeError(f"{switch} runs no agent")
        # the agent is reachable only from its switch's network namespace (control.py)
        reply = sw.control(command, timeout_s)
        if not reply.get("ok"):
            raise RuntimeError(f"agent {switch} rejected {command}: {reply.get('error')}")
        return reply

    def agents(self, command: dict) -> dict[str, dict]:
        return {s.name: self.agent(s.name, command) for s in self.switches if s.control_name}


def _hold_signals() -> dict:
    """Hold SIGINT and SIGTERM off (main thread only: elsewhere they cannot be set):
    remembered, not acted on, until :func:`_restore_signals`."""
    old, got = {}, []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            old[sig] = signal.signal(sig, lambda s, _f: got.append(s))
        except ValueError:                      # not the main thread
            pass
    return {"old": old, "got": got}


def _restore_signals(held: dict) -> None:
    """Put the handlers back; one held off during the teardown interrupts now."""
    for sig, handler in held["old"].items():
        signal.signal(sig, handler)
    if held["got"]:
        raise KeyboardInterrupt


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False
