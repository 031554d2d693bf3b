"""Fabric nodes on servers reached over ssh (docs/distributed.md): Mininet Cluster
Edition's ``RemoteMixin`` idea on this project's ssh access (``cluster.ssh``).

A node on a server keeps its whole life there: its shell is started through the
server's sshd (``ssh -tt <server> mnexec -cn bash ...``, so its network namespace is made
on that server and ends when the connection does), and everything a node does at start
(sysctls, ``tc``, routes, iptables, addresses) goes through that shell, as Mininet does
for every node; its pid is the server's, read from the shell (``echo $$``). Links between
two nodes of one server are veth pairs made by the first node's shell; links between
servers are VXLAN tunnel ends made through the server's ssh (``cluster.overlay``).
Why not ``RemoteMixin`` itself: it prefixes every command with ``sudo -E`` on both ends
and builds its own ssh command line, where this project logs in as root with a key of the
run's, through a coordinator namespace, over the connection ``cluster.ssh`` holds.

A switch's agent runs on its server too (:class:`RemoteFabricSwitch`): its configuration
is copied there, it writes its telemetry in the server's folder, which is copied back
when the switch stops, and its control commands run in the switch's shell there (the one
place its abstract socket can be reached from, over the connection the shell already
rides: no separate forwarding to keep). A host's process runs on its server the same way
(``emulator.launch.launcher``: its files in the server's folder, its protocol lines back
on the ssh channel). Every remote process runs on its ssh session's terminal, so the end
of the connection (the coordinator stopping, or dying) is a hangup that ends it. Each
node's shell and each process started on a server is also written into that server's
own ledger (``emulator.launch.ledger``), which ``clean`` reads there over ssh.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time

from topologies.fabric import FabricHost, FabricSwitch


SHELL_TIMEOUT_S = 60.0             # a remote shell's answer to one command, at most
TEARDOWN_ANSWER_S = 5.0            # every remote shell asked at once before teardown


class NodeLost(RuntimeError):
    """A node's remote shell stopped answering: its ssh session ended, or its server or
    the network to it did not answer in time."""


class OnServer:
    """Mixin: the node lives on ``server`` (an index into ``overlay``'s servers) and is
    reached over ``overlay.access`` once the servers' sshds run; until then (or with no
    server) it is an ordinary local node. A command its shell does not answer within
    :data:`SHELL_TIMEOUT_S` (or whose session ended) raises :class:`NodeLost` (Mininet
    would wait for ever), and the node is *lost*: later commands raise at once, or, once
    the fabric is tearing down (``tearing_down``), return nothing (what it made on its
    server ends with its session)."""

    def __init__(self, name, overlay=None, server: int | None = None, **params):
        self.overlay, self.server = overlay, server
        self._shell_start = False
        self.lost: str | None = None       # why the node's shell is gone
        self.tearing_down = False
        super().__init__(name, **params)

    def cmd(self, *args, **kwargs):
        if self.access is not None and self.lost:
            if self.tearing_down:
                return ""
            raise NodeLost(self.lost)
        return super().cmd(*args, **kwargs)

    def waitOutput(self, verbose=False, findPid=True):
        if self.access is None:
            return super().waitOutput(verbose, findPid)
        out, deadline = "", time.monotonic() + SHELL_TIMEOUT_S
        while self.waiting:
            if self.shell is None or self.shell.poll() is not None:
                self._lose("its ssh session ended")
            if time.monotonic() > deadline:
                self._lose(f"its shell did not answer within {SHELL_TIMEOUT_S:g} s")
            out += self.monitor(timeoutms=200, findPid=findPid)
        return out

    def _lose(self, why: str) -> None:
        self.waiting = False
        self.lost = f"{self.name} (server s{self.server}): {why}"
        if not self.tearing_down:
            raise NodeLost(self.lost)

    @property
    def access(self):
        ov = self.overlay
        return ov.access if ov is not None and self.server is not None else None

    def startShell(self, mnopts=None):
        if self.access is None:
            return super().startShell(mnopts)
        self._shell_start = True
        try:
            super().startShell("-c")   # not -d: the ssh session's terminal is the shell's
        finally:
            self._shell_start = False
        self.sendCmd("echo $$")        # the server's pid of the shell (holds the netns)
        self.pid = int(self.waitOutput().strip().splitlines()[-1])

    @property
    def server_dir(self) -> str:
        """This server's folder for the run (its own directory, not the run folder):
        ``<run>/servers/s<i>`` there, written and read only over ssh."""
        return self.overlay.server_dir(self.server)

    def there(self, path: str) -> str:
        return os.path.join(self.server_dir, os.path.basename(path))

    def deliver(self, path: str) -> str:
        there = self.there(path)
        self.access.put(self.server, path, there)
        return there

    def fetch(self, there: str, here: str) -> None:
        self.access.get(self.server, there, here)

    def terminate(self):
        """End the shell (its ssh session's hangup) and wait until it is gone on the
        server, so the fabric's teardown finds nothing of it left."""
        pid, a = self.pid, self.access
        super().terminate()
        if a is not None and pid and not self.lost:
            try:
                a.run(self.server, f"for i in $(seq 50); do kill -0 {int(pid)} 2>/dev/null "
                      f"|| exit 0; sleep 0.1; done; kill -9 {int(pid)}", check=False)
            except subprocess.SubprocessError:   # the server no longer answers: the
                pass                             # shell ends with its session there

    def popen(self, *args, **kwargs):
        record_as = kwargs.pop("record_as", None)
        if self.access is not None:
            # mnexec without -d: detaching would end the ssh session at once (and its
            # hangup the process); the session's terminal is the process's own. It
            # writes itself into the server's ledger first (pid and start time there)
            cmd = args[0] if args and isinstance(args[0], (list, tuple)) else list(args)
            what = record_as or \
                f"{self.name}: {' '.join(os.path.basename(str(c)) for c in cmd[:3])}"
            kwargs.setdefault("mncmd", [*self.overlay.recorded(self.server, what),
                                        "mnexec", "-a", str(self.pid)])
            # the environment and folder are the server's: what differs from this
            # process's goes on the command line
            env = kwargs.pop("env", None) or {}
            kwargs.pop("cwd", None)
            extra = [f"{k}={v}" for k, v in env.items() if os.environ.get(k) != v]
            if extra:
                kwargs["mncmd"] = ["env", *extra, *kwargs["mncmd"]]
        return super().popen(*args, **kwargs)

    def _popen(self, cmd, **params):
        a = self.access
        if a is not None:
            # on a terminal of the ssh session, so whatever it runs ends with the
            # connection (a hangup), even when this process is SIGKILLed
            cmd = a.argv(self.server, [str(c) for c in cmd], tty=True)
            params.setdefault("preexec_fn", os.setpgrp)   # Node.terminate kills the group
            if not self._shell_start:
                params.setdefault("stdin", subprocess.DEVNULL)   # never this terminal's
        return super()._popen(cmd, **params)


class RemoteFabricHost(OnServer, FabricHost):
    """A fabric host on a server reached over ssh."""


class RemoteFabricSwitch(OnServer, FabricSwitch):
    """A fabric switch on a server reached over ssh, its agent too: the agent's files
    live in the server's own folder (``server_dir``), delivered and collected over ssh;
    its control commands run in the switch's shell there; it stops on a SIGTERM sent
    there (the local ssh client's end would leave it writing its last records)."""

    def collect(self) -> None:
        """The agent's telemetry, back over ssh into the run folder (``<switch>.jsonl``,
        where the report reads it)."""
        if self.telemetry_path is None or self.access is None:
            return
        here = os.path.join(self.rundir, os.path.basename(self.telemetry_path))
        try:
            self.fetch(self.telemetry_path, here)
        except (RuntimeError, subprocess.SubprocessError) as e:   # never written, or
            # its server no longer answers: say so in the log
            with open(os.path.join(self.rundir, f"{self.name}.agent.log"), "a") as f:
                f.write(f"\nsymphony-emu: could not collect {self.telemetry_path}: {e}\n")

    def control(self, command: dict, timeout_s: float = 5.0) -> dict:
        out = self.cmd(shlex.join([sys.executable, "-m", "switch_agent.control",
                                   self.control_name, json.dumps(command),
                                   "--timeout", f"{timeout_s:g}"]))
        line = out.strip().splitlines()[-1] if out.strip() else "{}"
        try:
            reply = json.loads(line)
        except ValueError:
            raise OSError(f"{self.name}: the control command said {out.strip()[:200]!r}")
        if "unreachable" in reply:
            raise ConnectionRefusedError(f"{self.name}: {reply['unreachable']}")
        return reply

    def _pid_file(self) -> str:
        return os.path.join(self.server_dir, f"{self.name}.agent.pid")

    def popen_agent(self, cmd: list, **kwargs):
        """The agent process, in this switch's namespace on its server; its server pid is
        kept in a file there, so that :meth:`stop_agent` can signal it where it runs."""
        wrapped = ["sh", "-c", 'mkdir -p "$(dirname "$0")" && echo $$ > "$0" && exec "$@"',
                   self._pid_file(), *cmd]
        return self.popen(wrapped, record_as=f"agent {self.name}", **kwargs)

    def stop_agent(self, timeout_s: float = 5.0) -> int | None:
        proc = self.agent_proc
        if proc is not None and self.access is not None:
            pid_file = shlex.quote((self.agent_leader or self)._pid_file())
            # SIGTERM where it runs, then wait for it to write its final records
            try:
                self.access.run(self.server, f"p=$(cat {pid_file} 2>/dev/null) && kill -TERM "
                                f"$p && for i in $(seq {int(timeout_s * 10)}); do "
                                "kill -0 $p 2>/dev/null || break; sleep 0.1; done; true",
                                check=False, timeout_s=timeout_s + 5)
            except subprocess.SubprocessError:   # the server no longer answers: the
                pass                             # agent ends with its ssh session
        return super().stop_agent(timeout_s)


def answering(nodes: list, timeout_s: float = TEARDOWN_ANSWER_S) -> list:
    """Ask every remote node's shell at once for an answer (before a teardown, which
    talks to each); those with none within ``timeout_s`` are marked lost and returned."""
    asked = []
    for n in nodes:
        if n.lost or n.shell is None or n.shell.poll() is not None:
            n.lost = n.lost or f"{n.name} (server s{n.server}): its ssh session ended"
            continue
        if n.waiting:                      # an earlier command never finished
            n.lost = f"{n.name} (server s{n.server}): its shell was still busy"
            continue
        n.sendCmd("true")
        asked.append(n)
    deadline = time.monotonic() + timeout_s
    while any(n.waiting for n in asked) and time.monotonic() < deadline:
        for n in asked:
            if n.waiting and (n.shell.poll() is None):
                n.monitor(timeoutms=0)
            elif n.waiting:
                n.waiting = False
                n.lost = f"{n.name} (server s{n.server}): its ssh session ended"
        time.sleep(0.01)
    for n in asked:
        if n.waiting:
            n.waiting = False
            n.lost = f"{n.name} (server s{n.server}): its shell did not answer within " \
                     f"{timeout_s:g} s"
    return [n for n in nodes if n.lost]
