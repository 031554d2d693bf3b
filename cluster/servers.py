"""Real servers a fabric spans, reached over the user's own ssh (docs/distributed.md,
"Run on your servers").

``Servers(["root@10.0.0.2", "root@10.0.0.3"])`` is the :class:`~cluster.overlay.ServerSet`
of real machines: nothing is made on this machine (the coordinator); each server is
reached as the user reaches it (``~/.ssh/config``, keys, agent, ``known_hosts``, or the
file ``ssh_config``), one master connection each (``cluster.ssh``), and before any
node is placed, :meth:`Servers.start_ssh` checks every server (:func:`probe`) and
refuses, naming each server and what it lacks:

* the coordinator logs in as root (the nodes' namespaces, ``tc`` and iptables need it);
* the project at the coordinator's path and its Python at the same path, with the
  modules the processes import (they run ``sys.executable -m ...`` there);
* ``mnexec``, ``ip``, ``tc``, ``iptables`` and ``ping``;
* the underlay: the server's address on it (by default, the one its sshd was reached
  on; ``underlay`` names others), the interface that holds it, and that a
  9050-byte frame (the fabric's 9000-byte MTU plus VXLAN's 50) reaches every other
  server unfragmented (``ping -M do``).

What the probe finds (cores, memory, each underlay interface and its speed) is kept as
:class:`ServerFacts`; the size guard (``emulator.launch.capacity``) checks the hosts per
server against each server's cores, and the cut links' rates against its underlay.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass

from cluster import ssh
from cluster.overlay import LEDGER_SCRIPT, ServerSet, link_counters
from cluster.placement import UNDERLAY_FRAME_BYTES, VXLAN_OVERHEAD_BYTES
from topologies import wiring

PING_PAYLOAD_BYTES = UNDERLAY_FRAME_BYTES - 28          # less the IPv4 and ICMP headers
TOOLS = ("mnexec", "ip", "tc", "iptables", "ping")
MODULES = "hosts.group, switch_agent.agent, numpy, mininet.node"


class PreflightError(RuntimeError):
    """Some server cannot take its part of the fabric; the message names each."""


@dataclass(frozen=True)
class ServerFacts:
    target: str                    # [user@]host[:port], as given
    address: str                   # on the underlay: the VXLAN ends' local address
    interface: str                 # the underlay interface holding it
    cpus: int
    mem_available_bytes: int
    speed_bps: float | None        # the interface's, if the kernel knows it

    def describe(self, server: int) -> str:
        return (f"server s{server} {self.target}: {self.cpus} cores, "
                f"{self.mem_available_bytes / (1 << 30):.1f} GiB available, underlay "
                f"{self.address} on {self.interface}"
                + (f" ({self.speed_bps / 1e9:g} Gb/s)" if self.speed_bps else ""))


def _probe_script(address: str | None) -> str:
    py, repo = shlex.quote(sys.executable), shlex.quote(wiring.REPO_ROOT)
    addr = shlex.quote(address) if address else '"$(echo "$SSH_CONNECTION" | cut -d" " -f3)"'
    return "\n".join([
        f"a={addr}",
        'echo "address=$a"',
        'echo "uid=$(id -u)"',
        'echo "cpus=$(nproc)"',
        "awk '/^MemAvailable:/ {print \"mem=\" $2 * 1024}' /proc/meminfo",
        "dev=$(ip -o -4 addr show | awk -v a=\"$a\" 'index($4, a \"/\") == 1 {print $2; exit}')",
        'echo "interface=$dev"',
        'if [ -n "$dev" ]; then echo "speed=$(cat /sys/class/net/$dev/speed 2>/dev/null)"; fi',
        f"for t in {' '.join(TOOLS)}; do command -v $t >/dev/null 2>&1 || echo missing=$t; done",
        f"if [ -x {py} ]; then echo python=1; fi",
        f"if [ -f {shlex.quote(LEDGER_SCRIPT)} ]; then echo project=1; fi",
        f"cd {repo} 2>/dev/null && PYTHONPATH={repo} {py} -c {shlex.quote('import ' + MODULES)}"
        " >/dev/null 2>&1 && echo modules=1",
        "true", ""])


def _fields(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        k, eq, v = line.partition("=")
        if eq:
            out.setdefault(k.strip(), []).append(v.strip())
    return out


def probe(access: ssh.SshAccess, targets: list[str],
          underlay: list[str] | None = None) -> list[ServerFacts]:
    """Check every server (see the module's text) over ``access``; raises
    :class:`PreflightError` naming every server that fails and why."""
    problems, facts = [], []
    for i, target in enumerate(targets):
        f = _fields(access.run(i, _probe_script(underlay[i] if underlay else None),
                               timeout_s=60).stdout.decode(errors="replace"))
        one = lambda k, d="": (f.get(k) or [d])[0]          # noqa: E731
        why = []
        if one("uid") != "0":
            why.append(f"logs in as uid {one('uid', '?')}, not root (the nodes' namespaces, "
                       "tc and iptables need root: log in as root@)")
        if not one("python"):
            why.append(f"no {sys.executable} (the processes run the coordinator's Python at "
                       "the same path: install the project there as here)")
        elif not one("project"):
            why.append(f"no project at {wiring.REPO_ROOT} (clone it at the same path)")
        elif not one("modules"):
            why.append(f"{sys.executable} there cannot import {MODULES} (run "
                       "scripts/setup.sh there)")
        if f.get("missing"):
            why.append(f"missing {', '.join(f['missing'])} (scripts/setup.sh installs them)")
        if not one("interface"):
            why.append(f"no interface holds the underlay address {one('address', '?')!r}")
        if why:
            problems.append(f"server s{i} ({target}): " + "; ".join(why))
            continue
        speed = one("speed")
        facts.append(ServerFacts(target, one("address"), one("interface"),
                                 int(one("cpus", "1")), int(float(one("mem", "0"))),
                                 float(speed) * 1e6 if speed.lstrip("-").isdigit()
                                 and int(speed) > 0 else None))
    if problems:
        raise PreflightError("\n".join(problems))
    for i, fi in enumerate(facts):           # every pair carries whole frames, both ways
        peers = [fj.address for j, fj in enumerate(facts) if j != i]
        if not peers:
            continue
        r = access.run(i, " ; ".join(
            f"ping -n -q -c 1 -W 2 -M do -s {PING_PAYLOAD_BYTES} {shlex.quote(p)} "
            f">/dev/null 2>&1 && echo ok={p} || echo fail={p}" for p in peers), timeout_s=60)
        bad = _fields(r.stdout.decode(errors="replace")).get("fail", [])
        if bad:
            problems.append(f"server s{i} ({fi.target}): a {UNDERLAY_FRAME_BYTES}-byte frame "
                            f"(the fabric's {wiring.FABRIC_MTU}-byte MTU plus VXLAN's "
                            f"{VXLAN_OVERHEAD_BYTES}) does not reach {', '.join(bad)} from "
                            f"{fi.address} ({fi.interface}) unfragmented: raise the "
                            "underlay's MTU to at least that, on the interfaces and the "
                            "switches between")
    if problems:
        raise PreflightError("\n".join(problems))
    return facts


class Servers(ServerSet):
    """Real servers ``targets`` (``[user@]host[:port]``), reached over the user's ssh
    (``ssh_config``: a file to use instead of ``~/.ssh/config``); ``underlay``: each
    server's address on the network the cut links cross (default: the one its sshd was
    reached on); ``underlay_bps``: the underlay's capacity (default: each interface's
    speed, when the kernel knows it). ``wrap``: a prefix of every ssh argv."""

    def __init__(self, targets: list[str], ssh_config: str | None = None,
                 underlay: list[str] | None = None, underlay_bps: float | None = None,
                 wrap: tuple[str, ...] = ()):
        for t in targets:
            if why := ssh.check_target(t):
                raise ValueError(f"server {t!r}: {why}")
        if underlay is not None and len(underlay) != len(targets):
            raise ValueError(f"{len(underlay)} underlay addresses for {len(targets)} servers")
        self.n, self.targets = len(targets), list(targets)
        self.ssh_config, self.underlay, self.wrap = ssh_config, underlay, tuple(wrap)
        self.underlay_capacity = underlay_bps
        self.facts: list[ServerFacts] = []

    def address(self, server: int) -> str:
        return self.facts[server].address

    def capacity_bps(self, server: int) -> float | None:
        """The underlay's capacity at ``server``: the one given, else its interface's
        speed (None: unknown)."""
        return self.underlay_capacity or self.facts[server].speed_bps

    def start(self) -> None:
        """Nothing to make here: the servers and their network exist."""

    def start_ssh(self, state_dir: str, servers_dir: str | None = None,
                  timeout_s: float = 10.0, note_dir=None, note_process=None,
                  note_server=None) -> ssh.SshAccess:
        """Connect to every server (one master connection each, its pid told to
        ``note_process``), check each (:func:`probe`), and tell ``note_server`` how to
        reach it and clean it, before anything runs there. ``servers_dir``: the run's
        folder on each server is ``<servers_dir>/s<i>`` (default: ``servers`` beside
        ``state_dir``, the same path as on this machine)."""
        self.servers_dir = servers_dir or os.path.join(os.path.dirname(state_dir), "servers")
        self.access = ssh.users_ssh(state_dir, self.targets, self.ssh_config, wrap=self.wrap,
                                    note_dir=note_dir, note_process=note_process)
        try:
            for i in range(self.n):
                if note_server is not None:
                    note_server(self.access.name(i), self.targets[i], self.access.one_shot(i),
                                [sys.executable, LEDGER_SCRIPT, "clean", self.server_dir(i)])
                self.access.connect(i, timeout_s)
            self.facts = probe(self.access, self.targets, self.underlay)
        except BaseException:
            self.stop()
            raise
        return self.access

    def counters(self) -> list[dict]:
        """Each server's underlay interface's counters, read there (since its boot: the
        runner takes differences)."""
        return [link_counters(i, self.access.run(
                    i, ["ip", "-j", "-s", "link", "show", "dev", f.interface]).stdout.decode())
                for i, f in enumerate(self.facts)]

    def stop(self) -> list[str]:
        """End the master connections (every session on every server ends with them)."""
        if self.access is not None:
            self.access.close()
            self.access = None
        return []


def preflight(targets: list[str], ssh_config: str | None = None,
              underlay: list[str] | None = None, wrap: tuple[str, ...] = ()) -> list[ServerFacts]:
    """:func:`probe` on connections of their own, closed after (the size guard asks this
    before a run); raises :class:`PreflightError` or ``ConnectionError`` naming the
    server."""
    import shutil
    import tempfile
    state = tempfile.mkdtemp(prefix="symphony-emu-preflight-")
    servers = Servers(targets, ssh_config, underlay, wrap=wrap)
    try:
        servers.start_ssh(state)
        return servers.facts
    finally:
        servers.stop()
        shutil.rmtree(state, ignore_errors=True)


_CHECKED: dict = {}


def checked(targets: tuple, ssh_config: str = "", underlay: tuple = ()) \
        -> tuple[list[ServerFacts], bool]:
    """:func:`preflight` once per process for the same servers (a sweep's points share
    it): their facts, and whether they were checked just now."""
    key = (tuple(targets), ssh_config, tuple(underlay))
    if key in _CHECKED:
        return _CHECKED[key], False
    _CHECKED[key] = preflight(list(targets), os.path.expanduser(ssh_config) or None,
                              list(underlay) or None)
    return _CHECKED[key], True
