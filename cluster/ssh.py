"""ssh to the servers a fabric spans (docs/distributed.md, issue "Past one machine").

The coordinator reaches every server only over ssh, the way Mininet Cluster Edition's
``RemoteMixin`` does: one multiplexed master connection per server, every command a
session on it. :class:`SshAccess` runs commands and moves files over those connections;
each master is a child of the coordinator that dies with it, so a SIGKILLed coordinator
ends every session, and the hangup of their terminals ends what they ran.

Two ways in: :func:`run_keys`, a key, ``known_hosts`` and ``ssh_config`` made for the run
(stand-in servers: :meth:`cluster.overlay.StandInServers.start_ssh` runs Debian's
``sshd`` in each stand-in server's namespace on its underlay address, accepting only that
key); and :func:`users_ssh`, the user's own set-up (real servers, ``--servers``: their
``~/.ssh/config`` or a given file, keys, agent and ``known_hosts``, never a prompt). ssh
itself is not reimplemented: the OpenSSH client and server are used as they are.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import tempfile
import time

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


def destination(target: str) -> str:
    """What ssh connects to for a server given as ``[user@]host[:port]`` (an alias of the
    user's ssh configuration, an address or a name): ``ssh://user@host:port`` with a
    port, else the target as it is."""
    user, at, hostport = target.rpartition("@")
    host, colon, port = hostport.partition(":")
    if colon:
        return f"ssh://{user}{at}{host}:{port}"
    return target


def check_target(target: str) -> str | None:
    """Why ``target`` is not a server's ``[user@]host[:port]`` (None: it is)."""
    if not isinstance(target, str) or not target:
        return "a server is a string, [user@]host[:port]"
    user, at, hostport = target.rpartition("@")
    host, colon, port = hostport.partition(":")
    if at and not user or not host or any(c.isspace() or c in "/'\"$;&|`" for c in target):
        return "not [user@]host[:port]"
    if colon and not (port.isdigit() and 1 <= int(port) <= 65535):
        return f"port {port!r} is not 1..65535"
    return None


class SshAccess:
    """The coordinator's ssh to its servers: server ``i`` reached as ``destinations[i]``
    with the ssh ``options`` (a configuration file, keys), named ``labels[i]`` in errors.
    Each server gets one master connection (:meth:`connect`), a child of this process
    that dies with it, so that a SIGKILLed coordinator ends every session on every server
    (their processes get the hangup of their terminal); every command rides it.
    ``wrap``: a prefix for every ssh argv (on one machine, ``ip netns exec <coordinator
    namespace>``). Made by :func:`run_keys` (stand-in servers, the run's own keys) or
    :func:`users_ssh` (real servers, the user's ssh set-up)."""

    def __init__(self, state_dir: str, destinations: list[str], options: list[str],
                 labels: list[str], *, wrap: tuple[str, ...] = (), note_dir=None,
                 note_process=None):
        self.state_dir = state_dir
        self.destinations, self.options = list(destinations), list(options)
        self.addresses = list(labels)            # what errors name each server by
        self.wrap = tuple(wrap)
        self.note_process = note_process
        self.masters: dict[int, subprocess.Popen] = {}
        os.makedirs(state_dir, exist_ok=True)
        # a ControlMaster socket's path, with the 17 characters ssh adds while making
        # it, must fit a Unix socket address (107 bytes): a deep run folder gets a short
        # folder of its own for them, removed by close() -- and, named to ``note_dir``
        # (the run's ledger) before it exists, by ``clean`` after a SIGKILL
        self.control_dir = state_dir
        if len(os.path.join(state_dir, f"cm-s{len(destinations)}")) + 17 > MAX_SOCKET_PATH:
            self.control_dir = os.path.join(tempfile.gettempdir(),
                                            f"symphony-emu-ssh-{secrets.token_hex(6)}")
            if note_dir is not None:
                note_dir(self.control_dir)
            os.mkdir(self.control_dir, 0o700)

    @staticmethod
    def name(server: int) -> str:
        return f"s{server}"

    def __len__(self) -> int:
        return len(self.destinations)

    def label(self, server: int) -> str:
        return f"server {self.name(server)} ({self.addresses[server]})"

    def control_socket(self, server: int) -> str:
        return os.path.join(self.control_dir, f"cm-{self.name(server)}")

    def connect(self, server: int, timeout_s: float = 10.0) -> None:
        """Open ``server``'s master connection (once); raises, naming the server and
        quoting ssh, if it is not up within ``timeout_s``."""
        if server in self.masters and self.masters[server].poll() is None:
            return
        sock = self.control_socket(server)
        log_path = os.path.join(self.state_dir, f"master-{self.name(server)}.log")
        from topologies.fabric import popen_tied
        with open(log_path, "wb") as log:
            p = popen_tied(
                [*self.wrap, "ssh", *self.options, "-S", sock, "-M", "-N",
                 "-o", "ControlPersist=no", self.destinations[server]],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        self.masters[server] = p
        if self.note_process is not None:
            self.note_process(f"ssh master {self.name(server)}", p.pid)
        deadline = time.monotonic() + timeout_s
        while True:
            up = subprocess.run([*self.wrap, "ssh", *self.options, "-S", sock, "-O", "check",
                                 self.destinations[server]], capture_output=True, timeout=10)
            if up.returncode == 0:
                return
            if p.poll() is not None or time.monotonic() > deadline:
                if p.poll() is None:
                    p.kill()
                    p.wait()
                with open(log_path, "rb") as f:
                    said = f.read().decode(errors="replace").strip()[-400:]
                raise ConnectionError(f"{self.label(server)}: no ssh connection within "
                                      f"{timeout_s:g} s; ssh said: {said or 'nothing'}")
            time.sleep(0.1)

    def argv(self, server: int, command: list[str] | str, tty: bool = False) -> list[str]:
        """The argv that runs ``command`` (a list: quoted for the remote shell; a string:
        as it is) on ``server``; ``tty``: on a terminal of its own there (a node's
        interactive shell, as Mininet Cluster Edition runs it: it ends when the
        connection does)."""
        remote = command if isinstance(command, str) else shlex.join(command)
        return [*self.wrap, "ssh", *self.options, "-S", self.control_socket(server),
                "-o", "ControlMaster=no", *(["-tt"] if tty else []),
                self.destinations[server], remote]

    def run(self, server: int, command: list[str] | str, *, input: bytes | None = None,
            timeout_s: float = 30.0, check: bool = True) -> subprocess.CompletedProcess:
        """Run ``command`` on ``server``; its stdout and stderr as bytes. ``check``: a
        non-zero exit raises, naming the server and what it said."""
        r = subprocess.run(self.argv(server, command), input=input, capture_output=True,
                           timeout=timeout_s)
        if check and r.returncode != 0:
            raise RuntimeError(f"{self.label(server)}: {command!r} exited {r.returncode}: "
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

    def one_shot(self, server: int) -> list[str]:
        """The ssh argv prefix that reaches ``server`` on a connection of its own (no
        master: for ``clean``, after the run that held the masters is gone)."""
        return [*self.wrap, "ssh", *self.options, "-o", "ControlMaster=no",
                "-o", "ControlPath=none", self.destinations[server]]

    def close(self) -> None:
        """End each server's master connection (and with it every session on it)."""
        for i, p in self.masters.items():
            if p.poll() is None:
                subprocess.run([*self.wrap, "ssh", *self.options, "-S", self.control_socket(i),
                                "-O", "exit", self.destinations[i]], capture_output=True,
                               timeout=10)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.masters = {}
        if self.control_dir != self.state_dir:
            shutil.rmtree(self.control_dir, ignore_errors=True)


def run_keys(state_dir: str, addresses: list[str], host_keys: list[str], user: str = "root",
             wrap: tuple[str, ...] = (), note_dir=None, note_process=None) -> SshAccess:
    """Access with the run's own key (``<state_dir>/id_ed25519``) to servers whose host
    keys are ``host_keys`` (written as ``known_hosts``: strict checking, never a prompt),
    through an ``ssh_config`` naming each server ``s0``, ``s1``, ... (stand-in servers)."""
    config = os.path.join(state_dir, "ssh_config")
    known = os.path.join(state_dir, "known_hosts")
    with open(known, "w") as f:
        for addr, key in zip(addresses, host_keys):
            f.write(f"{addr} {' '.join(key.split()[:2])}\n")
    with open(config, "w") as f:
        for i, addr in enumerate(addresses):
            f.write("\n".join([
                f"Host {SshAccess.name(i)}", f"  HostName {addr}", f"  Port {SSH_PORT}",
                f"  User {user}", f"  IdentityFile {os.path.join(state_dir, 'id_ed25519')}",
                "  IdentitiesOnly yes", f"  UserKnownHostsFile {known}",
                "  GlobalKnownHostsFile /dev/null", "  StrictHostKeyChecking yes",
                "  BatchMode yes", f"  ConnectTimeout {CONNECT_TIMEOUT_S}",
                "  LogLevel ERROR", "", ""]))
    access = SshAccess(state_dir, [SshAccess.name(i) for i in range(len(addresses))],
                       ["-F", config], addresses, wrap=wrap, note_dir=note_dir,
                       note_process=note_process)
    access.key, access.config = os.path.join(state_dir, "id_ed25519"), config
    return access


def users_ssh(state_dir: str, targets: list[str], ssh_config: str | None = None,
              wrap: tuple[str, ...] = (), note_dir=None, note_process=None) -> SshAccess:
    """Access to real servers ``targets`` (``[user@]host[:port]``) as the user reaches
    them: their ssh configuration (``~/.ssh/config``, or ``ssh_config``), keys, agent and
    ``known_hosts``; never a prompt (``BatchMode``: a server whose host key is unknown,
    or that wants a password, fails at once, saying so)."""
    options = [*(["-F", ssh_config] if ssh_config else []), "-o", "BatchMode=yes",
               "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}", "-o", "LogLevel=ERROR"]
    return SshAccess(state_dir, [destination(t) for t in targets], options, list(targets),
                     wrap=wrap, note_dir=note_dir, note_process=note_process)
