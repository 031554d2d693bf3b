"""The host's RDMA NIC without its sockets: RoCEv2 queue pairs, the NIC scheduler,
go-back-N, congestion control and the notification point, on frames and times handed in.

A :class:`NicCore` owns, per host:

* the NIC scheduler: one send loop that serves the active queue pairs round-robin, each
  paced at its own congestion-control rate, the sum never above the host's line rate (so
  the host's qdisc stays near empty, as behind a real NIC);
* per flow, a go-back-N sender or receiver (``hosts.gbn``) and the rate controller its
  ``hosts.cc.CcConfig`` names; per host, the notification point that turns CE marks into
  CNPs (or BECN ACKs);
* each flow's UDP source port (RoCEv2's ECMP entropy: by default a hash of (job, channel,
  step, sender), so each step's flow picks its own path).

It moves no byte itself: a subclass gives it four doors -- :meth:`_open_port` (a sending
port per flow), :meth:`_close_port`, :meth:`_tx_data` (a data frame from a flow's port,
ECT(0)) and :meth:`_tx_control` (an ACK, NAK or CNP from port 4791) -- and hands it every
datagram that arrives (:meth:`on_datagram`). ``hosts.nic.Nic`` is the socket shell the
emulator runs; ``emulator.sim`` hands the same core a virtual fabric and a virtual clock.
The clock is passed in: the core asks it for the time only while sending a burst (real
time passes while a socket sends; virtual time does not).

A flow is one message of one (job, channel, step) between two hosts: one QP, PSN from 0.
The layer above calls :meth:`NicCore.send` and gets a callback per delivered message.
Telemetry is aggregated per flow (start, end, bytes, retransmissions, NAKs, CNPs, rate
samples) and for the NIC (pacing error), never a line per packet.
"""

from __future__ import annotations

import math
import socket
import time
from typing import Any, Callable

from hosts.config import TransportParams
from hosts.cc import CcConfig, CongestionControl, NotificationPoint
from hosts.flows import (WIRE_EXTRA_BYTES, RecvFlow, SendFlow, add_sample, recv_record,
                         send_record)
from hosts.gbn import ACK, GbnReceiver, GbnSender
from runtime import pause, wire
from runtime.records import PortPause

