"""The host's software RDMA NIC on real sockets: :class:`hosts.nic_core.NicCore`'s logic
behind UDP sockets in the host's namespace.

One :class:`Nic` per host. Its sockets:

* one UDP socket on port 4791 that receives everything addressed to the host (data,
  ACK/NAK, CNP), with each datagram's TOS byte (the ECN bits) and the kernel's arrival
  time, and sends the ACKs, NAKs and CNPs;
* one sending UDP socket per flow, bound to the flow's source port, DF set, ECT(0);
* on a lossless fabric (``pfc``), a raw socket for MAC control (EtherType 0x8808) that
  receives the leaf's 802.1Qbb PAUSE frames (``NicCore.on_pause``: data waits, ACKs and
  CNPs do not).

The layer above calls :meth:`~hosts.nic_core.NicCore.send` and gets a callback per
delivered message; it runs the loop with :meth:`Nic.run_until` (one NIC) or
:meth:`~hosts.nic_core.NicCore.service` and :meth:`Nic.receive` (``hosts.group``, many).
"""

from __future__ import annotations

import select
import socket
import struct
import time
from typing import Callable

from hosts.cc import CcConfig
from hosts.config import TransportParams
from hosts.nic_core import NicCore
from runtime import wire

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)     # not in Python's socket module
TIMESPEC = struct.Struct("=qq")
ETH_P_MAC_CONTROL = 0x8808                                 # runtime.pause


class Nic(NicCore):
    def __init__(self, ip: str, line_rate_bps: float, cc: CcConfig,
                 transport: TransportParams, *,
                 on_message: Callable | None = None, telemetry=None,
                 clock: Callable[[], float] = time.monotonic,
                 socket_factory: Callable[..., socket.socket] = socket.socket,
                 pfc: bool = False):
        super().__init__(ip, line_rate_bps, cc, transport, on_message=on_message,
                         telemetry=telemetry, clock=clock)
        # sockets come from the factory: a process serving several hosts creates each in
        # its host's namespace (runtime.netns)
        self._socket = socket_factory
        self.sock = socket_factory(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        # the kernel's arrival time of each datagram: how long it waited for this process
        # (the host side of the emulation's delay, beside the agents' NFQUEUE hold)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        self.sock.bind((ip, wire.ROCE_UDP_PORT))
        self.sock.setblocking(False)
        self._cmsg = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(TIMESPEC.size)
        # one receive buffer, reused for every packet (no per-packet allocation)
        self._rbuf = bytearray(65536)
        self._rview = memoryview(self._rbuf)
        self._rlist = [self.sock]
        self.mac: socket.socket | None = None      # PAUSE frames in (a lossless fabric)
        if pfc:
            self.mac = socket_factory(socket.AF_PACKET, socket.SOCK_RAW,
                                      socket.htons(ETH_P_MAC_CONTROL))
            self.mac.setblocking(False)
            self._rlist.append(self.mac)
        self._drained = False              # the last poll read the socket empty
        self.rx_lag_s = [0, 0.0, 0.0]               # datagrams, sum, max: arrival -> read

    # --- the doors ---------------------------------------------------------------------
    def _open_port(self, sport: int) -> socket.socket:
        s = self._socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, wire.ECN_ECT0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.ip, sport))
        s.setblocking(False)
        return s

    def _close_port(self, port: socket.socket) -> None:
        port.close()

    def _tx_data(self, port: socket.socket, frame: memoryview, addr: tuple) -> bool:
        try:
            port.sendto(frame, addr)
        except (BlockingIOError, OSError):
            return False
        return True

    def _tx_control(self, frame: bytes, dst: str) -> bool:
        try:
            self.sock.sendto(frame, (dst, wire.ROCE_UDP_PORT))
        except OSError:
            return False
        return True

    # --- the loop ----------------------------------------------------------------------
    def run_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Run the NIC until ``predicate()`` holds; False on timeout."""
        deadline = self.clock() + timeout_s
        while not predicate():
            now = self.clock()
            if now >= deadline:
                return False
            self.poll(deadline - now)
        return True

    def poll(self, max_wait_s: float) -> None:
        """One turn: receive what arrived, send what is due, then sleep until the next
        departure, retransmission timeout or arrival, ``max_wait_s`` at most. The caller
        sees every completion (a message delivered, a send acknowledged) when the poll
        returns: an arrival that ends the sleep is handled before returning, and a poll
        that finds one waiting at its start returns without sleeping."""
        done = self.completions
        if self._drained:      # what came since then makes the select below return at once
            self._drained = False
        else:
            self.receive()
        now = self.clock()
        wait = min(max_wait_s, self.service(now) - now)
        if wait > 0 and self.completions == done \
                and select.select(self._rlist, [], [], wait)[0]:
            self.receive()
            self._drained = True

    @property
    def fds(self) -> list[int]:
        """What the NIC reads from: its UDP socket, and on a lossless fabric its PAUSE
        socket (:meth:`receive` drains both)."""
        return [s.fileno() for s in self._rlist]

    def _receive_pauses(self) -> None:
        mac, clock = self.mac, self.clock
        assert mac is not None
        while True:
            try:
                frame = mac.recv(128)
            except (BlockingIOError, InterruptedError):
                return
            self.on_pause(frame, clock())

    def receive(self) -> None:
        """Handle every datagram waiting on the host's socket (read into one reused buffer),
        the PAUSE frames first."""
        if self.mac is not None:
            self._receive_pauses()
        recvmsg_into, bufs, view = self.sock.recvmsg_into, [self._rbuf], self._rview
        clock, lag, unpack_ts, on_datagram = self.clock, self.rx_lag_s, TIMESPEC.unpack, \
            self.on_datagram
        # the kernel stamps arrivals in CLOCK_REALTIME; the NIC's clock is monotonic
        offset = time.time() - clock()
        while True:
            try:
                n, anc, _, addr = recvmsg_into(bufs, self._cmsg)
            except BlockingIOError:
                return
            now = clock()
            tos = 0
            for _, _, c in anc:               # the timestamp (16 bytes), then the TOS (1)
                if len(c) == 16:
                    sec, nsec = unpack_ts(c)
                    late = now + offset - sec - nsec * 1e-9
                    lag[0] += 1
                    lag[1] += late
                    if late > lag[2]:
                        lag[2] = late
                else:
                    tos = c[0]
            on_datagram(view[:n], addr[0], addr[1], tos, now)

    def close(self) -> None:
        for f in list(self.senders.values()):
            f.port.close()
        self.sock.close()
        if self.mac is not None:
            self.mac.close()

    def stats(self) -> dict:
        m, lag, lag_max = self.rx_lag_s
        return {**super().stats(),
                "rx_lag": {"packets": m, "mean_s": lag / m if m else 0.0, "max_s": lag_max}}
