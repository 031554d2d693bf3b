"""The kernel's view of this switch's egress queues: one rtnetlink qdisc dump (RTM_GETQDISC)
gives, per port, the bytes its shaper has sent and the bytes waiting in its FIFO(s).

The fidelity monitor (docs/architecture.md §8) compares them with the agent's queue model, and checks
Mininet-HiFi's invariant: while a port stays backlogged, it must send at its configured
rate. Why not pyroute2's ``get_qdiscs()``: it took 1.65 ms per dump of two qdiscs on this
machine; an agent samples 10 times a second on each of 8 switches, so that alone would
cost a tenth of a core. This parses only what the monitor needs (the kind and the
``tc_stats`` block that every qdisc dump carries) in tens of microseconds.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass
from typing import Callable

RTM_NEWQDISC = 36
RTM_GETQDISC = 38
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST = 1
NLM_F_DUMP = 0x300
TCA_KIND = 1
TCA_STATS = 3
TC_H_ROOT = 0xFFFFFFFF
LEAF_KINDS = ("bfifo", "pfifo", "pfifo_fast", "fq", "tbf")

_NLMSGHDR = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BxxxiIII")          # family, ifindex, handle, parent, info
_NLATTR = struct.Struct("=HH")
# struct tc_stats: bytes (u64), packets, drops, overlimits, bps, pps, qlen, backlog (u32)
_TC_STATS = struct.Struct("=QIIIIIII")


@dataclass(frozen=True)
class QdiscStats:
    ifindex: int
    kind: str
    root: bool
    bytes: int
    packets: int
    drops: int
    backlog_bytes: int


@dataclass(frozen=True)
class PortSample:
    sent_bytes: int          # by the root qdisc (the port's shaper)
    backlog_bytes: int       # waiting in its leaf FIFOs
    drops: int               # tail drops of the leaf FIFOs


def parse_dump(data: bytes) -> tuple[list[QdiscStats], bool]:
    """Qdiscs in one netlink datagram of a dump, and whether the dump is finished."""
    out, off, done = [], 0, False
    while off + _NLMSGHDR.size <= len(data):
        length, mtype, _, _, _ = _NLMSGHDR.unpack_from(data, off)
        if length < _NLMSGHDR.size:
            break
        if mtype == NLMSG_DONE:
            done = True
        elif mtype == NLMSG_ERROR:
            err = struct.unpack_from("=i", data, off + _NLMSGHDR.size)[0]
            if err:
                raise OSError(-err, f"RTM_GETQDISC: {socket.errno.errorcode.get(-err, err)}")
        elif mtype == RTM_NEWQDISC:
            _, ifindex, _, parent, _ = _TCMSG.unpack_from(data, off + _NLMSGHDR.size)
            kind, stats = "", None
            a = off + _NLMSGHDR.size + _TCMSG.size
            end = off + length
            while a + _NLATTR.size <= end:
                alen, atype = _NLATTR.unpack_from(data, a)
                if alen < _NLATTR.size:
                    break
                body = data[a + _NLATTR.size:a + alen]
                if atype == TCA_KIND:
                    kind = body.rstrip(b"\0").decode()
                elif atype == TCA_STATS and len(body) >= _TC_STATS.size:
                    stats = _TC_STATS.unpack_from(body)
                a += (alen + 3) & ~3
            if stats is not None:
                b, p, d, _, _, _, _, backlog = stats
                out.append(QdiscStats(ifindex, kind, parent == TC_H_ROOT, b, p, d, backlog))
        off += (length + 3) & ~3
    return out, done


def port_samples(qdiscs: list[QdiscStats], ifindexes) -> dict[int, PortSample]:
    """Per port: the root qdisc's sent bytes, the backlog and drops of its leaf FIFOs."""
    out = {}
    for ifindex in ifindexes:
        mine = [q for q in qdiscs if q.ifindex == ifindex]
        root = next((q for q in mine if q.root), None)
        if root is None:
            continue
        leaves = [q for q in mine if not q.root and q.kind in LEAF_KINDS] or [root]
        out[ifindex] = PortSample(root.bytes, sum(q.backlog_bytes for q in leaves),
                                  sum(q.drops for q in leaves))
    return out


class KernelQueues:
    """An rtnetlink socket in the current network namespace; ``clock``: the time of a
    dump (the agent's, ``time.monotonic``)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.bind((0, 0))
        self.seq = 0
        self.clock = clock
        self.t_s = 0.0      # when the last dump's counters were read

    def dump(self) -> list[QdiscStats]:
        """Every qdisc's counters. The kernel fills a dump's first message while it takes
        the request (``netlink_dump_start``), so that is when they were read: ``t_s``,
        the instant to compare them at, however late the process reads the replies."""
        self.seq += 1
        req = _NLMSGHDR.pack(_NLMSGHDR.size + _TCMSG.size, RTM_GETQDISC,
                             NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) + \
            _TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)
        self.sock.send(req)
        self.t_s = self.clock()
        out = []
        while True:
            qs, done = parse_dump(self.sock.recv(65536))
            out += qs
            if done:
                return out

    def sample(self, ifindexes) -> dict[int, PortSample]:
        return port_samples(self.dump(), ifindexes)

    def close(self) -> None:
        self.sock.close()
