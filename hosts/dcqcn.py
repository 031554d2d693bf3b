"""DCQCN (DESIGN.md §4.2): the reaction point's rate machine and the notification point.

Pure: every method takes ``now_s`` (emulated seconds) and nothing reads a clock.
Timers are deadlines that :meth:`advance` processes in order, so a sequence of calls
with hand-picked times reproduces a hand-computed rate trajectory exactly.

Two reaction-point variants:

``paper`` (Zhu et al., SIGCOMM'15; the default)
    on CNP: ``Rt <- Rc; alpha <- (1-g) alpha + g; Rc <- max(Rmin, Rc (1 - alpha/2))``;
    the increase timer, byte counter and their event counts restart.
    ``alpha <- (1-g) alpha`` every ``alpha_timer_s`` (K) without a CNP.
    Increase events: every ``timer_s`` (T) and every ``byte_counter_bytes`` (B) sent. With
    T_count and BC_count the events so far, this one included: fast recovery for the
    first F events, i.e. while max(T, BC) <= F (``Rc <- (Rt + Rc)/2``), hyper increase
    once min(T, BC) > F (``Rt += R_HAI``), additive increase otherwise (``Rt += R_AI``),
    then ``Rc <- (Rt + Rc)/2``.
    Flows start at line rate; nothing increases before the first cut.

``mlx`` (the HPCC ns-3 simulator's Mellanox-style, timer-only variant)
    a CNP sets flags; every ``alpha_timer_s`` alpha moves up (CNP seen) or down;
    every ``decrease_interval_s`` a flagged decrease cuts ``Rt <- Rc;
    Rc <- max(Rmin, Rc (1 - alpha/2))`` and restarts the increase timer; every
    ``timer_s`` (the RP timer) one increase event: fast recovery while the stage < F,
    additive at F, hyper above. The first CNP sets alpha to 1.

All rates in bit/s, all times in seconds, already at emulation scale (``hosts.scale``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hosts.scale import Scale

VARIANTS = ("paper", "mlx")


@dataclass(frozen=True)
class DcqcnParams:
    variant: str = "paper"
    line_rate_bps: float = 10e9
    min_rate_bps: float = 100e6
    g: float = 1 / 256
    alpha_timer_s: float = 55e-6           # K: alpha decay (paper) / alpha update (mlx)
    timer_s: float = 55e-6                 # T: rate-increase timer (paper) / RP timer (mlx)
    byte_counter_bytes: int = 10 * 1024 * 1024   # B (paper only)
    fast_recovery_steps: int = 5           # F
    rai_bps: float = 40e6                  # additive increase
    rhai_bps: float = 200e6                # hyper increase
    decrease_interval_s: float = 4e-6      # mlx: rate-decrease check
    cnp_interval_s: float = 50e-6          # notification point: one CNP per flow per interval

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"DCQCN variant must be one of {', '.join(VARIANTS)}, got "
                             f"{self.variant!r}")
        for name in ("line_rate_bps", "min_rate_bps", "alpha_timer_s", "timer_s",
                     "decrease_interval_s", "cnp_interval_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"DCQCN {name} must be > 0, got {getattr(self, name)}")
        if self.min_rate_bps > self.line_rate_bps:
            raise ValueError(f"DCQCN min_rate_bps {self.min_rate_bps} exceeds line_rate_bps "
                             f"{self.line_rate_bps}")
        if not 0 < self.g <= 1:
            raise ValueError(f"DCQCN g must be in (0, 1], got {self.g}")
        if self.byte_counter_bytes <= 0 or self.fast_recovery_steps < 0:
            raise ValueError("DCQCN byte_counter_bytes must be > 0 and fast_recovery_steps >= 0")

    @classmethod
    def paper(cls, link_rate_bps: float = 10e9) -> "DcqcnParams":
        """Real-scale reference values of the DCQCN paper (DESIGN.md §4.2)."""
        return cls(variant="paper", line_rate_bps=link_rate_bps)

    @classmethod
    def mlx(cls, link_rate_bps: float = 10e9) -> "DcqcnParams":
        """HPCC ns-3's timer-only variant: F = 1, RP timer 300 µs, R_AI 5·bw/25 Mb/s,
        R_HAI 50·bw/25 Mb/s (bw in Gb/s)."""
        gbps = link_rate_bps / 1e9
        return cls(variant="mlx", line_rate_bps=link_rate_bps, alpha_timer_s=1e-6,
                   timer_s=300e-6, fast_recovery_steps=1, rai_bps=5e6 * gbps / 25,
                   rhai_bps=50e6 * gbps / 25)

    def scaled(self, scale: Scale) -> "DcqcnParams":
        """These real-scale values at emulation scale: rates / D, times x D, bytes as is."""
        return replace(self, line_rate_bps=scale.rate_bps(self.line_rate_bps),
                       min_rate_bps=scale.rate_bps(self.min_rate_bps),
                       rai_bps=scale.rate_bps(self.rai_bps), rhai_bps=scale.rate_bps(self.rhai_bps),
                       alpha_timer_s=scale.time_s(self.alpha_timer_s),
                       timer_s=scale.time_s(self.timer_s),
                       decrease_interval_s=scale.time_s(self.decrease_interval_s),
                       cnp_interval_s=scale.time_s(self.cnp_interval_s))


class ReactionPoint:
    """One flow's sending rate under DCQCN (``rate_bps`` is Rc)."""

    def __init__(self, params: DcqcnParams, now_s: float = 0.0):
        self.p = params
        self.rate_bps = params.line_rate_bps       # Rc: new flows start at line rate
        self.target_bps = params.line_rate_bps     # Rt
        self.alpha = 1.0
        self.cnps = 0
        self.cuts = 0
        self.t_count = 0                          # increase events from the timer
        self.bc_count = 0                         # ... and from the byte counter
        self.bytes_since = 0
        self.cut_once = False
        self._t_alpha = now_s + params.alpha_timer_s   # next alpha decay/update
        self._t_increase = None                   # next increase timer (after a first cut)
        # mlx state
        self._alpha_cnp = False
        self._decrease_cnp = False
        self._t_decrease = None
        self._first_cnp = True

    # --- events -------------------------------------------------------------------
    def on_cnp(self, now_s: float) -> None:
        self.advance(now_s)
        self.cnps += 1
        if self.p.variant == "paper":
            self._cut(now_s, update_alpha=True)
            self._t_alpha = now_s + self.p.alpha_timer_s
        else:
            self._alpha_cnp = self._decrease_cnp = True
            if self._first_cnp:
                self._first_cnp = False
                self.alpha = 1.0
                self._alpha_cnp = False
                self._t_alpha = now_s + self.p.alpha_timer_s
                self._t_decrease = now_s          # the first check runs at once
                self.advance(now_s)

    def on_sent(self, nbytes: int, now_s: float) -> None:
        """Account bytes sent (the paper variant's byte counter B)."""
        self.advance(now_s)
        if self.p.variant != "paper" or not self.cut_once:
            return
        self.bytes_since += nbytes
        while self.bytes_since >= self.p.byte_counter_bytes:
            self.bytes_since -= self.p.byte_counter_bytes
            self.bc_count += 1
            self._increase()

    def advance(self, now_s: float) -> None:
        """Fire every timer whose deadline is <= now_s, in time order."""
        p = self.p
        while True:
            deadlines = [(self._t_alpha, 0)]
            if self._t_increase is not None:
                deadlines.append((self._t_increase, 1))
            if self._t_decrease is not None:
                deadlines.append((self._t_decrease, 2))
            t, kind = min(deadlines)
            if t > now_s:
                return
            if kind == 0:
                if p.variant == "paper":
                    self.alpha *= 1 - p.g
                else:
                    self.alpha = (1 - p.g) * self.alpha + (p.g if self._alpha_cnp else 0.0)
                    self._alpha_cnp = False
                self._t_alpha = t + p.alpha_timer_s
            elif kind == 1:
                self._t_increase = t + p.timer_s
                self.t_count += 1
                self._increase()
            else:
                self._t_decrease = t + p.decrease_interval_s
                if self._decrease_cnp:
                    self._decrease_cnp = False
                    self._cut(t, update_alpha=False)

    # --- internals -------------------------------------------------------------------
    def _cut(self, now_s: float, update_alpha: bool) -> None:
        p = self.p
        self.target_bps = self.rate_bps
        if update_alpha:
            self.alpha = (1 - p.g) * self.alpha + p.g
        self.rate_bps = max(p.min_rate_bps, self.rate_bps * (1 - self.alpha / 2))
        self.cuts += 1
        self.cut_once = True
        self.t_count = self.bc_count = 0
        self.bytes_since = 0
        self._t_increase = now_s + p.timer_s

    def _increase(self) -> None:
        p = self.p
        if p.variant == "paper":
            # t_count/bc_count include this event: the first F events are fast recovery
            hi, lo = max(self.t_count, self.bc_count), min(self.t_count, self.bc_count)
            if hi <= p.fast_recovery_steps:
                pass                                  # fast recovery
            elif lo > p.fast_recovery_steps:
                self.target_bps += p.rhai_bps         # hyper increase
            else:
                self.target_bps += p.rai_bps          # additive increase
        else:
            stage = self.t_count - 1                  # the stage before this event
            if stage < p.fast_recovery_steps:
                pass
            elif stage == p.fast_recovery_steps:
                self.target_bps += p.rai_bps
            else:
                self.target_bps += p.rhai_bps
        if self.target_bps > p.line_rate_bps:
            self.target_bps = p.line_rate_bps
        self.rate_bps = (self.target_bps + self.rate_bps) / 2


class NotificationPoint:
    """Receiver side: at most one CNP per flow per ``cnp_interval_s`` while CE arrives."""

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
