"""The host's software RDMA NIC: RoCEv2-framed queue pairs over UDP.

One :class:`Nic` per host process. It owns:

* one UDP socket on port 4791 that receives everything addressed to the host (data,
  ACK/NAK, CNP) and sends the ACKs, NAKs and CNPs;
* one sending UDP socket per flow, bound to the flow's source port (RoCEv2's ECMP
  entropy: by default a hash of (job, channel, step, sender), so each step's flow picks
  its own path), DF set, ECT(0);
* the NIC scheduler: a single send loop that serves the active queue pairs round-robin,
  each paced at its own congestion-control rate, the sum never above the host's line
  rate (so the host's qdisc stays near empty, as behind a real NIC);
* per flow, a go-back-N sender or receiver (``hosts.gbn``) and the rate controller its
  ``hosts.cc.CcConfig`` names; per host, the notification point that turns CE marks into CNPs.

A flow is one message of one (job, channel, step) between two hosts: one QP, PSN from 0.
The layer above calls :meth:`Nic.send` and gets a callback per delivered message; it runs
the loop with :meth:`Nic.run_until`. Telemetry is aggregated per flow (start, end, bytes,
retransmissions, NAKs, CNPs, rate samples) and for the NIC (pacing error), never a line
per packet.
"""

from __future__ import annotations

import math
import select
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable

from hosts import wire
from hosts.config import TransportParams
from hosts.cc import CcConfig, CongestionControl, NotificationPoint
from hosts.gbn import ACK, GbnReceiver, GbnSender

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)     # not in Python's socket module
TIMESPEC = struct.Struct("=qq")
SPORT_BASE = 49152
SPORT_SPAN = 16384
WIRE_EXTRA_BYTES = wire.IPV4_HEADER_BYTES + wire.UDP_HEADER_BYTES + 14  # IP + UDP + Ethernet


def flow_sport(job: int, channel: int, step: int, sender_ip: str, per_step: bool = True,
               seed: int = 0) -> int:
    """UDP source port of a flow: a hash of (job, channel, step, sender) in the dynamic
    range, or of (job, channel, sender) with ``per_step=False`` (a long-lived connection).
    ``seed`` (the run's) salts it: the kernel's ECMP hash key is fixed for the machine's
    uptime, so without it every run and seed would take the very same paths."""
    key = f"{job}/{channel}/{step if per_step else '-'}/{sender_ip}"
    key = (key if not seed else f"{key}/{seed}").encode()
    return SPORT_BASE + zlib.crc32(key) % SPORT_SPAN


@dataclass
class SendFlow:
    key: tuple                  # (peer_ip, pkey, dqpn)
    job: int
    channel: int
    step: int
    peer: str
    sport: int
    data: memoryview
    frames_hdr: tuple            # (pkey, dqpn)
    gbn: GbnSender
    cc: CongestionControl
    sock: socket.socket
    start_s: float
    on_complete: Callable | None
    t_next_s: float = 0.0
    end_s: float | None = None
    bytes_sent: int = 0
    rate_samples: list = field(default_factory=list)
    t_sample_s: float = 0.0
    addr: tuple = ()             # (peer, 4791): sendto's destination
    icrc_seeds: dict = field(default_factory=dict)   # frame length -> wire.icrc_seed


@dataclass
class RecvFlow:
    key: tuple
    job: int
    channel: int
    step: int
    peer: str
    gbn: GbnReceiver
    start_s: float
    message: bytearray = field(default_factory=bytearray)   # delivered bytes, in order
    nbytes: int = 0
    ce: int = 0
    cnps: int = 0
    end_s: float | None = None
    goodput_samples: list = field(default_factory=list)
    t_sample_s: float = 0.0


