"""802.1Qbb Priority Flow Control on the wire: the PAUSE frame, and a paused priority as
the port that receives it keeps it (docs/architecture.md §5.6).

    dst 01:80:C2:00:00:01 | src MAC (6) | EtherType 0x8808 | opcode 0x0101 |
    class-enable vector (2) | quanta of priority 0..7 (8 x 2) | padding   = 60 bytes

The frame is padded to Ethernet's 64-byte minimum less the 4-byte FCS, which the MAC
appends (60 bytes here, 64 on the wire). Bit p of the class-enable vector says that
priority p's quanta field is to be acted on. One quantum is 512 bit-times at the link's
rate, so a PAUSE lasts ``quanta x 512 / rate`` seconds: on a link dilated D times slower
(docs/architecture.md §7) the same quanta last D times longer, like every other time;
quanta 0 ends a pause at once (XON). A new PAUSE replaces the time left of the last.

RoCE data travels in priority :data:`DATA_PRIORITY` (3, the priority group of HPCC's ns-3,
whose switch the paper's simulations ran; one lossless priority for all RDMA data, as
the paper's setup). The switch side (when to send XOFF and XON) is
``switch_agent.pfc``; the host side (a NIC that stops sending) ``hosts.nic_core``.

Pure: no clock, no socket; times are handed in.
"""

from __future__ import annotations

import math
import struct
from typing import Final

PFC_DST_MAC: Final = bytes.fromhex("0180c2000001")   # MAC control's reserved multicast
MAC_CONTROL_ETHERTYPE: Final = 0x8808
PFC_OPCODE: Final = 0x0101                           # 0x0001 is 802.3x's link-wide PAUSE
PRIORITIES: Final = 8
MAX_QUANTA: Final = 0xFFFF
BITS_PER_QUANTUM: Final = 512
FRAME_BYTES: Final = 60          # the minimum frame less its FCS
DATA_PRIORITY: Final = 3         # RoCE data (HPCC's ns-3: pg 3)

# dst, src, EtherType, opcode, class-enable vector, quanta[0..7]
_PAUSE: Final = struct.Struct("!6s6sHHH8H")


class PauseFrame:
    """A decoded PAUSE: the sender's MAC, which priorities it names (``enabled``, bit p =
    priority p) and each priority's quanta (0: resume)."""
    __slots__ = ("src_mac", "enabled", "quanta")

    def __init__(self, src_mac: bytes, enabled: int, quanta: tuple[int, ...]):
        self.src_mac, self.enabled, self.quanta = src_mac, enabled, quanta

    def names(self, priority: int) -> bool:
        return bool(self.enabled >> priority & 1)


def encode(src_mac: bytes, quanta: dict[int, int]) -> bytes:
    """The PAUSE frame from ``src_mac`` that gives each priority of ``quanta``
    ({priority: quanta}, 0 = resume) its time and leaves the others alone."""
    if len(src_mac) != 6:
        raise ValueError(f"a MAC address is 6 bytes, got {len(src_mac)}")
    fields = [0] * PRIORITIES
    vector = 0
    for p, q in quanta.items():
        if not 0 <= p < PRIORITIES:
            raise ValueError(f"priority must be in 0..7, got {p}")
        if not 0 <= q <= MAX_QUANTA:
            raise ValueError(f"quanta must be in 0..{MAX_QUANTA}, got {q}")
        fields[p] = q
        vector |= 1 << p
    head = _PAUSE.pack(PFC_DST_MAC, src_mac, MAC_CONTROL_ETHERTYPE, PFC_OPCODE, vector,
                       *fields)
    return head + bytes(FRAME_BYTES - len(head))


def decode(frame: bytes | bytearray | memoryview) -> PauseFrame | None:
    """The PAUSE ``frame`` holds (an Ethernet frame from its destination MAC), or None if
    it is not a PFC frame (another MAC control opcode, another EtherType, too short)."""
    if len(frame) < _PAUSE.size:
        return None
    dst, src, ethertype, opcode, vector, *quanta = _PAUSE.unpack_from(frame)
    if ethertype != MAC_CONTROL_ETHERTYPE or opcode != PFC_OPCODE or dst != PFC_DST_MAC:
        return None
    return PauseFrame(src, vector, tuple(quanta))


def pause_s(quanta: int, rate_bps: float) -> float:
    """How long ``quanta`` pause a link of ``rate_bps``."""
    return quanta * BITS_PER_QUANTUM / rate_bps


class PauseTimer:
    """One priority of one port, as the receiver of PAUSE frames keeps it: paused until
    :attr:`until_s` (each frame sets it anew from its arrival: quanta 0 = now, a resume),
    with the PAUSE and resume frames counted and the time paused summed (up to
    ``keep_intervals`` of the intervals kept, for a trace). Pure: times handed in."""
    __slots__ = ("until_s", "since_s", "closed_s", "pauses", "resumes", "intervals",
                 "keep_intervals")

    def __init__(self, keep_intervals: int = 10_000):
        self.until_s = -math.inf          # paused while now < until_s
        self.since_s = 0.0                # the current (or last) interval's start
        self.closed_s = 0.0               # time paused in intervals that have ended
        self.pauses = 0                   # frames with quanta > 0 (XOFF and refreshes)
        self.resumes = 0                  # frames with quanta 0 (XON)
        self.intervals: list[tuple[float, float]] = []
        self.keep_intervals = keep_intervals

    def paused(self, now_s: float) -> bool:
        return now_s < self.until_s

    def on_pause(self, quanta: int, rate_bps: float, now_s: float) -> None:
        """A PAUSE naming this priority arrived at ``now_s`` on a link of ``rate_bps``."""
        if quanta == 0:
            self.resumes += 1
            if now_s < self.until_s:
                self.until_s = now_s
            return
        self.pauses += 1
        if now_s >= self.until_s:             # a new interval: the last one is over
            self._close()
            self.since_s = now_s
        self.until_s = now_s + pause_s(quanta, rate_bps)

    def _close(self) -> None:
        if math.isfinite(self.until_s):
            self.closed_s += self.until_s - self.since_s
            if len(self.intervals) < self.keep_intervals:
                self.intervals.append((self.since_s, self.until_s))

    def paused_s(self, now_s: float) -> float:
        """Time paused up to ``now_s``."""
        if not math.isfinite(self.until_s):
            return 0.0
        return self.closed_s + max(0.0, min(self.until_s, now_s) - self.since_s)

    def all_intervals(self, now_s: float) -> list[tuple[float, float]]:
        """The intervals kept, the current one cut at ``now_s``."""
        out = list(self.intervals)
        if math.isfinite(self.until_s) and len(out) < self.keep_intervals:
            out.append((self.since_s, min(self.until_s, now_s)))
        return out
