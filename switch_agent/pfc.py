"""Priority Flow Control at a switch: when an ingress port pauses its upstream and when it
lets it go again (802.1Qbb; docs/architecture.md §5.6). The rule is that of HPCC's ns-3
switch MMU (``switch-mmu.cc``), which the paper's simulations ran.

One shared buffer per switch. Every ingress port has, of its own, a reserve
(``reserve_bytes``) and a headroom (``headroom_bytes``); the rest is shared. With ``S``
the shared bytes all ports use and ``s_i`` those of port ``i`` (its bytes beyond its
reserve), the dynamic threshold is

    T = alpha x (buffer - ports x (headroom + reserve) - S)

A frame arriving at port ``i`` is held by its reserve while that lasts, then by the
shared buffer while ``s_i`` stays at most ``T``, then by the port's headroom. Port ``i``
sends XOFF (a PAUSE of ``quanta``) once it holds headroom bytes or ``s_i >= T``, and XON
(quanta 0) once it holds none and ``s_i + resume_offset_bytes <= T`` (or ``s_i`` = 0). A
frame is dropped only if neither the shared buffer nor the headroom can take it: with
headroom enough for what arrives during the pause's reaction, never. Bytes leave the
ingress account as their frame leaves its egress port.

Choices HPCC's code and 802.1Qbb leave open (docs/architecture.md §5.6 says each): a
PAUSE is refreshed at half its time while the port stays XOFF (HPCC never refreshes: its
receiver stays paused until XON, which a quanta of 0xFFFF refreshed in time also gives);
thresholds are exact (HPCC shifts by ``log2(1/alpha)``, so its alpha is 2^-k only).

Pure: the caller passes every time and byte count, and sends the frames this decides.
"""

from __future__ import annotations

import math
from typing import Final

from runtime import wire
from runtime.pause import pause_s
from switch_agent.config import PfcParams

REFRESH_FRACTION: Final = 0.5     # an XOFF is sent again after this share of its time


def is_control(pkt) -> bool:
    """A RoCE ACK, NAK or CNP (an IP packet, header without options as every one of the
    project's): UDP to 4791 whose BTH opcode is not a data opcode. With
    ``control_priority`` these travel in a priority of their own, never paused."""
    return (pkt[9] == 17 and (pkt[22] << 8 | pkt[23]) == wire.ROCE_UDP_PORT
            and pkt[28] not in wire.DATA_OPCODES)


class Pause:
    """What an ingress port must send upstream now: a PAUSE of ``quanta`` (0: XON), and,
    for an XOFF, when to ask :meth:`Mmu.refresh` whether to send it again."""
    __slots__ = ("ingress", "quanta", "refresh_at_s")

    def __init__(self, ingress: int, quanta: int, refresh_at_s: float):
        self.ingress, self.quanta, self.refresh_at_s = ingress, quanta, refresh_at_s

    def __repr__(self) -> str:
        return f"Pause(ingress={self.ingress}, quanta={self.quanta}, refresh_at_s={self.refresh_at_s})"


class Mmu:
    """One switch's shared buffer and the PFC state of its ingress ports, numbered
    0..len(rates_bps)-1 (``rates_bps[i]``: port ``i``'s link rate, which times quanta)."""

    def __init__(self, params: PfcParams, rates_bps: list[float]):
        n = len(rates_bps)
        self.params = params
        self.rates_bps = list(rates_bps)
        self.alpha = params.alpha
        self.reserve = params.reserve_bytes
        self.headroom = params.headroom_bytes
        self.offset = params.resume_offset_bytes
        self.quanta = params.quanta
        self.free_bytes = params.shared_bytes(n)      # the shared pool, empty
        if self.free_bytes <= 0:
            raise ValueError(f"{n} ports x (headroom {params.headroom_bytes} + reserve "
                             f"{params.reserve_bytes} B) leave nothing of the "
                             f"{params.buffer_bytes}-byte buffer to share")
        self.shared_used = 0                          # S
        self.ingress_bytes = [0] * n                  # reserve + shared bytes per port
        self.headroom_used = [0] * n
        self.paused = [False] * n                     # XOFF sent, XON not yet
        self.refresh_at_s = [math.inf] * n            # the XOFF's next refresh
        self.xoff_sent = [0] * n                      # XOFFs, refreshes included
        self.xon_sent = [0] * n
        self.drops = [0] * n
        self.max_bytes = [0] * n                      # most a port held, headroom included

    def threshold(self) -> float:
        """``T``: what a port may hold of the shared buffer now."""
        return self.alpha * (self.free_bytes - self.shared_used)

    def shared_of(self, i: int) -> int:
        """``s_i``: port ``i``'s bytes beyond its reserve."""
        b = self.ingress_bytes[i] - self.reserve
        return b if b > 0 else 0

    def fits(self, i: int, nbytes: int) -> bool:
        """Can port ``i`` take a frame of ``nbytes`` (else it is dropped)?"""
        return (self.headroom_used[i] + nbytes <= self.headroom
                or self.shared_of(i) + nbytes <= self.threshold())

    def admit(self, i: int, nbytes: int, now_s: float) -> Pause | None:
        """Account a frame that :meth:`fits` at port ``i``; the XOFF to send, if this
        frame made the port cross its threshold."""
        new = self.ingress_bytes[i] + nbytes
        if new <= self.reserve:
            self.ingress_bytes[i] = new
        elif new - self.reserve > self.threshold():
            self.headroom_used[i] += nbytes
        else:
            self.ingress_bytes[i] = new
            beyond = new - self.reserve
            self.shared_used += nbytes if nbytes < beyond else beyond
        held = self.ingress_bytes[i] + self.headroom_used[i]
        if held > self.max_bytes[i]:
            self.max_bytes[i] = held
        if not self.paused[i] and (self.headroom_used[i] > 0
                                   or self.shared_of(i) >= self.threshold()):
            self.paused[i] = True
            return self._xoff(i, now_s)
        return None

    def release(self, i: int, nbytes: int, now_s: float) -> Pause | None:
        """A frame that came in by port ``i`` left the switch; the XON to send, if port
        ``i`` may resume now."""
        hr = self.headroom_used[i]
        from_headroom = hr if hr < nbytes else nbytes
        rest = nbytes - from_headroom
        beyond = self.ingress_bytes[i] - self.reserve
        self.shared_used -= (rest if rest < beyond else beyond) if beyond > 0 else 0
        self.headroom_used[i] = hr - from_headroom
        self.ingress_bytes[i] -= rest
        if self.paused[i] and self.headroom_used[i] == 0:
            s = self.shared_of(i)
            if s == 0 or s + self.offset <= self.threshold():
                self.paused[i] = False
                self.refresh_at_s[i] = math.inf
                self.xon_sent[i] += 1
                return Pause(i, 0, math.inf)
        return None

    def refresh(self, i: int, now_s: float) -> Pause | None:
        """Asked at a :attr:`Pause.refresh_at_s`: the XOFF to send again if port ``i`` is
        still paused and this is its latest refresh time (else None: it resumed since)."""
        if self.paused[i] and now_s >= self.refresh_at_s[i]:
            return self._xoff(i, now_s)
        return None

    def drop(self, i: int) -> None:
        """Count a frame port ``i`` could not take."""
        self.drops[i] += 1

    def _xoff(self, i: int, now_s: float) -> Pause:
        self.xoff_sent[i] += 1
        t = self.refresh_at_s[i] = now_s + REFRESH_FRACTION * pause_s(self.quanta,
                                                                      self.rates_bps[i])
        return Pause(i, self.quanta, t)
