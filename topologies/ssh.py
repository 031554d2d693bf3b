"""ssh to the servers a fabric spans (docs/distributed.md, issue "Past one machine").

The coordinator reaches every server only over ssh, the way Mininet Cluster Edition's
``RemoteMixin`` does (one multiplexed connection per server, ``ControlMaster``), with
everything the connection needs kept in one state folder of the run: the client key, the
servers' host keys as ``known_hosts`` (so ``StrictHostKeyChecking`` holds without ever
asking), the ControlMaster sockets and an ``ssh_config`` naming each server ``s0``,
``s1``, ... :class:`SshAccess` runs commands and moves files over those connections.

On one machine, :meth:`topologies.overlay.StandInServers.start_ssh` makes it real: an
``sshd`` of Debian's openssh-server in each stand-in server's namespace, listening on the
server's underlay address only, accepting only this run's key; and the coordinator's
client in a namespace of its own on the underlay, so nothing reaches a server except
through its sshd. (ssh itself is not reimplemented: the OpenSSH client and server are
used as they are, and this module only writes their configuration.)
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import tempfile

SSHD = "/usr/sbin/sshd"
SSH_PORT = 22
CONNECT_TIMEOUT_S = 5
MAX_SOCKET_PATH = 107              # sun_path's 108 bytes, less the terminating NUL


def _keygen(path: str, comment: str) -> str:
    """An ed25519 key pair at ``path`` (no passphrase); returns the public key line."""
    if not os.path.exists(path):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment,
                        "-f", path], check=True, capture_output=True)
    with open(path + ".pub") as f:
        return f.read().strip()


def sshd_config(state_dir: str, server: int, address: str, authorized_keys: str) -> str:
    """The configuration of server ``server``'s sshd: its own host key, on its underlay
    address only, public-key login as root with this run's key and nothing else."""
    return "\n".join([
        f"ListenAddress {address}:{SSH_PORT}",
        f"HostKey {os.path.join(state_dir, f'host{server}_ed25519')}",
        f"PidFile {os.path.join(state_dir, f'sshd{server}.pid')}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        "UsePAM no",
        "StrictModes no",              # the state folder belongs to the run, not to ~root
        "AllowTcpForwarding no",
        "X11Forwarding no",
        "AllowStreamLocalForwarding local",   # control sockets forwarded to the coordinator
        # every node's shell and process is a session of the one multiplexed connection
        # (sshd's default, 10, is fewer than a pod's nodes)
        "MaxSessions 1000",
        "MaxStartups 100:30:200",
        "PrintMotd no",
        "LogLevel ERROR",
        "",
    ])


class SshAccess:
    """The coordinator's ssh to ``addresses`` (server i at ``addresses[i]``), all of its
    state in ``state_dir``. ``wrap``: a prefix for every ssh/scp argv (on one machine,
    ``ip netns exec <coordinator namespace>``)."""

    def __init__(self, state_dir: str, addresses: list[str], host_keys: list[str],
                 user: str = "root", wrap: tuple[str, ...] = (), note_dir=None):
        self.state_dir, self.addresses, self.user = state_dir, list(addresses), user
        self.wrap = tuple(wrap)
        self.key = os.path.join(state_dir, "id_ed25519")
        # a ControlMaster socket's path, with the 17 characters ssh adds while making
        # it, must fit a Unix socket address (107 bytes): a deep run folder gets a short
        # folder of its own for them, removed by close() -- and, named to ``note_dir``
        # (the run's ledger) before it exists, by ``clean`` after a SIGKILL
        self.control_dir = state_dir
        if len(os.path.join(state_dir, f"cm-s{len(addresses)}")) + 17 > MAX_SOCKET_PATH:
            self.control_dir = os.path.join(tempfile.gettempdir(),
                                            f"symphony-emu-ssh-{secrets.token_hex(6)}")
            if note_dir is not None:
                note_dir(self.control_dir)
            os.mkdir(self.control_dir, 0o700)
        self.config = os.path.join(state_dir, "ssh_config")
        known = os.path.join(state_dir, "known_hosts")
        with open(known, "w") as f:
            for addr, key in zip(addresses, host_keys):
                f.write(f"{addr} {' '.join(key.split()[:2])}\n")
        with open(self.config, "w") as f:
            for i, addr in enumerate(addresses):
                f.write("\n".join([
                    f"Host {self.name(i)}", f"  HostName {addr}", f"  Port {SSH_PORT}",
                    f"  User {user}", f"  IdentityFile {self.key}", "  IdentitiesOnly yes",
                    f"  UserKnownHostsFile {known}", "  GlobalKnownHostsFile /dev/null",
                    "  StrictHostKeyChecking yes", "  BatchMode yes",
                    f"  ConnectTimeout {CONNECT_TIMEOUT_S}", "  ControlMaster auto",
                    f"  ControlPath {os.path.join(self.control_dir, 'cm-%n')}",
                    "  ControlPersist yes", "  LogLevel ERROR", "", ""]))

    @staticmethod
    def name(server: int) -> str:
        return f"s{server}"

    def control_socket(self, server: int) -> str:
        return os.path.join(self.control_dir, f"cm-{self.name(server)}")

    def argv(self, server: int, command: list[str] | str, tty: bool = False) -> list[str]:
        """The argv that runs ``command`` (a list: quoted for the remote shell; a string:
        as it is) on ``server``; ``tty``: on a terminal of its own there (a node's
        interactive shell, as Mininet Cluster Edition runs it: it ends when the
        connection does)."""
        remote = command if isinstance(command, str) else shlex.join(command)
        return [*self.wrap, "ssh", "-F", self.config, *(["-tt"] if tty else []),
                self.name(server), remote]

    def run(self, server: int, command: list[str] | str, *, input: bytes | None = None,
            timeout_s: float = 30.0, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``command`` on ``server``; its stdout and stderr as bytes. ``check``: a
        non-zero exit raises, naming the server and what it said."""
        r = subprocess.run(self.argv(server, command), input=input, capture_output=True,
                           timeout=timeout_s)
        if check and r.returncode != 0:
            raise RuntimeError(f"server {self.name(server)} ({self.addresses[server]}): "
                               f"{command!r} exited {r.returncode}: "
                               f"{r.stderr.decode(errors='replace').strip()[:500]}")
        return r

    def popen(self, server: int, command: list[str] | str, **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.argv(server, command), **kwargs)

    def put(self, server: int, local: str, remote: str) -> None:
        """Copy the file ``local`` to ``remote`` on ``server`` (its folder is made)."""
        with open(local, "rb") as f:
            data = f.read()
        folder = os.path.dirname(remote) or "."
        self.run(server, f"mkdir -p {shlex.quote(folder)} && cat > {shlex.quote(remote)}",
                 input=data)

    def get(self, server: int, remote: str, local: str) -> None:
        """Copy ``remote`` on ``server`` to the file ``local``."""
        data = self.run(server, ["cat", remote]).stdout
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        with open(local, "wb") as f:
            f.write(data)

    def close(self) -> None:
        """End each server's multiplexed connection (its master process exits)."""
        for i in range(len(self.addresses)):
            if os.path.exists(self.control_socket(i)):
                subprocess.run([*self.wrap, "ssh", "-F", self.config, "-O", "exit",
                                self.name(i)], capture_output=True, timeout=10)
        if self.control_dir != self.state_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)
