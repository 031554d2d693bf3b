"""Symphony's per-job progress tracker and marking probability (paper §3.3–§3.5).

A pure class: no clock, no randomness, no I/O. The caller passes each RoCE data
packet's (job, step, psn, last) and the current time, gets the marking probability
P back and tosses the coin itself. Names follow Algorithm 1 of the paper:

    step_min   smallest step currently observed among the job's active flows
    psn_rec    max PSN seen in step_min during the current window (§3.4.2)
    alpha      adaptive aggressiveness, >= 1, updated once per window (eq. 2, 3)
    cnt_total  packets of the job in the current window (§3.4.3)
    cnt_op     of those, packets from an outpacing step (step > step_min)

Per packet (docs/architecture.md §5.3):

1. If ``now`` lies in a later window than the current one, close the current window:
   if ``cnt_total > n_sample`` (sample guard) ``alpha <- max(1, alpha ± 1)`` (+1 when
   ``cnt_op >= tau * cnt_total``), then reset both counters and ``psn_rec <- 0``.
   Windows lie on a fixed grid ``[t0 + n*t_win, t0 + (n+1)*t_win)`` anchored at the
   job's first packet; empty windows in between change nothing.
2. ``cnt_total += 1``; ``cnt_op += 1`` if ``step > step_min`` (before step 3).
3. LAST: ``step_min <- step + 1, psn_rec <- 0``; elif ``step < step_min``:
   ``step_min, psn_rec <- step, psn`` (late packet: lazy correction); elif
   ``step == step_min``: ``psn_rec <- max(psn_rec, psn)``.
4. If ``step <= step_min`` or ``psn_rec <= n_warmup``: P = 0; else
   ``P = min(1, k * alpha * psn / psn_rec)`` (eq. 1, 4).

Steps are the 16-bit values from the wire and are compared with serial-number
arithmetic (RFC 1982), so a job may run past step 65535.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Final, Hashable, NamedTuple

from switch_agent.config import SymphonyParams

STEP_MASK: Final = 0xFFFF


class WindowRecord(NamedTuple):
    """A closed window of one job, as handed to the ``on_window`` callback."""
    job: Hashable         # the job, or (job, ring) under per-ring tracking
    window: int           # index on the job's grid
    t_start_s: float
    step_min: int
    psn_rec: int
    alpha: int            # alpha after this window's update
    cnt_total: int
    cnt_op: int


class JobState:
    """Symphony's per-job state block (§3.3): progress tracking + adaptive control."""
    __slots__ = ("step_min", "psn_rec", "alpha", "cnt_total", "cnt_op", "t0_s", "window")

    def __init__(self, step: int, now_s: float):
        self.step_min = step
        self.psn_rec = 0
        self.alpha = 1
        self.cnt_total = 0
        self.cnt_op = 0
        self.t0_s = now_s
        self.window = 0


class SymphonyTracker:
    """Per-switch Symphony: isolated state per job (§3.5), marking probability per packet."""

    def __init__(self, params: SymphonyParams,
                 on_window: Callable[[WindowRecord], None] | None = None):
        self.jobs: dict = {}              # job (or (job, ring), see SymphonyParams.tracking)
        self.on_window = on_window
        self._set(params)

    def _set(self, params: SymphonyParams) -> None:
        # Plain attributes by their names in Algorithm 1 (read per packet: no properties).
        self.params = params
        self.k, self.tau, self.t_win_s = params.k, params.tau, params.t_win_s
        self.n_warmup, self.n_sample = params.n_warmup, params.n_sample

    def configure(self, **changes) -> None:
        """Change parameters while running (checked by :class:`SymphonyParams`, so a
        rejected reconfiguration changes nothing). A new ``t_win_s`` re-anchors each
        job's grid at the start of its current window, so no window is cut short or
        stretched."""
        old = self.params
        self._set(replace(old, **changes))
        if self.params.t_win_s != old.t_win_s:
            for st in self.jobs.values():
                st.t0_s += st.window * old.t_win_s
                st.window = 0

    def reset(self) -> None:
        """Forget every job (Symphony switched on afresh)."""
        self.jobs.clear()

    def state(self, job: Hashable) -> tuple[int, int, int]:
        """(step_min, psn_rec, alpha) of ``job``; KeyError if it has sent nothing yet."""
        st = self.jobs[job]
        return st.step_min, st.psn_rec, st.alpha

    def observe(self, job: Hashable, step: int, psn: int, last: bool, now_s: float) -> float:
        """Account one data packet of ``job`` and return its marking probability P."""
        st = self.jobs.get(job)
        if st is None:
            st = self.jobs[job] = JobState(step & STEP_MASK, now_s)
        else:
            window = int((now_s - st.t0_s) // self.t_win_s)
            if window > st.window:
                self._close_window(job, st)
                st.window = window

        # Step 2: traffic statistics, against step_min before this packet's update.
        # d = step - step_min in 16-bit serial arithmetic (runtime.wire.step_diff, inlined:
        # this runs for every packet).
        st.cnt_total += 1
        d = ((step - st.step_min + 0x8000) & STEP_MASK) - 0x8000
        if d > 0:
            st.cnt_op += 1

        # Step 3: progress tracking (Algorithm 1, lines 3-10).
        if last:
            st.step_min = (step + 1) & STEP_MASK
            st.psn_rec = 0
            return 0.0                    # step < step_min now: never marked (line 11)
        if d < 0:
            st.step_min = step & STEP_MASK
            st.psn_rec = psn
            return 0.0                    # step == step_min now
        if d == 0:
            if psn > st.psn_rec:
                st.psn_rec = psn
            return 0.0

        # Step 4: selective throttling (lines 11-17); here step > step_min.
        if st.psn_rec <= self.n_warmup:
            return 0.0
        p = self.k * st.alpha * psn / st.psn_rec
        return p if p < 1.0 else 1.0

    def _close_window(self, job: Hashable, st: JobState) -> None:
        if st.cnt_total > self.n_sample:
            if st.cnt_op >= self.tau * st.cnt_total:
                st.alpha += 1
            elif st.alpha > 1:
                st.alpha -= 1
        if self.on_window is not None:
            self.on_window(WindowRecord(job, st.window, st.t0_s + st.window * self.t_win_s,
                                        st.step_min, st.psn_rec, st.alpha,
                                        st.cnt_total, st.cnt_op))
        st.cnt_total = 0
        st.cnt_op = 0
        st.psn_rec = 0
