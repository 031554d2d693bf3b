"""Fabric wiring in one place: addresses, routes, qdiscs, NFQUEUE and the switch agent.

Topologies (``leafspine.py``, ``dumbbell.py``) only declare nodes and links; this module
says what every node *is*:

* :class:`FabricHost`: a Mininet host whose egress is shaped to the link rate (HTB with
  a bounded FIFO), offloads off, jumbo MTU (4 KB RoCE MTU + headers fits).
* :class:`FabricSwitch`: a Linux router in its own network namespace: IPv4 forwarding,
  L4 ECMP (``fib_multipath_hash_policy=1``), one HTB-shaped egress per port (link rate,
  bounded FIFO = switch buffer per port), every forwarded packet queued to NFQUEUE 0,
  and the switch agent (``python -m switch_agent``) running on that queue.

The address plan, routes and port shaping are ``topologies.wiring``'s (pure); this module
applies them to Mininet nodes. Import them from ``topologies.wiring``, not from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace

from mininet.node import Host, Switch

from runtime import sched
from switch_agent import control
from switch_agent.config import (AgentConfig, AgentGroupConfig, AgentMember, PortParams,
                                 default_agent)
from topologies.wiring import (DEFAULT_BUFFER_BYTES, DEFAULT_RATE_BPS, L2_BURST_BYTES,
                                REPO_ROOT, interface_commands, kernel_hash_seed, rate_commands,
                                shape_commands)


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


INTERRUPTS = frozenset((signal.SIGINT, signal.SIGTERM))


@contextlib.contextmanager
def interrupts_held():
    """Hold Ctrl-C and SIGTERM while a child is forked with a ``preexec_fn``: Python then
    runs its at-fork hooks in this process (logging's lock release among them), and an
    interrupt raised inside a hook is printed as "Exception ignored" and lost -- the run
    went on to its end (a CI run saw it). Held, it is raised when the fork is done. (A
    signal mask would not do: another thread takes the signal and the main thread runs
    its handler, inside the hook.) The child calls :func:`interrupts_released` first."""
    if threading.current_thread() is not threading.main_thread():
        yield                          # handlers run in the main thread, not in this fork
        return
    got = []
    old = {sig: signal.signal(sig, lambda n, _frame: got.append(n)) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        if got:
            signal.raise_signal(got[0])    # now, through the handler it was meant for


def interrupts_released() -> None:
    """In a child forked under :func:`interrupts_held`, before exec: the interrupts'
    default actions back (one meant for the parent may end the child here)."""
    for sig in INTERRUPTS:
        signal.signal(sig, signal.SIG_DFL)


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


def popen_tied(args, **params) -> subprocess.Popen:
    """``subprocess.Popen`` of a process that dies with this one (:func:`die_with_parent`),
    forked with the interrupts held (:func:`interrupts_held`)."""
    parent = os.getpid()

    def pre():
        interrupts_released()
        die_with_parent(parent)
    with interrupts_held():
        return subprocess.Popen(args, preexec_fn=pre, **params)


class OwnedNode:
    """A node every process of which — its shell (which holds its network namespace, and
    so its interfaces and iptables rules) and every command it ``popen``s — dies with
    the process that built the network, even a SIGKILLed one; each is written in the
    run's ledger (``ledger``, set by ``emulator.launch.fabric.LiveFabric``) as it starts."""
    ledger = None                      # emulator.launch.ledger.Ledger, or None

    def _popen(self, cmd, **params):
        user, parent = params.pop("preexec_fn", None), os.getpid()

        def pre():
            interrupts_released()
            die_with_parent(parent)
            if user is not None:
                user()
        with interrupts_held():
            proc = super()._popen(cmd, preexec_fn=pre, **params)
        if self.ledger is not None and getattr(self, "shell", None) is not None:
            what = " ".join(os.path.basename(str(c)) for c in cmd[-4:])
            self.ledger.process(f"{self.name}: {what}"[:80], proc.pid)
        return proc

    # Files of the run folder as the node's processes see them. Here they share this
    # machine's run folder; a node on a server reached over ssh has a folder of its own
    # there (cluster.remote).
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
                 path_seed: int | None = None, **params):
        params.setdefault("inNamespace", True)
        super().__init__(name, **params)
        self.routes = [(dst, list(nhs)) for dst, nhs in routes]
        self.rate_bps = rate_bps
        self.port_rate_bps = dict(port_rate_bps or {})   # per-interface overrides
        self.qdisc = qdisc
        self.path_seed = path_seed      # a fixed path draw: the kernel's hash seeded by it
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
        if self.path_seed is not None:    # the same paths every run (topology.paths)
            cmds.append("sysctl -qw net.ipv4.fib_multipath_hash_seed="
                        f"{kernel_hash_seed(self.name, self.path_seed)}")
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
    on one CPU, round-robin, when there are at least as many as CPUs (``runtime.sched``)."""
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
