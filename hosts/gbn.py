"""Go-back-N reliability of one queue pair (docs/architecture.md §3.1), as pure state machines.

Sender: sends PSN 0..n-1 in order; a cumulative ACK of PSN p acknowledges 0..p; a NAK
(PSN sequence error) carrying PSN e says "expected e": 0..e-1 arrived, and the sender
goes back to e. A retransmission timeout rewinds to the oldest unacknowledged PSN when
data is out and for ``rto_s`` no ACK has advanced and nothing was sent (the backstop for
a lost NAK or a lost last ACK). The timer restarts on every transmission: with coalesced
ACKs a paced sender may send ``ack_every`` packets before the first ACK can come back,
and at a low DCQCN rate that alone can outlast any fixed timer; while the sender keeps
sending, a loss is recovered by the receiver's repeated NAKs instead.

Receiver: accepts only the expected PSN; delivers it (the caller appends its bytes);
ACKs every ``ack_every`` packets and on LAST (coalesced ACKs); on a gap sends one NAK
and drops out-of-order packets, with further NAKs suppressed until ``nak_timeout_s``
has passed or the gap is filled; a duplicate re-ACKs the highest in-order PSN when it
is the LAST or every ``ack_every`` duplicates, so a lost final ACK is recovered.

The layer above therefore receives each message exactly once, in order. No I/O and no
clock: the caller passes ``now_s`` and acts on the returned decisions.
"""

from __future__ import annotations

import math
from typing import Final

ACK: Final = "ack"
NAK: Final = "nak"


class GbnSender:
    def __init__(self, n_packets: int, rto_s: float, now_s: float = 0.0,
                 max_outstanding: int | None = None):
        if n_packets < 1:
            raise ValueError(f"a message needs at least one packet, got {n_packets}")
        if not rto_s > 0:
            raise ValueError(f"rto_s must be > 0, got {rto_s}")
        if max_outstanding is not None and max_outstanding < 1:
            raise ValueError(f"max_outstanding must be >= 1 or None, got {max_outstanding}")
        self.n_packets = n_packets
        self.rto_s = rto_s
        self.max_outstanding = max_outstanding
        self.snd_una = 0            # oldest unacknowledged PSN
        self.snd_nxt = 0            # next PSN to send
        self.high_water = 0         # one past the highest PSN ever sent
        self.last_progress_s = now_s
        self.retransmits = 0
        self.timeouts = 0
        self.naks = 0
        self.acks = 0

    @property
    def done(self) -> bool:
        return self.snd_una >= self.n_packets

    def next_psn(self) -> int | None:
        """The PSN to send now, or None (all sent, or the outstanding limit reached)."""
        if self.snd_nxt >= self.n_packets:
            return None
        if self.max_outstanding is not None and self.snd_nxt - self.snd_una >= self.max_outstanding:
            return None
        return self.snd_nxt

    def sent(self, psn: int, now_s: float) -> None:
        if psn < self.high_water:
            self.retransmits += 1
        self.last_progress_s = now_s          # the timer restarts on every transmission
        self.snd_nxt = psn + 1
        if self.snd_nxt > self.high_water:
            self.high_water = self.snd_nxt

    def on_ack(self, psn: int, now_s: float) -> bool:
        """Cumulative ACK of ``psn``; True if it acknowledged something new."""
        self.acks += 1
        if psn + 1 <= self.snd_una or psn >= self.high_water:
            return False                      # stale, or for a PSN never sent
        self.snd_una = psn + 1
        if self.snd_nxt < self.snd_una:
            self.snd_nxt = self.snd_una
        self.last_progress_s = now_s
        return True

    def on_nak(self, expected_psn: int, now_s: float) -> None:
        """NAK: the receiver expects ``expected_psn``; go back to it."""
        self.naks += 1
        if expected_psn > self.high_water or expected_psn < self.snd_una:
            return                            # for a PSN never sent, or stale
        if expected_psn > self.snd_una:
            self.snd_una = expected_psn
            self.last_progress_s = now_s
        self.snd_nxt = expected_psn           # go back (or forward, past what was resent)

    def timeout_at(self) -> float | None:
        """When :meth:`check_timeout` fires unless an ACK or a send comes first (None: no
        data out, no timer)."""
        if self.done or self.snd_una >= self.high_water:
            return None
        return self.last_progress_s + self.rto_s

    def check_timeout(self, now_s: float) -> bool:
        """Rewind to snd_una if data is out and for rto_s nothing was acknowledged or sent."""
        return self.poll_timer(now_s) < 0

    def poll_timer(self, now_s: float) -> float:
        """:meth:`check_timeout` and :meth:`timeout_at` in one call (the NIC asks on every
        turn, for every flow): -1.0 if the timeout fired now (rewound to snd_una); else
        when it will fire (inf: no data out, no timer)."""
        if self.snd_una >= self.n_packets or self.snd_una >= self.high_water:
            return math.inf
        t = self.last_progress_s + self.rto_s
        if now_s < t:                     # exactly timeout_at()'s sum: a caller woken
            return t                      # at that time fires
        self.timeouts += 1
        self.snd_nxt = self.snd_una
        self.last_progress_s = now_s
        return -1.0


class GbnReceiver:
    def __init__(self, ack_every: int = 8, nak_timeout_s: float = 0.1):
        if ack_every < 1:
            raise ValueError(f"ack_every must be >= 1, got {ack_every}")
        self.ack_every = ack_every
        self.nak_timeout_s = nak_timeout_s
        self.expected = 0
        self.done = False
        self._since_ack = 0
        self._dups_since_ack = 0
        self._nak_at: float | None = None     # when the outstanding NAK was sent
        self.duplicates = 0
        self.out_of_order = 0
        self.naks_sent = 0
        self.acks_sent = 0

    def on_data(self, psn: int, last: bool, now_s: float) -> tuple[bool, tuple[str, int] | None]:
        """One data packet: (deliver it?, response to send: (ACK|NAK, psn) or None)."""
        if psn == self.expected and not self.done:
            self.expected += 1
            self._nak_at = None
            self._since_ack += 1
            if last:
                self.done = True
            if last or self._since_ack >= self.ack_every:
                self._since_ack = 0
                self.acks_sent += 1
                return True, (ACK, psn)
            return True, None
        if psn < self.expected or self.done:
            self.duplicates += 1
            self._dups_since_ack += 1
            if self.expected and (last or self._dups_since_ack >= self.ack_every):
                self._dups_since_ack = 0
                self.acks_sent += 1
                return False, (ACK, self.expected - 1)
            return False, None
        self.out_of_order += 1
        if self._nak_at is None or now_s - self._nak_at >= self.nak_timeout_s:
            self._nak_at = now_s
            self.naks_sent += 1
            return False, (NAK, self.expected)
        return False, None
