"""Fabric wiring in one place: addresses, routes, qdiscs, NFQUEUE and the switch agent.

Topologies (``leafspine.py``, ``dumbbell.py``) only declare nodes and links; this module
says what every node *is*:

* :class:`FabricHost`: a Mininet host whose egress is shaped to the link rate (HTB with
  a bounded FIFO), offloads off, jumbo MTU (4 KB RoCE MTU + headers fits).
* :class:`FabricSwitch`: a Linux router in its own network namespace: IPv4 forwarding,
  L4 ECMP (``fib_multipath_hash_policy=1``), one HTB-shaped egress per port (link rate,
  bounded FIFO = switch buffer per port), every forwarded packet queued to NFQUEUE 0,
  and the switch agent (``python -m switch_agent``) running on that queue.

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

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from mininet.node import Host, Switch

from hosts.config import check, finite
from hosts import sched
from switch_agent import control
from switch_agent.config import (AgentConfig, AgentGroupConfig, AgentMember, PortParams,
                                 default_agent)
from hosts.scale import DEFAULT as DEFAULT_SCALE, PAPER_LINK_RATE_BPS

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FABRIC_MTU = 9000
L2_BURST_BYTES = 9100               # HTB burst: one jumbo frame, so shaping stays packet-accurate
DEFAULT_RATE_BPS = DEFAULT_SCALE.rate_bps(PAPER_LINK_RATE_BPS)
DEFAULT_BUFFER_BYTES = 512 * 1024   # per egress port
ROUTING_MODES = ("ecmp", "static")
MAX_LEAVES = 128
MAX_SPINES = 127
MAX_HOSTS_PER_LEAF = 254


_default_rundir: str | None = None


def default_rundir() -> str:
    """Where agents write when no run folder is given (plain `mn --custom` use):
    $SYMPHONY_EMU_RUNDIR if set, else a new /tmp/symphony-emu-* folder per process, kept
    after the run so its telemetry can be read."""
    global _default_rundir
    if _default_rundir is None:
        _default_rundir = os.environ.get("SYMPHONY_EMU_RUNDIR") or tempfile.mkdtemp(
            prefix="symphony-emu-")
        print(f"*** switch agents write telemetry to {_default_rundir}", file=sys.stderr)
    return _default_rundir


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
    check(finite(oversubscription) and oversubscription > 0, "oversubscription",
          oversubscription, "must be > 0 (spine downlink : uplink capacity)")


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


def _run(node, cmds: list[str]) -> None:
    """Run shell commands in ``node``'s namespace; raise naming the one that failed."""
    for cmd in cmds:
        out = node.cmd(cmd + "; echo __rc=$?")
        rc = out.rsplit("__rc=", 1)[-1].strip()
        if rc != "0":
            raise RuntimeError(f"{node.name}: `{cmd}` failed (rc {rc}): "
                               f"{out.rsplit('__rc=', 1)[0].strip()}")


def stop_process(proc: subprocess.Popen, timeout_s: float) -> int:
    """SIGTERM a process we started, SIGKILL it if it does not go in time, reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode


# --- nodes ----------------------------------------------------------------------------

_libc = None
PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """In a child between fork and exec: SIGKILL it when the process that started it
    (``parent_pid``) dies (PR_SET_PDEATHSIG; kept across exec, and through ``mnexec``,
    which does not fork). If that parent is already gone, exit now: the signal would
    never come."""
    import ctypes
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


class OwnedNode:
    """A node every process of which — its shell (which holds its network namespace, and
    so its interfaces and iptables rules) and every command it ``popen``s — dies with
    the process that built the network, even a SIGKILLed one; each is written in the
    run's ledger (``ledger``, set by ``emulator.launch.fabric.Fabric``) as it starts."""
    ledger = None                      # emulator.launch.ledger.Ledger, or None

    def _popen(self, cmd, **params):
        user, parent = params.pop("preexec_fn", None), os.getpid()

        def pre():
            die_with_parent(parent)
            if user is not None:
                user()
        proc = super()._popen(cmd, preexec_fn=pre, **params)
        if self.ledger is not None and getattr(self, "shell", None) is not None:
            what = " ".join(os.path.basename(str(c)) for c in cmd[-4:])
            self.ledger.process(f"{self.name}: {what}"[:80], proc.pid)
        return proc

    # Files of the run folder as the node's processes see them. Here they share this
    # machine's run folder; a node on a server reached over ssh has a folder of its own
    # there (topologies.remote).
    def there(self, path: str) -> str:
        """Where the node's processes read or write the run-folder file ``path``."""
        return path

    def deliver(self, path: str) -> str:
        """Make the run-folder file ``path`` readable by the node's processes; its path
        there."""
        return path

    def fetch(self, there: str, here: str) -> None:
        """Bring the node's file ``there`` into the run folder as ``here``."""


