"""The congestion-control seam: what the NIC asks of one flow's rate controller, and
the receiver-side notification point every algorithm shares.

A controller is pure: every method takes ``now_s`` (emulated seconds) and nothing reads
a clock or draws a random number, so a hand-picked sequence of calls reproduces a
hand-computed rate trajectory exactly. Timers are deadlines that :meth:`advance` fires.

An algorithm's parameters are a frozen dataclass with at least ``line_rate_bps`` (the
NIC checks it against its own) and ``cnp_interval_s`` (the host's notification point),
and a ``scaled(scale)`` that turns real-scale values into emulated ones through
``runtime.scale.Scale`` (rates / D, times x D, bytes as they are).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterable

from runtime.compiled import mypyc_attr


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class CongestionControl(ABC):
    """One send flow's rate. The NIC paces the flow at :attr:`rate_bps` (bit/s, read
    before every departure), reports each CNP and each packet sent, and writes
    :attr:`cnps`, :attr:`cuts` and the final :attr:`rate_bps` to the flow's telemetry."""

    def __init__(self, line_rate_bps: float):
        self.rate_bps = line_rate_bps           # new flows start at line rate
        self.cnps = 0                           # CNPs received
        self.cuts = 0                           # rate decreases applied

    @abstractmethod
    def on_cnp(self, now_s: float) -> None:
        """A congestion notification for this flow arrived."""

    @abstractmethod
    def on_sent(self, nbytes: int, now_s: float) -> None:
        """``nbytes`` (the whole RoCEv2 frame) left for this flow."""

    @abstractmethod
    def advance(self, now_s: float) -> None:
        """Fire every timer whose deadline is <= now_s, in time order."""


def require_positive(owner: str, params, names: Iterable[str]) -> None:
    """Raise ValueError naming the first of ``names`` whose value is not > 0."""
    for name in names:
        value = getattr(params, name)
        if not value > 0:
            raise ValueError(f"{owner} {name} must be > 0, got {value}")


class NotificationPoint:
    """Receiver side: at most one CNP per flow per ``cnp_interval_s`` while CE arrives
    (DCQCN's NP, Zhu et al., SIGCOMM'15). It is the host's, not an algorithm's: every
    algorithm's sender gets the same CNP stream, so CNP counts compare across them."""

    def __init__(self, cnp_interval_s: float):
        if not cnp_interval_s > 0:
            raise ValueError(f"cnp_interval_s must be > 0, got {cnp_interval_s}")
        self.interval_s = cnp_interval_s
        self._last: dict = {}
        self.sent = 0
        self.suppressed = 0

    def on_ce(self, flow, now_s: float) -> bool:
        """A CE-marked packet of ``flow`` arrived: True if a CNP is to be sent now."""
        last = self._last.get(flow)
        if last is not None and now_s - last < self.interval_s:
            self.suppressed += 1
            return False
        self._last[flow] = now_s
        self.sent += 1
        return True

    def forget(self, flow) -> None:
        self._last.pop(flow, None)
