"""Links between servers, prototyped on one machine (docs/distributed.md).

A fabric that spans several servers needs its cut links (the ones whose two ends are
placed on different servers, ``cluster.placement``) carried over the servers' own
network. Here each cut link is a **VXLAN** pair: a VXLAN device is created in the network
namespace that owns the server's underlay address, then moved into the node's namespace
and given the node's interface name. The kernel keeps the tunnel's UDP socket in the
namespace that created it, so frames the node sends on that interface are encapsulated
and sent over the underlay, and arrive on the far node's interface as if over a veth.
Shaping, NFQUEUE and the switch agents do not notice: they see an interface like any
other. (Mininet Cluster Edition uses GRE for this; this kernel has no GRE or Geneve
module, but it has VXLAN, which is also what data-centre overlays use.)

On real servers the "server namespace" is each server's root namespace and the underlay
is their network; on one machine :class:`StandInServers` makes both: one namespace per
stand-in server, each with a veth into an underlay bridge, jumbo MTU so 4 KB RoCE frames
plus the 50-byte VXLAN header pass unfragmented. It records the namespaces it made and
removes exactly those (``ip netns del`` by name, never by pattern).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from mininet.link import Link

from cluster import ssh
from topologies import fabric, wiring

LEDGER = "ledger.jsonl"                   # emulator.launch.ledger.LEDGER, on each server
LEDGER_SCRIPT = os.path.join(wiring.REPO_ROOT, "emulator", "launch", "ledger.py")

VXLAN_PORT = 4789
UNDERLAY_MTU = 9100                # >= FABRIC_MTU (9000) + VXLAN_OVERHEAD_BYTES
UNDERLAY_NET = "192.168.250"


def _ip(*args: str) -> str:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def link_counters(server: int, ip_json: str) -> dict:
    """One server's underlay counters from ``ip -j -s link show dev <its interface>``:
    bytes and packets sent and received, and what it dropped or got wrong either way
    (the tunnels' losses: a cut link that loses frames is not the link the spec asked
    for)."""
    st = json.loads(ip_json)[0]["stats64"]
    tx, rx = st["tx"], st["rx"]
    return {"server": server, "tx_bytes": tx["bytes"], "tx_packets": tx["packets"],
            "rx_bytes": rx["bytes"], "rx_packets": rx["packets"],
            "tx_dropped": tx.get("dropped", 0), "tx_errors": tx.get("errors", 0),
            "rx_dropped": rx.get("dropped", 0), "rx_errors": rx.get("errors", 0)}


class ServerSet:
    """What the fabric sees of the servers it spans, stand-in or real: how many, each
    one's underlay address, the ssh access once connected (``access``), each one's folder
    for the run, the VXLAN ends of the cut links, the underlay's counters, and each
    server's own ledger (``emulator.launch.ledger``: what the run started there, so that
    ``clean`` can remove it there)."""

    n: int
    access: "ssh.SshAccess | None" = None
    servers_dir: str | None = None         # each server's folder of the run, below
    underlay_capacity: float | None = None  # bit/s each server's underlay carries, if given

    def capacity_bps(self, server: int) -> float | None:
        """The underlay's capacity at ``server`` (None: unknown)."""
        return self.underlay_capacity

    def address(self, server: int) -> str:
        raise NotImplementedError

    def namespaces(self, with_ssh: bool) -> list[str]:
        """The named network namespaces this makes on this machine (for the ledger)."""
        return []

    def next_vni(self) -> int:
        self._vni = getattr(self, "_vni", 0) + 1
        return self._vni

    def server_dir(self, server: int) -> str:
        """``server``'s folder for the run (its own directory, not the run folder,
        written and read only over ssh; an absolute path, the same on every server)."""
        return os.path.join(os.path.abspath(self.servers_dir), f"s{server}")

    def ledger_path(self, server: int) -> str:
        return os.path.join(self.server_dir(server), LEDGER)

    def note(self, server: int, records: list[dict]) -> None:
        """Write ``records`` (``{"kind", "name", "pid"}`` of things that run on
        ``server``) into its own ledger, their start times and namespaces read there."""
        if self.access is None or not records:
            return
        lines = "".join(json.dumps(r) + "\n" for r in records).encode()
        self.access.run(server, [sys.executable, LEDGER_SCRIPT, "note",
                                 self.ledger_path(server)], input=lines)

    def recorded(self, server: int, name: str) -> list[str]:
        """The argv prefix that makes a process started on ``server`` write itself into
        the server's ledger (its pid and start time there) before it execs."""
        return [sys.executable, LEDGER_SCRIPT, "exec", self.ledger_path(server), name, "--"]

    def tunnel_end(self, server: int, peer: int, name: str, vni: int, node,
                   mac: str | None = None) -> None:
        """One end of a cut link: a VXLAN device made on ``server`` (in the namespace
        that holds its underlay address) toward ``peer``, moved into ``node``'s namespace
        as ``name``."""
        for cmd in tunnel_commands(self.address(server), self.address(peer), name, vni,
                                   node.pid, mac):
            self._server_ip(server, cmd)

    def _server_ip(self, server: int, args: list[str]) -> None:
        self.access.run(server, ["ip", *args])


