"""Egress-queue model of one switch port and RED/ECN marking (docs/architecture.md §5.2).

The real queue is the port's HTB-shaped bounded FIFO in the kernel; the agent sees each
packet just before it is enqueued there (the NFQUEUE verdict *is* the enqueue), so it
keeps a fluid model of that queue: on every enqueue

    q <- max(0, q - rate * (now - t_last)) + len

draining at the port's rate as the HTB does, with drop-tail at the buffer size. Like
the HTB it has a token bucket of ``burst_bytes``: credit saved while the port idles
(up to the burst) is spent at once by the next arrivals, so a busy period starts with
the backlog the kernel shows, not one burst above it. (Measured against
``tc -s qdisc`` backlog: without the bucket the model ran ~2.6 frames high.)
Lengths are charged as HTB charges them: the IP packet plus the 14-byte Ethernet
header. The congestion point (DCQCN's CP) marks ECT packets with RED's probability
``pmax * (q - kmin) / (kmax - kmin)`` between the thresholds and always above kmax,
where ``q`` includes the arriving packet.

A port with two strict-priority classes (the pq scheme) is one FIFO to the model (one
buffer, drop-tail on the sum), plus the backlog of its high class, ``q_high``: the drain
serves it first, and :meth:`promote` moves an arriving packet into it. RED per class
(``RedParams.per_class``, HPCC's ns-3: ``SwitchMmu::ShouldSendCN`` reads the egress bytes
of the packet's own queue) marks a packet on its class's backlog: ``q_high`` for the
high class, the rest for the low one.
"""

from __future__ import annotations

from typing import Final

L2_HEADER_BYTES: Final = 14


class EgressQueue:
    """Fluid model of a FIFO that drains at ``rate_bps`` and holds ``buffer_bytes``."""
    __slots__ = ("rate_Bps", "buffer_bytes", "burst_bytes", "q_bytes", "tokens", "t_last_s",
                 "max_q_bytes", "enqueued_pkts", "enqueued_bytes", "dropped_pkts",
                 "pause_from_s", "pause_until_s", "q_high")

    def __init__(self, rate_bps: float, buffer_bytes: int, burst_bytes: float = 0.0):
        if rate_bps <= 0:
            raise ValueError(f"rate_bps must be > 0, got {rate_bps}")
        if buffer_bytes <= 0:
            raise ValueError(f"buffer_bytes must be > 0, got {buffer_bytes}")
        if burst_bytes < 0:
            raise ValueError(f"burst_bytes must be >= 0, got {burst_bytes}")
        self.rate_Bps = rate_bps / 8.0
        self.buffer_bytes = buffer_bytes
        self.burst_bytes = float(burst_bytes)
        self.tokens = float(burst_bytes)     # an idle port has a full bucket
        self.q_bytes = 0.0
        self.q_high = 0.0                    # of q_bytes, the high class's (pq: promote)
        self.t_last_s: float | None = None
        self.max_q_bytes = 0.0
        self.enqueued_pkts = 0
        self.enqueued_bytes = 0
        self.dropped_pkts = 0
        self.pause_from_s = 0.0              # PFC: the port sends nothing in [from, until)
        self.pause_until_s = 0.0

    def backlog(self, now_s: float) -> float:
        """Bytes queued at ``now_s`` (drains the model up to then)."""
        if self.t_last_s is not None and now_s > self.t_last_s:
            dt = now_s - self.t_last_s
            if self.pause_until_s > self.t_last_s:      # paused meanwhile: no drain then
                a = self.pause_from_s if self.pause_from_s > self.t_last_s else self.t_last_s
                b = self.pause_until_s if self.pause_until_s < now_s else now_s
                if b > a:
                    dt -= b - a
            credit = self.tokens + self.rate_Bps * dt
            if credit >= self.q_bytes:
                credit -= self.q_bytes
                self.q_bytes = 0.0
                self.q_high = 0.0
                self.tokens = credit if credit < self.burst_bytes else self.burst_bytes
            else:
                self.q_bytes -= credit
                if self.q_high:                  # strict priority: the high class first
                    self.q_high = self.q_high - credit if self.q_high > credit else 0.0
                self.tokens = 0.0
        if self.t_last_s is None or now_s > self.t_last_s:
            self.t_last_s = now_s
        return self.q_bytes

    def set_rate(self, rate_bps: float, now_s: float) -> None:
        """Drain at ``rate_bps`` from ``now_s`` on (what was queued until then drained at
        the old rate)."""
        if rate_bps <= 0:
            raise ValueError(f"rate_bps must be > 0, got {rate_bps}")
        self.backlog(now_s)
        self.rate_Bps = rate_bps / 8.0

    def set_pause(self, from_s: float, until_s: float, now_s: float) -> None:
        """PFC: the port is paused over [from_s, until_s) as known at ``now_s`` (a PAUSE,
        its refresh or an XON moves ``until_s``): the model neither drains nor saves
        credit then (docs/architecture.md §5.6)."""
        self.backlog(now_s)
        self.pause_from_s, self.pause_until_s = from_s, until_s

    def enqueue(self, nbytes: int, now_s: float) -> float:
        """Offer ``nbytes``; returns the backlog including it, or -1.0 if drop-tail hit."""
        q = self.backlog(now_s) + nbytes
        if q > self.buffer_bytes:
            self.dropped_pkts += 1
            return -1.0
        if self.tokens > 0.0:               # saved credit sends (part of) it at once
            spent = self.tokens if self.tokens < q else q
            self.tokens -= spent
            q -= spent
        self.q_bytes = q
        if q > self.max_q_bytes:
            self.max_q_bytes = q
        self.enqueued_pkts += 1
        self.enqueued_bytes += nbytes
        return q

    def promote(self, nbytes: int) -> float:
        """The packet just enqueued (``nbytes``) is the high class's; returns that class's
        backlog, it included. (Credit an idle port saved can have sent part of it at
        once: the class holds at most what the port does.)"""
        q = self.q_high + nbytes
        self.q_high = q if q < self.q_bytes else self.q_bytes
        return self.q_high


def red_probability(q_bytes: float, kmin_bytes: float, kmax_bytes: float, pmax: float) -> float:
    """RED/ECN marking probability for a queue of ``q_bytes`` (0 at or below kmin)."""
    if q_bytes <= kmin_bytes:
        return 0.0
    if q_bytes >= kmax_bytes:
        return 1.0
    return pmax * (q_bytes - kmin_bytes) / (kmax_bytes - kmin_bytes)