class FabricHost(OwnedNode, Host):
    """A host whose NIC egress is shaped to its link rate."""

    def config(self, rate_bps: float = DEFAULT_RATE_BPS, buffer_bytes: int = DEFAULT_BUFFER_BYTES,
               **params):
        r = super().config(**params)
        cmds = []
        for intf in self.intfNames():
            if intf == "lo":
                continue
            cmds += interface_commands(intf) + shape_commands(intf, rate_bps, buffer_bytes)
        _run(self, cmds)
        self.rate_bps = rate_bps
        return r


class FabricSwitch(OwnedNode, Switch):
    """A router namespace with shaped ports, NFQUEUE and the switch agent."""

    def __init__(self, name, routes=(), rate_bps: float = DEFAULT_RATE_BPS,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES, agent: AgentConfig | None = None,
                 rundir: str | None = None, with_agent: bool = True,
                 port_rate_bps: dict[str, float] | None = None, qdisc: str = "fifo",
                 **params):
        params.setdefault("inNamespace", True)
        super().__init__(name, **params)
        self.routes = [(dst, list(nhs)) for dst, nhs in routes]
        self.rate_bps = rate_bps
        self.port_rate_bps = dict(port_rate_bps or {})   # per-interface overrides
        self.qdisc = qdisc
        self.buffer_bytes = buffer_bytes
        self.agent_config = agent if agent is not None else default_agent(name)
        self.rundir = rundir
        self.with_agent = with_agent
        self.agent_proc: subprocess.Popen | None = None     # the process serving this switch
        self.agent_leader: FabricSwitch | None = None       # the switch it was started from
        self.agent_ports: dict[str, PortParams] = {}
        self.agent_log: str | None = None                   # that process's log file
        self.agent_config_path = self.telemetry_path = self.control_name = None

    def start(self, controllers):
        cmds = ["sysctl -qw net.ipv4.ip_forward=1",
                "sysctl -qw net.ipv4.fib_multipath_hash_policy=1",
                "sysctl -qw net.ipv4.conf.all.rp_filter=0",
                "sysctl -qw net.ipv4.conf.default.rp_filter=0",
                # a nexthop whose link lost carrier is skipped (link failures, flaps)
                "sysctl -qw net.ipv4.conf.all.ignore_routes_with_linkdown=1"]
        ports = {}
        for intf in self.intfNames():
            if intf == "lo":
                continue
            rate = self.port_rate_bps.get(intf, self.rate_bps)
            cmds += interface_commands(intf) + shape_commands(intf, rate, self.buffer_bytes,
                                                                  self.qdisc)
            cmds.append(f"sysctl -qw net.ipv4.conf.{intf.replace('.', '/')}.rp_filter=0")
            # pq too: one parent bucket, and one buffer across its two FIFOs
            ports[intf] = PortParams(rate, self.buffer_bytes, L2_BURST_BYTES,
                                     shared_buffer=self.qdisc == "pq")
        cmds += self.route_commands()
        # --queue-bypass: with no agent bound to the queue (not yet started, or dead) the
        # kernel forwards unmarked instead of dropping everything (docs/architecture.md §5)
        cmds.append("iptables -w -A FORWARD -j NFQUEUE --queue-num 0 --queue-bypass")
        unknown = set(self.port_rate_bps) - set(ports)
        if unknown:
            raise ValueError(f"{self.name}: port_rate_bps names unknown interfaces "
                             f"{sorted(unknown)}; ports are {sorted(ports)}")
        _run(self, cmds)
        self.agent_ports = ports
        if self.with_agent is True:
            start_agents([self], 1)

    def route_commands(self) -> list[str]:
        cmds = []
        for dst, nexthops in self.routes:
            if len(nexthops) == 1:
                cmds.append(f"ip route replace {dst} via {nexthops[0]}")
            else:
                hops = " ".join(f"nexthop via {nh} weight 1" for nh in nexthops)
                cmds.append(f"ip route replace {dst} {hops}")
        return cmds

    def set_link(self, intf: str, up: bool) -> None:
        """Fail (or restore) the link on ``intf``. Taking an interface down flushes the
        routes through it, so bringing it up reinstalls this switch's routes; the far end
        sees the carrier go and skips the dead next hop (ignore_routes_with_linkdown)."""
        _run(self, [f"ip link set dev {intf} {'up' if up else 'down'}"])
        if up:
            _run(self, self.route_commands())

    def set_port_rate(self, intf: str, rate_bps: float) -> None:
        """Shape ``intf`` to ``rate_bps`` from now on (a load imbalance switched on live);
        the caller tells the agent too (control command ``port_rate``)."""
        if intf not in self.intfNames():
            raise ValueError(f"{self.name} has no port {intf!r}")
        _run(self, rate_commands(intf, rate_bps, self.qdisc))
        self.port_rate_bps[intf] = rate_bps

    def write_agent_config(self) -> str:
        """Complete the agent's configuration with this switch's ports and paths; write it
        as ``<switch>.agent.json`` (returned)."""
        if self.rundir is None:
            self.rundir = default_rundir()
        os.makedirs(self.rundir, exist_ok=True)
        cfg = replace(self.agent_config, switch=self.name, ports=self.agent_ports,
                      telemetry_path=self.there(
                          os.path.join(self.rundir, f"{self.name}.jsonl")),
                      control_name=control.control_name(self.rundir, self.name))
        self.agent_config_path = os.path.join(self.rundir, f"{self.name}.agent.json")
        with open(self.agent_config_path, "w") as f:
            json.dump(cfg.to_dict(), f, indent=1)
        self.telemetry_path, self.control_name = cfg.telemetry_path, cfg.control_name
        return self.deliver(self.agent_config_path)

    def popen_agent(self, cmd: list, **kwargs) -> subprocess.Popen:
        """Start the process of this switch's agent (and of the switches it serves)."""
        return self.popen(cmd, **kwargs)

    def control(self, command: dict, timeout_s: float = 5.0) -> dict:
        """One command to this switch's agent, from inside the switch's namespace (the
        only place it can be reached from); OSError if none answers."""
        return control.send_command(self.control_name, command, timeout_s, netns_pid=self.pid)

    def _agent_answers(self) -> bool:
        """Ready: the agent answers ``stats`` on its control socket."""
        try:
            self.control({"cmd": "stats"}, 0.5)
            return True
        except OSError:                 # not bound yet (refused) or not answering yet
            return False

    def collect(self) -> None:
        """Bring what the agent wrote back into the run folder (here: it wrote it there)."""

    def stop_agent(self, timeout_s: float = 5.0) -> int | None:
        """SIGTERM the agent's process (it writes every switch's final counters) and reap
        it; SIGKILL if stuck. A process serving several switches stops with the first."""
        proc, self.agent_proc = self.agent_proc, None
        return None if proc is None else stop_process(proc, timeout_s)

    def stop(self, deleteIntfs=True):
        self.stop_agent()
        self.collect()
        super().stop(deleteIntfs)


