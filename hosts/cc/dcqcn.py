"""DCQCN's reaction point in two variants, over one parameter set.

:class:`DcqcnPaper` (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
SIGCOMM'15)
    on CNP: ``Rt <- Rc; alpha <- (1-g) alpha + g; Rc <- max(Rmin, Rc (1 - alpha/2))``;
    the increase timer, byte counter and their event counts restart.
    ``alpha <- (1-g) alpha`` every ``alpha_timer_s`` (K) without a CNP.
    Increase events: every ``timer_s`` (T) and every ``byte_counter_bytes`` (B) sent. With
    T_count and BC_count the events so far, this one included: fast recovery for the
    first F events, i.e. while max(T, BC) <= F (``Rc <- (Rt + Rc)/2``), hyper increase
    once min(T, BC) > F (``Rt += R_HAI``), additive increase otherwise (``Rt += R_AI``),
    then ``Rc <- (Rt + Rc)/2``.
    Flows start at line rate; nothing increases before the first cut.

:class:`DcqcnMlx` (the Mellanox-style, timer-only variant of the HPCC ns-3 simulator,
Li et al., SIGCOMM'19)
    a CNP sets flags; every ``alpha_timer_s`` alpha moves up (CNP seen) or down;
    every ``decrease_interval_s`` a flagged decrease cuts ``Rt <- Rc;
    Rc <- max(Rmin, Rc (1 - alpha/2))`` and restarts the increase timer; every
    ``timer_s`` (the RP timer) one increase event: fast recovery while the stage < F,
    additive at F, hyper above. The first CNP sets alpha to 1 and cuts at once. Two
    parameters give HPCC ns-3's own rules instead (``rdma-hw.cc``):
    ``clamp_target_rate=False`` keeps Rt on a cut that follows another with no RP-timer
    stage between them (``CheckRateDecreaseMlx``), and ``first_cut_at_once=False`` makes
    the first CNP arm the decrease checks without cutting (``cnp_received_mlx``: the
    rate times ``rateOnFirstCNP`` = 1, its first check a decrease interval later).

Timers due at the same instant fire alpha first, then increase, then decrease (as HPCC
ns-3 schedules them). All rates in bit/s, all times in seconds, already at emulation
scale when a controller gets them (``DcqcnParams.scaled``).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass, replace

from hosts.cc.base import CongestionControl, require_positive
from runtime.compiled import mypyc_attr
from runtime.scale import CNP_INTERVAL_S, PAPER_LINK_RATE_BPS, Scale

# Timer kinds; the number is the order among deadlines due at the same instant.
_ALPHA, _INCREASE, _DECREASE = 0, 1, 2


@dataclass(frozen=True)
class DcqcnParams:
    line_rate_bps: float = PAPER_LINK_RATE_BPS
    min_rate_bps: float = 100e6
    g: float = 1 / 256
    alpha_timer_s: float = 55e-6           # K: alpha decay (paper) / alpha update (mlx)
    timer_s: float = 55e-6                 # T: rate-increase timer (paper) / RP timer (mlx)
    byte_counter_bytes: int = 10 * 1024 * 1024   # B (paper only)
    fast_recovery_steps: int = 5           # F
    rai_bps: float = 40e6                  # additive increase
    rhai_bps: float = 200e6                # hyper increase
    decrease_interval_s: float = 4e-6      # mlx: rate-decrease check
    cnp_interval_s: float = CNP_INTERVAL_S  # notification point: one CNP per flow per interval
    # mlx only, the two places where HPCC ns-3's code (rdma-hw.cc) departs from ours:
    clamp_target_rate: bool = True         # False: a cut keeps Rt unless an RP-timer stage
    #                                        passed since the last cut (CheckRateDecreaseMlx
    #                                        with CLAMP_TARGET_RATE 0, as its run.py sets it)
    first_cut_at_once: bool = True         # False: the first CNP only arms the checks, the
    #                                        first cut comes at the first one, a decrease
    #                                        interval later (cnp_received_mlx)

    def __post_init__(self):
        require_positive("DCQCN", self, ("line_rate_bps", "min_rate_bps", "alpha_timer_s",
                                         "timer_s", "decrease_interval_s", "cnp_interval_s"))
        if self.min_rate_bps > self.line_rate_bps:
            raise ValueError(f"DCQCN min_rate_bps {self.min_rate_bps} exceeds line_rate_bps "
                             f"{self.line_rate_bps}")
        if not 0 < self.g <= 1:
            raise ValueError(f"DCQCN g must be in (0, 1], got {self.g}")
        if self.byte_counter_bytes <= 0 or self.fast_recovery_steps < 0:
            raise ValueError("DCQCN byte_counter_bytes must be > 0 and fast_recovery_steps >= 0")

    def scaled(self, scale: Scale) -> "DcqcnParams":
        """These real-scale values at emulation scale: rates / D, times x D, bytes as is."""
        return replace(self, line_rate_bps=scale.rate_bps(self.line_rate_bps),
                       min_rate_bps=scale.rate_bps(self.min_rate_bps),
                       rai_bps=scale.rate_bps(self.rai_bps), rhai_bps=scale.rate_bps(self.rhai_bps),
                       alpha_timer_s=scale.time_s(self.alpha_timer_s),
                       timer_s=scale.time_s(self.timer_s),
                       decrease_interval_s=scale.time_s(self.decrease_interval_s),
                       cnp_interval_s=scale.time_s(self.cnp_interval_s))


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class _Dcqcn(CongestionControl):
    """What both variants share: Rc/Rt/alpha, the alpha and increase timers, the cut
    and the increase ``Rc <- (Rt + Rc)/2``. A variant says what a CNP and the alpha
    timer do and how much an increase event adds to Rt."""

    def __init__(self, params: DcqcnParams, now_s: float = 0.0):
        super().__init__(params.line_rate_bps)
        self.p = params
        self.target_bps = params.line_rate_bps     # Rt
        self.alpha = 1.0
        self.t_count = 0                           # increase events from the timer
        self._t_alpha = now_s + params.alpha_timer_s
        self._t_increase: float | None = None     # armed by the first cut
        self._t_next = -math.inf                   # the soonest deadline (-inf: unknown)

    def on_cnp(self, now_s: float) -> None:
        self.advance(now_s)                        # due timers act before the CNP
        self.cnps += 1
        self._on_cnp(now_s)
        self._t_next = min(self._deadlines())[0]   # a CNP re-arms timers

    def on_sent(self, nbytes: int, now_s: float) -> None:
        self.advance(now_s)

    def advance(self, now_s: float) -> None:
        """Fire every timer due by ``now_s``, in time order (ties: alpha, increase,
        decrease). The hot path (a call per packet sent) returns at the first compare
        when nothing is due; a run of alpha updates with no other timer between them is
        fired in one tight loop (its deadlines added up one period at a time, as
        :meth:`_fire` does, so the times and the order are the same)."""
        if now_s < self._t_next:
            return
        while True:
            d = self._deadlines()
            t, kind = min(d)
            if t > now_s:
                self._t_next = t
                return
            if kind != _ALPHA:
                self._fire(kind, t)
                continue
            other = min((x for x in d if x[1] != _ALPHA), default=(math.inf, _ALPHA))
            period, on_alpha = self.p.alpha_timer_s, self._on_alpha_timer
            while True:
                on_alpha()
                t += period
                if t > now_s or (t, _ALPHA) > other:
                    break
            self._t_alpha = t

    # --- what a variant defines -----------------------------------------------------
    @abstractmethod
    def _on_cnp(self, now_s: float) -> None: ...

    @abstractmethod
    def _on_alpha_timer(self) -> None: ...

    @abstractmethod
    def _increase_step_bps(self) -> float:
        """What this increase event adds to Rt (0 in fast recovery)."""

    # --- shared machinery -------------------------------------------------------------
    def _deadlines(self) -> list[tuple[float, int]]:
        d = [(self._t_alpha, _ALPHA)]
        if self._t_increase is not None:
            d.append((self._t_increase, _INCREASE))
        return d

    def _fire(self, kind: int, t: float) -> None:
        if kind == _ALPHA:
            self._on_alpha_timer()
            self._t_alpha = t + self.p.alpha_timer_s
        else:
            self._t_increase = t + self.p.timer_s
            self.t_count += 1
            self._increase()

    def _cut(self, now_s: float) -> None:
        p = self.p
        self.target_bps = self.rate_bps
        self.rate_bps = max(p.min_rate_bps, self.rate_bps * (1 - self.alpha / 2))
        self.cuts += 1
        self.t_count = 0
        self._t_increase = now_s + p.timer_s

    def _increase(self) -> None:
        self.target_bps = min(self.p.line_rate_bps, self.target_bps + self._increase_step_bps())
        self.rate_bps = (self.target_bps + self.rate_bps) / 2


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class DcqcnPaper(_Dcqcn):
    """DCQCN as in Zhu et al., SIGCOMM'15: cut on every CNP, increase on a timer and a
    byte counter (``rate_bps`` is Rc, ``target_bps`` Rt)."""

    def __init__(self, params: DcqcnParams, now_s: float = 0.0):
        super().__init__(params, now_s)
        self.bc_count = 0                          # increase events from the byte counter
        self.bytes_since = 0

    @staticmethod
    def defaults(real_line_rate_bps: float = PAPER_LINK_RATE_BPS) -> DcqcnParams:
        """The paper's real-scale reference values for a link of that rate."""
        return DcqcnParams(line_rate_bps=real_line_rate_bps)

    def on_sent(self, nbytes: int, now_s: float) -> None:
        super().on_sent(nbytes, now_s)
        if not self.cuts:                          # nothing increases before the first cut
            return
        self.bytes_since += nbytes
        while self.bytes_since >= self.p.byte_counter_bytes:
            self.bytes_since -= self.p.byte_counter_bytes
            self.bc_count += 1
            self._increase()

    def _on_cnp(self, now_s: float) -> None:
        self.alpha = (1 - self.p.g) * self.alpha + self.p.g     # before the cut uses it
        self._cut(now_s)
        self._t_alpha = now_s + self.p.alpha_timer_s

    def _on_alpha_timer(self) -> None:
        self.alpha *= 1 - self.p.g

    def _cut(self, now_s: float) -> None:
        super()._cut(now_s)
        self.bc_count = 0
        self.bytes_since = 0

    def _increase_step_bps(self) -> float:
        # t_count/bc_count include this event: the first F events are fast recovery
        f = self.p.fast_recovery_steps
        if max(self.t_count, self.bc_count) <= f:
            return 0.0
        if min(self.t_count, self.bc_count) > f:
            return self.p.rhai_bps
        return self.p.rai_bps


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class DcqcnMlx(_Dcqcn):
    """DCQCN as the HPCC ns-3 simulator's Mellanox-style model: CNPs only set flags that
    the alpha and decrease timers consume; increases come from the RP timer alone."""

    def __init__(self, params: DcqcnParams, now_s: float = 0.0):
        super().__init__(params, now_s)
        self._alpha_cnp = False                    # a CNP since the last alpha update
        self._decrease_cnp = False                 # ... since the last decrease check
        self._t_decrease: float | None = None     # armed by the first CNP

    @staticmethod
    def defaults(real_line_rate_bps: float = PAPER_LINK_RATE_BPS) -> DcqcnParams:
        """HPCC ns-3's values: F = 1, RP timer 300 µs, alpha update every 1 µs,
        R_AI 5·bw/25 Mb/s, R_HAI 50·bw/25 Mb/s (bw in Gb/s); the rest as the paper's."""
        gbps = real_line_rate_bps / 1e9
        return DcqcnParams(line_rate_bps=real_line_rate_bps, alpha_timer_s=1e-6,
                           timer_s=300e-6, fast_recovery_steps=1, rai_bps=5e6 * gbps / 25,
                           rhai_bps=50e6 * gbps / 25)

    def _on_cnp(self, now_s: float) -> None:
        self._alpha_cnp = self._decrease_cnp = True
        if self._t_decrease is None:               # the first CNP: alpha 1, checks armed
            self.alpha = 1.0
            self._alpha_cnp = False
            self._t_alpha = now_s + self.p.alpha_timer_s
            if self.p.first_cut_at_once:           # ours: the first check is now
                self._t_decrease = now_s
                self._t_next = -math.inf
                self.advance(now_s)
            else:                                  # HPCC: Rt <- Rc; first check later
                self.target_bps = self.rate_bps
                self._t_decrease = now_s + self.p.decrease_interval_s

    def _on_alpha_timer(self) -> None:
        self.alpha = (1 - self.p.g) * self.alpha + (self.p.g if self._alpha_cnp else 0.0)
        self._alpha_cnp = False

    def _deadlines(self) -> list[tuple[float, int]]:
        d = super()._deadlines()
        if self._t_decrease is not None:
            d.append((self._t_decrease, _DECREASE))
        return d

    def _fire(self, kind: int, t: float) -> None:
        if kind != _DECREASE:
            super()._fire(kind, t)
            return
        self._t_decrease = t + self.p.decrease_interval_s
        if self._decrease_cnp:
            self._decrease_cnp = False
            keep = self.target_bps if not self.p.clamp_target_rate and self.t_count == 0 \
                else None
            self._cut(t)
            if keep is not None:                   # no RP-timer stage since the last cut
                self.target_bps = keep

    def _increase_step_bps(self) -> float:
        stage = self.t_count - 1                   # the stage before this event
        f = self.p.fast_recovery_steps
        if stage < f:
            return 0.0
        return self.p.rai_bps if stage == f else self.p.rhai_bps