class Nic:
    def __init__(self, ip: str, line_rate_bps: float, cc: CcConfig,
                 transport: TransportParams, *,
                 on_message: Callable | None = None, telemetry=None,
                 clock: Callable[[], float] = time.monotonic,
                 socket_factory: Callable[..., socket.socket] = socket.socket):
        if abs(cc.params.line_rate_bps - line_rate_bps) > 1e-6 * line_rate_bps:
            raise ValueError(f"congestion control {cc.name} line rate {cc.params.line_rate_bps} "
                             f"differs from the NIC's {line_rate_bps}")
        self.ip = ip
        self._ip_bytes = socket.inet_aton(ip)
        self.line_rate_bps = line_rate_bps
        self.cc = cc
        self.tp = transport
        self.on_message = on_message
        self.telemetry = telemetry
        self.clock = clock
        self.np = NotificationPoint(cc.params.cnp_interval_s)
        # sockets come from the factory: a process serving several hosts creates each in
        # its host's namespace (hosts.netns)
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
        self.senders: dict[tuple, SendFlow] = {}
        self.receivers: dict[tuple, RecvFlow] = {}
        self.done_receivers: dict[tuple, RecvFlow] = {}
        self._rr: list[SendFlow] = []
        self._rr_pos = 0
        self.t_nic_s = 0.0
        self._cmsg = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(TIMESPEC.size)
        # one receive and one send buffer, reused for every packet (no per-packet allocation)
        self._rbuf = bytearray(65536)
        self._rview = memoryview(self._rbuf)
        self._sbuf = bytearray(wire.BTH_BYTES + transport.mtu_bytes + 3 + wire.ICRC_BYTES)
        self._sview = memoryview(self._sbuf)
        self._rlist = [self.sock]
        self._icrc_seeds: dict = {}        # (src, sport, udp length) -> wire.icrc_seed
        self._tx_seeds: dict = {}          # (dst, BTH onwards length) -> wire.icrc_seed
        self._drained = False              # the last poll read the socket empty
        self.pacing_late_s = [0, 0.0, 0.0]          # samples, sum, max
        self.rx_lag_s = [0, 0.0, 0.0]               # datagrams, sum, max: arrival -> read
        self.completions = 0          # messages delivered + sends fully acknowledged
        self.counters = {"data_rx": 0, "ack_rx": 0, "nak_rx": 0, "cnp_rx": 0, "bad_icrc": 0,
                         "unknown_flow": 0, "cnp_tx": 0, "ack_tx": 0, "nak_tx": 0,
                         "data_tx": 0, "send_errors": 0, "becn_tx": 0, "becn_rx": 0}
        self._flag_on_ack = transport.congestion_flag == "ack"

    # --- the API ---------------------------------------------------------------------
    def send(self, peer_ip: str, job: int, channel: int, step: int, data,
             on_complete: Callable | None = None, sport: int | None = None) -> SendFlow:
        """Start one message (one QP flow) to ``peer_ip``; ``on_complete(flow)`` at the
        last ACK."""
        pkey = wire.pkey_of(job)
        dqpn = wire.dest_qp(channel, step)
        key = (peer_ip, pkey, dqpn)
        if key in self.senders:
            raise ValueError(f"a flow of job {job} channel {channel} step {step} to {peer_ip} "
                             f"is already in progress")
        data = memoryview(data).cast("B")
        n_packets = max(1, -(-len(data) // self.tp.mtu_bytes))
        if sport is None:
            sport = flow_sport(job, channel, step, self.ip, self.tp.per_step_sport,
                               self.tp.sport_seed)
        s = self._socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, wire.ECN_ECT0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.ip, sport))
        s.setblocking(False)
        now = self.clock()
        flow = SendFlow(key, job, channel, step, peer_ip, sport, data, (pkey, dqpn),
                        GbnSender(n_packets, self.tp.rto_s, now, self.tp.max_outstanding),
                        self.cc.controller(now), s, now, on_complete, t_next_s=now,
                        t_sample_s=now, addr=(peer_ip, wire.ROCE_UDP_PORT))
        self.senders[key] = flow
        self._rr.append(flow)
        return flow

    @property
    def busy(self) -> bool:
        return bool(self.senders)

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

    def service(self, now: float) -> float:
        """Send every packet that is due and fire every due retransmission timeout; return
        when the NIC next needs a turn (inf: not before an arrival). For a caller that
        sleeps on many NICs' sockets at once (``hosts.group``); :meth:`poll` is this plus
        the sleep for one NIC."""
        return min(now + self._send_due(now), self._check_timers(now))

    def close(self) -> None:
        for f in list(self.senders.values()):
            f.sock.close()
        self.sock.close()

    def open_flows(self) -> dict:
        """Flows still in progress (for diagnosing a run that did not finish)."""
        return {"sending": [{"dst": f.peer, "job": f.job, "channel": f.channel, "step": f.step,
                             "acked": f.gbn.snd_una, "next": f.gbn.snd_nxt,
                             "packets": f.gbn.n_packets, "rate_bps": f.cc.rate_bps,
                             "timeouts": f.gbn.timeouts, "naks": f.gbn.naks}
                            for f in self.senders.values()],
                "receiving": [{"src": f.peer, "job": f.job, "channel": f.channel, "step": f.step,
                               "expected_psn": f.gbn.expected, "naks": f.gbn.naks_sent}
                              for f in self.receivers.values()]}

    def stats(self) -> dict:
        n, total, worst = self.pacing_late_s
        m, lag, lag_max = self.rx_lag_s
        return {"counters": dict(self.counters), "cnp_suppressed": self.np.suppressed,
                "open_flows": self.open_flows(),
                "pacing": {"packets": n, "mean_late_s": total / n if n else 0.0,
                           "max_late_s": worst},
                "rx_lag": {"packets": m, "mean_s": lag / m if m else 0.0, "max_s": lag_max}}

    # --- sending -------------------------------------------------------------------
    def _send_due(self, now: float) -> float:
        """Send every packet that is due; return the time until the next one is."""
        rr = self._rr
        if not rr:
            return math.inf
        mtu = self.tp.mtu_bytes
        buf, view = self._sbuf, self._sview
        pl = self.pacing_late_s
        counters = self.counters
        while True:
            if now < self.t_nic_s:
                return self.t_nic_s - now
            soonest = None
            chosen = None
            n = len(rr)
            pos = self._rr_pos
            for i in range(n):
                f = rr[(pos + i) % n]
                psn = f.gbn.next_psn()
                if psn is None:
                    continue
                if f.t_next_s <= now:
                    chosen = f
                    self._rr_pos = (pos + i + 1) % n
                    break
                if soonest is None or f.t_next_s < soonest:
                    soonest = f.t_next_s
            if chosen is None:
                return (soonest - now) if soonest is not None else math.inf
            f = chosen
            g = f.gbn
            payload = f.data[psn * mtu:(psn + 1) * mtu]
            op = wire.data_opcode(psn, g.n_packets)
            nbytes = len(payload)
            frame_len = wire.BTH_BYTES + nbytes + (-nbytes & 3) + wire.ICRC_BYTES
            seed = f.icrc_seeds.get(frame_len)
            if seed is None:
                seed = f.icrc_seeds[frame_len] = wire.icrc_seed(
                    self._ip_bytes, socket.inet_aton(f.peer), f.sport, wire.ROCE_UDP_PORT,
                    wire.UDP_HEADER_BYTES + frame_len)
            pkey, dqpn = f.frames_hdr
            wire.data_frame_into(buf, seed, op, pkey, dqpn, psn, payload,
                                 ackreq=op in wire.LAST_OPCODES)
            try:
                f.sock.sendto(view[:frame_len], f.addr)
            except (BlockingIOError, OSError):
                counters["send_errors"] += 1
                self.t_nic_s = now + 0.001
                return 0.001
            counters["data_tx"] += 1
            wire_bytes = frame_len + WIRE_EXTRA_BYTES
            late = now - max(f.t_next_s, self.t_nic_s)
            pl[0] += 1
            pl[1] += late
            if late > pl[2]:
                pl[2] = late
            g.sent(psn, now)
            f.bytes_sent += nbytes
            f.cc.on_sent(frame_len, now)
            # Next departure: no catching up by more than one packet after a late send.
            qp_gap = wire_bytes * 8 / f.cc.rate_bps
            f.t_next_s = max(f.t_next_s, now - qp_gap) + qp_gap
            nic_gap = wire_bytes * 8 / self.line_rate_bps
            self.t_nic_s = max(self.t_nic_s, now - nic_gap) + nic_gap
            if now - f.t_sample_s >= self.tp.rate_sample_s:
                f.rate_samples.append((round(now, 6), round(f.cc.rate_bps)))
                f.t_sample_s = now
            now = self.clock()

    # --- receiving -----------------------------------------------------------------
    def receive(self) -> None:
        """Handle every datagram waiting on the host's socket (read into one reused buffer)."""
        recvmsg_into, bufs, view = self.sock.recvmsg_into, [self._rbuf], self._rview
        data_ops, clock, lag, unpack_ts = wire.DATA_OPCODES, self.clock, self.rx_lag_s, \
            TIMESPEC.unpack
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
            if n < wire.BTH_BYTES + wire.ICRC_BYTES:
                continue
            data = view[:n]
            op = data[0]
            if op in data_ops:
                self._on_data(data, addr[0], addr[1], tos, now)
            elif op == wire.OP_ACKNOWLEDGE:
                self._on_ack(data, addr[0], now)
            elif op == wire.OP_CNP:
                bth = wire.parse_bth(data)
                f = self.senders.get((addr[0], bth.pkey, bth.dqpn))
                self.counters["cnp_rx"] += 1
                if f is not None:
                    f.cc.on_cnp(now)

    def _on_data(self, data: memoryview, src: str, sport: int, tos: int, now: float) -> None:
        """One data packet; ``data`` is a view of the receive buffer, valid until the next
        receive (what is kept is copied)."""
        self.counters["data_rx"] += 1
        n = len(data)
        if self.tp.verify_icrc:
            key = (src, sport, n)
            seed = self._icrc_seeds.get(key)
            if seed is None:
                seed = self._icrc_seeds[key] = wire.icrc_seed(
                    socket.inet_aton(src), self._ip_bytes, sport, wire.ROCE_UDP_PORT,
                    wire.UDP_HEADER_BYTES + n)
            if wire.icrc_from_seed(seed, data[:n - wire.ICRC_BYTES]) \
                    != wire.ICRC.unpack_from(data, n - wire.ICRC_BYTES)[0]:
                self.counters["bad_icrc"] += 1
                return
        opcode, flags, pkey, qp, psn = wire.BTH.unpack_from(data)
        dqpn, psn = qp & wire.PSN_MASK, psn & wire.PSN_MASK
        last = opcode in wire.LAST_OPCODES
        key = (src, pkey, dqpn)
        f = self.receivers.get(key)
        if f is None:
            done = self.done_receivers.get(key)
            if done is not None:                 # a retransmission after completion
                _, resp = done.gbn.on_data(psn, last, now)
                if resp is not None:
                    self._send_ack(src, pkey, dqpn, resp)
                return
            f = RecvFlow(key, wire.job_of(pkey), wire.channel_of(dqpn), wire.step_of(dqpn), src,
                         GbnReceiver(self.tp.ack_every, self.tp.nak_timeout_s), now,
                         t_sample_s=now)
            self.receivers[key] = f
        marked = tos & 3 == wire.ECN_CE
        if marked:
            f.ce += 1
            if not self._flag_on_ack and self.np.on_ce(key, now):
                self._send(wire.build_cnp(pkey, dqpn), src)
                f.cnps += 1
                self.counters["cnp_tx"] += 1
        deliver, resp = f.gbn.on_data(psn, last, now)
        if marked and self._flag_on_ack:
            # HPCC's notification point: this packet's ACK carries the flag, now
            if resp is None and f.gbn.expected:
                resp = (ACK, f.gbn.expected - 1)
            if resp is not None:
                self._send_ack(src, pkey, dqpn, resp, becn=True)
                resp = None
        if deliver:
            pad = (flags >> 4) & 3
            f.message += data[wire.BTH_BYTES:n - wire.ICRC_BYTES - pad]
            f.nbytes = len(f.message)
            if now - f.t_sample_s >= self.tp.rate_sample_s:
                f.goodput_samples.append((round(now, 6), f.nbytes))
                f.t_sample_s = now
        if resp is not None:
            self._send_ack(src, pkey, dqpn, resp)
        if deliver and last:
            f.end_s = now
            f.goodput_samples.append((round(now, 6), f.nbytes))
            message = bytes(f.message)
            f.message = bytearray()
            del self.receivers[key]
            self.done_receivers[key] = f
            self.np.forget(key)
            self.completions += 1
            self._log_recv(f)
            if self.on_message is not None:
                self.on_message(f, message)

    def _send_ack(self, dst: str, pkey: int, dqpn: int, resp, becn: bool = False) -> None:
        kind, psn = resp
        self._send(wire.build_ack(pkey, dqpn, psn, nak=kind != ACK, becn=becn), dst)
        self.counters["ack_tx" if kind == ACK else "nak_tx"] += 1
        if becn:
            self.counters["becn_tx"] += 1

    def _send(self, body: bytes, dst: str) -> None:
        """An ACK, NAK or CNP from port 4791 to ``dst``."""
        key = (dst, len(body))
        seed = self._tx_seeds.get(key)
        if seed is None:
            seed = self._tx_seeds[key] = wire.icrc_seed(
                self._ip_bytes, socket.inet_aton(dst), wire.ROCE_UDP_PORT, wire.ROCE_UDP_PORT,
                wire.UDP_HEADER_BYTES + len(body) + wire.ICRC_BYTES)
        frame = body + wire.ICRC.pack(wire.icrc_from_seed(seed, body))
        try:
            self.sock.sendto(frame, (dst, wire.ROCE_UDP_PORT))
        except OSError:
            self.counters["send_errors"] += 1

    def _on_ack(self, data: bytes, src: str, now: float) -> None:
        bth = wire.parse_bth(data)
        syndrome, _ = wire.parse_aeth(data)
        f = self.senders.get((src, bth.pkey, bth.dqpn))
        if bth.becn:                       # the ``ack`` notification point: a CE mark
            self.counters["becn_rx"] += 1
            if f is not None:
                f.cc.on_cnp(now)
        if syndrome >> 5 == 0b11:
            self.counters["nak_rx"] += 1
            if f is not None:
                f.gbn.on_nak(bth.psn, now)
                self._resume(f, now)
            return
        self.counters["ack_rx"] += 1
        if f is None:
            return
        f.gbn.on_ack(bth.psn, now)
        if f.gbn.done:
            self._complete(f, now)

    def _complete(self, f: SendFlow, now: float) -> None:
        self.completions += 1
        f.end_s = now
        f.sock.close()
        del self.senders[f.key]
        self._rr.remove(f)
        self._rr_pos = 0
        self._log_send(f)
        if f.on_complete is not None:
            f.on_complete(f)

    def _check_timers(self, now: float) -> float:
        """Fire due retransmission timeouts; return when the next one is due (inf: none;
        now if one fired: the go-back sends at once)."""
        soonest = math.inf
        for f in self._rr:
            g = f.gbn
            if g.check_timeout(now):
                self._resume(f, now)
                soonest = now
            t = g.timeout_at()
            if t is not None and t < soonest:
                soonest = t
        return soonest

    @staticmethod
    def _resume(f: SendFlow, now: float) -> None:
        """A go-back resumes sending now: the idle time before it is not pacing lateness."""
        if f.t_next_s < now:
            f.t_next_s = now

    # --- telemetry -------------------------------------------------------------------
    def _log_send(self, f: SendFlow) -> None:
        if self.telemetry is None:
            return
        g = f.gbn
        self.telemetry.write({
            "type": "send_flow", "job": f.job, "channel": f.channel, "step": f.step,
            "src": self.ip, "dst": f.peer, "sport": f.sport, "bytes": len(f.data),
            "packets": g.n_packets, "start_s": f.start_s, "end_s": f.end_s,
            "retransmits": g.retransmits, "timeouts": g.timeouts, "naks": g.naks,
            "cnps": f.cc.cnps, "cuts": f.cc.cuts, "final_rate_bps": f.cc.rate_bps,
            "rate_samples": f.rate_samples})

    def _log_recv(self, f: RecvFlow) -> None:
        if self.telemetry is None:
            return
        g = f.gbn
        self.telemetry.write({
            "type": "recv_flow", "job": f.job, "channel": f.channel, "step": f.step,
            "src": f.peer, "dst": self.ip, "bytes": f.nbytes, "start_s": f.start_s,
            "end_s": f.end_s, "ce": f.ce, "cnps_sent": f.cnps, "naks_sent": g.naks_sent,
            "duplicates": g.duplicates, "out_of_order": g.out_of_order,
            "goodput_samples": f.goodput_samples})