def tunnel_commands(local: str, remote: str, name: str, vni: int, pid: int,
                    mac: str | None = None) -> list[list[str]]:
    """The two ``ip`` commands of a tunnel end: make the VXLAN device, move it into the
    node's namespace (by its shell's pid) under the node's interface name."""
    extra = ["address", mac] if mac else []
    return [["link", "add", name, *extra, "type", "vxlan", "id", str(vni), "local", local,
             "remote", remote, "dstport", str(VXLAN_PORT)],
            ["link", "set", name, "netns", str(pid)]]


class StandInServers(ServerSet):
    """``n`` stand-in servers on this machine, joined by an underlay bridge."""

    def __init__(self, n: int, tag: str | None = None):
        if n < 2:
            raise ValueError(f"stand-in servers: need at least 2, got {n}")
        if n > 200:
            raise ValueError(f"stand-in servers: at most 200, got {n}")
        self.n = n
        tag = tag or str(os.getpid())
        self.underlay_ns = f"symu{tag}"
        self.server_ns = [f"syms{tag}-{i}" for i in range(n)]
        self.coordinator_ns = f"symc{tag}"
        self.created: list[str] = []         # namespaces, in creation order
        self.sshd: list[subprocess.Popen] = []
        self._made_privsep = False

    def namespaces(self, with_ssh: bool) -> list[str]:
        return [self.underlay_ns, *self.server_ns, *([self.coordinator_ns] if with_ssh else [])]

    def address(self, server: int) -> str:
        return f"{UNDERLAY_NET}.{server + 1}"

    def start(self) -> None:
        try:
            for ns in [self.underlay_ns, *self.server_ns]:
                _ip("netns", "add", ns)
                self.created.append(ns)
                _ip("-n", ns, "link", "set", "lo", "up")
            u = self.underlay_ns
            _ip("-n", u, "link", "add", "br0", "type", "bridge")
            _ip("-n", u, "link", "set", "br0", "mtu", str(UNDERLAY_MTU), "up")
            for i, ns in enumerate(self.server_ns):
                # created in the underlay namespace, one end moved: nothing touches the
                # root namespace, so no name there can clash
                _ip("-n", u, "link", "add", f"p{i}", "mtu", str(UNDERLAY_MTU), "type", "veth",
                    "peer", "name", "underlay", "netns", ns, "mtu", str(UNDERLAY_MTU))
                _ip("-n", u, "link", "set", f"p{i}", "master", "br0", "up")
                _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "underlay")
                _ip("-n", ns, "link", "set", "underlay", "up")
        except BaseException:
            self.stop()
            raise

    def coordinator_address(self) -> str:
        return f"{UNDERLAY_NET}.254"

    def start_ssh(self, state_dir: str, servers_dir: str | None = None,
                  timeout_s: float = 10.0, note_dir=None, note_process=None,
                  note_server=None) -> ssh.SshAccess:
        """An sshd in each server's namespace, on its underlay address, accepting this
        run's key only; the coordinator's client in a namespace of its own on the
        underlay (``coordinator_ns``), so servers are reached only over ssh. Keys, host
        keys, configurations and logs go to ``state_dir``. ``servers_dir``: where each
        server keeps the run's files (``<servers_dir>/s<i>``, its own folder; default
        beside ``state_dir``). ``note_dir(path, empty_only=False)`` is told of each folder
        this makes outside ``state_dir`` before it exists (the run's ledger, so that
        ``clean`` removes them after a SIGKILL); ``note_process(name, pid)`` of each ssh
        master connection. (``note_server`` is for real servers: stand-in servers share
        this machine's process table, which the run's own ledger covers.) Returns the
        access."""
        os.makedirs(state_dir, exist_ok=True)
        self.servers_dir = servers_dir or os.path.join(os.path.dirname(state_dir), "servers")
        try:
            ns, u = self.coordinator_ns, self.underlay_ns
            _ip("netns", "add", ns)
            self.created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", u, "link", "add", "pc", "mtu", str(UNDERLAY_MTU), "type", "veth",
                "peer", "name", "underlay", "netns", ns, "mtu", str(UNDERLAY_MTU))
            _ip("-n", u, "link", "set", "pc", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.coordinator_address()}/24", "dev", "underlay")
            _ip("-n", ns, "link", "set", "underlay", "up")
            client = ssh._keygen(os.path.join(state_dir, "id_ed25519"), "symphony-emu")
            authorized = os.path.join(state_dir, "authorized_keys")
            with open(authorized, "w") as f:
                f.write(client + "\n")
            if not os.path.isdir("/run/sshd"):       # sshd's privilege-separation folder
                if note_dir is not None:
                    note_dir("/run/sshd", empty_only=True)
                os.makedirs("/run/sshd", mode=0o755)
                self._made_privsep = True
            host_keys = []
            for i, server_ns in enumerate(self.server_ns):
                host_keys.append(ssh._keygen(os.path.join(state_dir, f"host{i}_ed25519"),
                                             f"stand-in server {i}"))
                cfg = os.path.join(state_dir, f"sshd{i}.conf")
                with open(cfg, "w") as f:
                    f.write(ssh.sshd_config(state_dir, i, self.address(i), authorized))
                log = open(os.path.join(state_dir, f"sshd{i}.log"), "ab")
                self.sshd.append(fabric.popen_tied(
                    ["ip", "netns", "exec", server_ns, ssh.SSHD, "-D", "-e", "-f", cfg],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log))
                log.close()
            self.access = ssh.run_keys(state_dir, [self.address(i) for i in range(self.n)],
                                       host_keys, wrap=("ip", "netns", "exec", ns),
                                       note_dir=note_dir, note_process=note_process)
            deadline = time.monotonic() + timeout_s
            for i in range(self.n):
                while True:
                    try:
                        self.access.connect(i, max(1.0, deadline - time.monotonic()))
                        break
                    except ConnectionError as e:
                        if self.sshd[i].poll() is not None or time.monotonic() > deadline:
                            with open(os.path.join(state_dir, f"sshd{i}.log"), "rb") as f:
                                said = f.read().decode(errors="replace").strip()[-300:]
                            raise RuntimeError(f"stand-in {e}; sshd said: "
                                               f"{said or 'nothing'}") from None
                        time.sleep(0.1)
            return self.access
        except BaseException:
            self.stop()
            raise

    def stop(self) -> list[str]:
        """End the ssh connections and sshds, kill whatever still runs in the namespaces
        this made, and delete them; returns the namespaces that would not go."""
        if self.access is not None:
            self.access.close()
            self.access = None
        for p in self.sshd:
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.sshd = []
        for ns in self.created:          # sessions outlive their sshd: by namespace
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self._made_privsep:
            try:
                os.rmdir("/run/sshd")
            except OSError:
                pass
            self._made_privsep = False
        stuck = []
        for ns in reversed(self.created):
            r = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
            if r.returncode != 0:
                stuck.append(ns)
        self.created = []
        return stuck

    def _server_ip(self, server: int, args: list[str]) -> None:
        if self.access is not None:          # through the server's sshd, as on real ones
            self.access.run(server, ["ip", *args])
        else:
            _ip("-n", self.server_ns[server], *args)

    def counters(self) -> list[dict]:
        """Each server's underlay counters (:func:`link_counters`), since it was made."""
        return [link_counters(i, _ip("-j", "-s", "-n", ns, "link", "show", "dev", "underlay"))
                for i, ns in enumerate(self.server_ns)]


class VxlanLink(Link):
    """A link whose two ends sit on different servers: a VXLAN pair over the underlay.
    ``servers``: (server of node1, server of node2); ``overlay``: the servers."""

    def __init__(self, node1, node2, overlay: ServerSet, servers: tuple[int, int],
                 **params):
        self.overlay, self.servers = overlay, servers
        super().__init__(node1, node2, **params)

    def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None, node1=None,
                     node2=None, deleteIntfs=True):
        vni = self.overlay.next_vni()
        a, b = self.servers
        self.overlay.tunnel_end(a, b, intfname1, vni, node1, addr1)
        self.overlay.tunnel_end(b, a, intfname2, vni, node2, addr2)