def per_server(items: list, server_of, k: int, split) -> list[list]:
    """``items`` (switches or hosts) in about ``k`` processes' shares, each process serving
    items of one server only (``server_of(item)``: None on one machine): each server gets
    processes in proportion to its items, at least one, and ``split(group, n)`` shares a
    server's items among its ``n``."""
    by: dict = {}
    for it in items:
        by.setdefault(server_of(it), []).append(it)
    return [share for group in by.values()
            for share in split(group, max(1, min(len(group),
                                                 round(k * len(group) / len(items)))))]


def _round_robin(group: list, n: int) -> list[list]:
    return [group[i::n] for i in range(n)]


def start_agents(switches: list[FabricSwitch], processes: int, timeout_s: float = 10.0,
                 pin: bool = False) -> None:
    """Start the agents of ``switches`` (each started, its ports known) in ``processes``
    processes (``python -m switch_agent``), each serving a share of the switches from the
    namespace of its first, and wait until every agent answers on its control socket. A
    process runs a per-switch agent -- its own queue, pipeline, control socket and
    telemetry -- for each of its switches (docs/architecture.md §5.1). ``pin``: each process
    on one CPU, round-robin, when there are at least as many as CPUs (``hosts.sched``)."""
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    k = max(1, min(processes, len(switches)))
    pin = pin and k >= len(sched.cpus())
    for i, share in enumerate(per_server(switches, lambda sw: getattr(sw, "server", None),
                                         k, _round_robin)):
        first = share[0]
        members = [AgentMember(sw.write_agent_config(), 0 if sw is first else sw.pid)
                   for sw in share]
        group = os.path.join(first.rundir, f"{first.name}.agents.json")
        with open(group, "w") as f:
            json.dump(AgentGroupConfig(tuple(members), sched.cpu_for(i) if pin else None).to_dict(),
                      f, indent=1)
        group = first.deliver(group)
        log = open(os.path.join(first.rundir, f"{first.name}.agent.log"), "w")
        proc = first.popen_agent([sys.executable, "-m", "switch_agent", "--config", group],
                           stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT)
        log.close()
        for sw in share:
            sw.agent_proc, sw.agent_leader = proc, first   # started from first's namespace
            sw.agent_log = os.path.basename(log.name)
    deadline = time.monotonic() + timeout_s
    waiting = list(switches)
    while waiting:
        sw = waiting[0]
        if sw._agent_answers():
            waiting.pop(0)
            continue
        if sw.agent_proc.poll() is not None:
            with open(os.path.join(sw.rundir, sw.agent_log)) as f:
                raise RuntimeError(f"switch agent of {sw.name} exited with "
                                   f"{sw.agent_proc.returncode}:\n{f.read()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"switch agent of {sw.name} not ready after {timeout_s} s")
        time.sleep(0.02)
