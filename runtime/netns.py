"""Sockets of another network namespace: how one process serves several hosts.

A socket belongs to the network namespace it was created in, whatever namespace the
process is in later, and ``setns(2)`` moves only the calling thread. So a process that
serves several emulated hosts (``hosts.group``) creates each host's sockets inside that
host's namespace -- it enters it, creates the socket and comes back -- and from then on
reads and writes them from its own: every packet still leaves and enters through the
host's own interface, routes and qdisc (docs/architecture.md §3.4).

Python 3.11 has no ``os.setns`` (3.12 does); below it, libc's through ctypes.
"""

from __future__ import annotations

import os
import socket

CLONE_NEWNET = 0x40000000
_libc = None


def setns(fd: int) -> None:
    """Move the calling thread into the network namespace open as ``fd``."""
    if hasattr(os, "setns"):                       # Python >= 3.12
        os.setns(fd, CLONE_NEWNET)
        return
    import ctypes
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"setns: {os.strerror(e)}")


def open_netns(pid: int | None = None) -> int:
    """A file descriptor of the network namespace of process ``pid`` (None: this one)."""
    path = f"/proc/{pid}/ns/net" if pid else "/proc/self/ns/net"
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


class Namespace:
    """The network namespace of process ``pid`` (that of a host's shell), for creating
    sockets in it from a single-threaded process. ``pid=None``: this process's own, where
    :meth:`socket` is plain ``socket.socket``."""

    def __init__(self, pid: int | None = None):
        self.pid = pid
        self._fd = open_netns(pid) if pid else None
        self._home = open_netns() if pid else None

    def run(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` with this thread in the namespace (sockets it makes, names
        it resolves: ``socket.if_nametoindex``), then back home."""
        if self._fd is None:
            return fn(*args, **kwargs)
        setns(self._fd)
        try:
            return fn(*args, **kwargs)
        finally:
            setns(self._home)

    def socket(self, family=socket.AF_INET, type=socket.SOCK_DGRAM, proto=0) -> socket.socket:
        return self.run(socket.socket, family, type, proto)

    def proc_path(self, name: str) -> str:
        """A ``/proc/net`` file (``snmp``, ...) as the namespace's own processes see it."""
        return f"/proc/{self.pid}/net/{name}" if self.pid else f"/proc/net/{name}"

    def close(self) -> None:
        for fd in (self._fd, self._home):
            if fd is not None:
                os.close(fd)
        self._fd = self._home = None