class NicCore:
    """The NIC's logic (see the module's docstring); a subclass supplies the four doors."""

    def __init__(self, ip: str, line_rate_bps: float, cc: CcConfig,
                 transport: TransportParams, *,
                 on_message: Callable | None = None, telemetry=None,
                 clock: Callable[[], float] = time.monotonic):
        if abs(cc.params.line_rate_bps - line_rate_bps) > 1e-6 * line_rate_bps:
            raise ValueError(f"congestion control {cc.name} line rate {cc.params.line_rate_bps} "
                             f"differs from the NIC's {line_rate_bps}")
        self.ip = ip
        self._ip_bytes = socket.inet_aton(ip)
        self.line_rate_bps = line_rate_bps
        self.cc = cc
        self.tp = transport
        self.on_message = on_message
        # sink_of(flow): what takes a new receive's bytes as they arrive (feed(chunk),
        # then result() is the message handed to on_message), or None: kept as bytes
        self.sink_of: Callable | None = None
        self.telemetry = telemetry
        self.clock = clock
        self.np = NotificationPoint(cc.params.cnp_interval_s)
        self.senders: dict[tuple, SendFlow] = {}
        self.receivers: dict[tuple, RecvFlow] = {}
        self.done_receivers: dict[tuple, RecvFlow] = {}
        self._rr: list[SendFlow] = []
        self._rr_pos = 0
        self.t_nic_s = 0.0
        # one send buffer, reused for every data packet (no per-packet allocation): a
        # door must hand the frame on (or copy it) before it returns
        self._sbuf = bytearray(wire.BTH_BYTES + transport.mtu_bytes + 3 + wire.ICRC_BYTES)
        self._sview = memoryview(self._sbuf)
        self._icrc_seeds: dict = {}        # (src, sport, udp length) -> wire.icrc_seed
        self._tx_seeds: dict = {}          # (dst, BTH onwards length) -> wire.icrc_seed
        self.pacing_late_s = [0, 0.0, 0.0]          # samples, sum, max
        self.completions = 0          # messages delivered + sends fully acknowledged
        self.counters = {"data_rx": 0, "ack_rx": 0, "nak_rx": 0, "cnp_rx": 0, "bad_icrc": 0,
                         "unknown_flow": 0, "cnp_tx": 0, "ack_tx": 0, "nak_tx": 0,
                         "data_tx": 0, "send_errors": 0, "becn_tx": 0, "becn_rx": 0}
        self._flag_on_ack = transport.congestion_flag == "ack"
        # 802.1Qbb: the data priority paused by the switch's PAUSE frames (on_pause)
        self.pause = pause.PauseTimer()

    # --- the doors (a subclass's) ----------------------------------------------------
    def _open_port(self, sport: int):
        """A sending port for a new flow, bound to ``sport``: its handle."""
        raise NotImplementedError

    def _close_port(self, port) -> None:
        raise NotImplementedError

    def _tx_data(self, port, frame: memoryview, addr: tuple) -> bool:
        """Send a data frame (BTH onwards, ICRC included) from the flow's port to ``addr``
        (peer, 4791), ECT(0). ``frame`` is only valid during the call. False: it could
        not be sent now (the NIC backs off 1 ms)."""
        raise NotImplementedError

    def _tx_control(self, frame: bytes, dst: str) -> bool:
        """Send an ACK, NAK or CNP from port 4791 to ``dst``, not ECN-capable."""
        raise NotImplementedError

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
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = memoryview(data).cast("B")
        # else: bytes made as they are read (hosts.collectives.checksums.Generated)
        n_packets = max(1, -(-len(data) // self.tp.mtu_bytes))
        if sport is None:
            sport = wire.flow_sport(job, channel, step, self.ip, self.tp.per_step_sport,
                               self.tp.sport_seed)
        port = self._open_port(sport)
        now = self.clock()
        flow = SendFlow(key, job, channel, step, peer_ip, sport, data, (pkey, dqpn),
                        GbnSender(n_packets, self.tp.rto_s, now, self.tp.max_outstanding),
                        self.cc.controller(now), port, now, on_complete, t_next_s=now,
                        t_sample_s=now, sample_every_s=self.tp.rate_sample_s,
                        addr=(peer_ip, wire.ROCE_UDP_PORT))
        self.senders[key] = flow
        self._rr.append(flow)
        return flow

    def on_pause(self, frame: bytes, now: float) -> None:
        """An 802.1Qbb PAUSE frame reached the NIC (``runtime.pause``): its data waits
        while RoCE's priority is paused, as a NIC's scheduler stops dequeuing that
        priority's queue pairs. ACKs, NAKs and CNPs still go to :meth:`_tx_control`:
        whether their priority is paused is the port's to honour."""
        p = pause.decode(frame)
        if p is not None and p.names(pause.DATA_PRIORITY):
            self.pause.on_pause(p.quanta[pause.DATA_PRIORITY], self.line_rate_bps, now)

    def pause_record(self, port: str) -> PortPause:
        """What the NIC's port ``port`` honoured of its leaf's PAUSE frames, as a record."""
        t, now = self.pause, self.clock()
        return PortPause(port=port, priority=pause.DATA_PRIORITY, pauses_rx=t.pauses,
                         resumes_rx=t.resumes, paused_s=t.paused_s(now), pauses_tx=0,
                         resumes_tx=0, max_ingress_bytes=0, drops=0,
                         intervals=[[round(a, 9), round(b, 9)]
                                    for a, b in t.all_intervals(now)])

    @property
    def busy(self) -> bool:
        return bool(self.senders)

    def service(self, now: float) -> float:
        """Send every packet that is due and fire every due retransmission timeout; return
        when the NIC next needs a turn (inf: not before an arrival). For a caller that
        sleeps on many NICs' sockets at once (``hosts.group``); :meth:`poll` is this plus
        the sleep for one NIC (``hosts.nic``)."""
        return min(now + self._send_due(now), self._check_timers(now))

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
        return {"counters": dict(self.counters), "cnp_suppressed": self.np.suppressed,
                "open_flows": self.open_flows(),
                "pacing": {"packets": n, "mean_late_s": total / n if n else 0.0,
                           "max_late_s": worst}}

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
        paused = self.pause
        while True:
            if now < paused.until_s:
                return paused.until_s - now
            if now < self.t_nic_s:
                return self.t_nic_s - now
            soonest = None
            chosen = None
            psn = 0
            n = len(rr)
            pos = self._rr_pos
            for i in range(n):
                f = rr[(pos + i) % n]
                due = f.gbn.next_psn()
                if due is None:
                    continue
                if f.t_next_s <= now:
                    chosen, psn = f, due
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
            if not self._tx_data(f.port, view[:frame_len], f.addr):
                counters["send_errors"] += 1
                self.t_nic_s = now + 0.001
                return 0.001
            counters["data_tx"] += 1
            wire_bytes = frame_len + WIRE_EXTRA_BYTES
            late = now - max(f.t_next_s, self.t_nic_s, paused.until_s)   # a pause: not late
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
            if now - f.t_sample_s >= f.sample_every_s:
                f.sample_every_s = add_sample(f.rate_samples, (round(now, 6),
                                              round(f.cc.rate_bps)), f.sample_every_s)
                f.t_sample_s = now
            now = self.clock()

    # --- receiving -----------------------------------------------------------------
    def on_datagram(self, data: memoryview, src: str, sport: int, tos: int,
                    now: float) -> None:
        """One datagram that arrived at port 4791 from ``src``:``sport`` with the IP TOS
        byte ``tos``; ``data`` (its UDP payload) is valid only during the call."""
        if len(data) < wire.BTH_BYTES + wire.ICRC_BYTES:
            return
        op = data[0]
        if op in wire.DATA_OPCODES:
            self._on_data(data, src, sport, tos, now)
        elif op == wire.OP_ACKNOWLEDGE:
            self._on_ack(data, src, now)
        elif op == wire.OP_CNP:
            bth = wire.parse_bth(data)
            f = self.senders.get((src, bth.pkey, bth.dqpn))
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
                         t_sample_s=now, sample_every_s=self.tp.rate_sample_s)
            self.receivers[key] = f
            if self.sink_of is not None:
                f.sink = self.sink_of(f)
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
            chunk = data[wire.BTH_BYTES:n - wire.ICRC_BYTES - pad]
            if f.sink is None:
                f.message += chunk
                f.nbytes = len(f.message)
            else:
                f.sink.feed(chunk)
                f.nbytes += len(chunk)
            if now - f.t_sample_s >= f.sample_every_s:
                f.sample_every_s = add_sample(f.goodput_samples, (round(now, 6), f.nbytes),
                                              f.sample_every_s)
                f.t_sample_s = now
        if resp is not None:
            self._send_ack(src, pkey, dqpn, resp)
        if deliver and last:
            f.end_s = now
            f.goodput_samples.append((round(now, 6), f.nbytes))
            message: Any = bytes(f.message) if f.sink is None else f.sink.result()
            f.message, f.sink = bytearray(), None
            del self.receivers[key]
            self.done_receivers[key] = f
            self.np.forget(key)
            self.completions += 1
            if self.telemetry is not None:
                self.telemetry.write(recv_record(f, self.ip))
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
        if not self._tx_control(frame, dst):
            self.counters["send_errors"] += 1

    def _on_ack(self, data: memoryview, src: str, now: float) -> None:
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
        self._close_port(f.port)
        del self.senders[f.key]
        self._rr.remove(f)
        self._rr_pos = 0
        if self.telemetry is not None:
            self.telemetry.write(send_record(f, self.ip))
        if f.on_complete is not None:
            f.on_complete(f)

    def _check_timers(self, now: float) -> float:
        """Fire due retransmission timeouts; return when the next one is due (inf: none;
        now if one fired: the go-back sends at once)."""
        soonest = math.inf
        for f in self._rr:
            t = f.gbn.poll_timer(now)
            if t < 0:
                self._resume(f, now)
                soonest = now
            elif t < soonest:
                soonest = t
        return soonest

    @staticmethod
    def _resume(f: SendFlow, now: float) -> None:
        """A go-back resumes sending now: the idle time before it is not pacing lateness."""
        if f.t_next_s < now:
            f.t_next_s = now
