"""Fabric nodes on servers reached over ssh (docs/distributed.md): Mininet Cluster
Edition's ``RemoteMixin`` idea on this project's ssh access (``topologies.ssh``).

A node on a server keeps its whole life there: its shell is started through the
server's sshd (``ssh -tt <server> mnexec -cn bash ...``, so its network namespace is made
on that server and ends when the connection does), and everything a node does at start
(sysctls, ``tc``, routes, iptables, addresses) goes through that shell, as Mininet does
for every node; its pid is the server's, read from the shell (``echo $$``). Links between
two nodes of one server are veth pairs made by the first node's shell; links between
servers are VXLAN tunnel ends made through the server's ssh (``topologies.overlay``).
Why not ``RemoteMixin`` itself: it prefixes every command with ``sudo -E`` on both ends
and builds its own ssh command line, where this project logs in as root with a key of the
run's, through a coordinator namespace, over the connection ``topologies.ssh`` holds.

Not yet (issue "Past one machine"): the switch agents and host processes on the servers
(``start_agents`` and the launcher still start them on this machine, entering the nodes'
namespaces by pid), their telemetry collected back, and a ledger per server.
"""

from __future__ import annotations

import os

from topologies.fabric import FabricHost, FabricSwitch


class OnServer:
    """Mixin: the node lives on ``server`` (an index into ``overlay``'s servers) and is
    reached over ``overlay.access`` once the servers' sshds run; until then (or with no
    server) it is an ordinary local node."""

    def __init__(self, name, overlay=None, server: int | None = None, **params):
        self.overlay, self.server = overlay, server
        self._shell_start = False
        super().__init__(name, **params)

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

    def _popen(self, cmd, **params):
        a = self.access
        if a is not None:
            cmd = a.argv(self.server, [str(c) for c in cmd], tty=self._shell_start)
            params.setdefault("preexec_fn", os.setpgrp)   # Node.terminate kills the group
        return super()._popen(cmd, **params)


class RemoteFabricHost(OnServer, FabricHost):
    """A fabric host on a server reached over ssh."""


class RemoteFabricSwitch(OnServer, FabricSwitch):
    """A fabric switch on a server reached over ssh (its agent: not yet, see above)."""
