"""The switch side of the fidelity monitor (docs/architecture.md §8), per egress port, from periodic
samples of the kernel's qdisc (``kernel_queues``) next to the agent's queue model:

* **Queue-model error**: |model backlog - kernel backlog| at the same instant, over the
  samples where either holds at least ``min_queue_bytes`` (two 4 KB frames): RED and
  Symphony decide on the model, so it must follow the real queue.
* **Mininet-HiFi's invariant**: a port that is busy for a whole sampling interval must send
  at its configured rate. A port is certainly busy over [t0, t1] when its backlog at t0
  alone takes that long to send (backlog >= rate x (t1 - t0)); over those intervals the
  bytes its shaper sent, divided by rate x (t1 - t0), is the *busy utilization*, 1.0 when
  the link is emulated faithfully (below: the shaper was starved of CPU; above: it let
  bursts through).

On a lossless port the agent holds most of the queue itself (``switch_agent.lossless``):
the model's backlog less what the agent holds is compared with the qdisc's, and the
whole backlog (held and qdisc) says whether the port is busy; an interval the port spent
partly paused by its far end is not judged.

Pure: the caller passes times, backlogs and byte counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PortFidelity:
    rate_bps: float
    min_queue_bytes: float = 8192.0
    samples: int = 0
    err_sum_bytes: float = 0.0
    err_max_bytes: float = 0.0
    busy_intervals: int = 0
    busy_sent_bytes: float = 0.0
    busy_expected_bytes: float = 0.0
    busy_util_min: float | None = None
    worst: tuple | None = None      # the sample of err_max_bytes: (t, model, kernel)
    _last: tuple | None = field(default=None, repr=False)   # (t, sent, backlog, paused)

    def sample(self, t_s: float, model_backlog: float, kernel_backlog: float,
               sent_bytes: int, held_bytes: float = 0.0, paused_s: float = 0.0) -> None:
        """One sample. On a lossless port (``switch_agent.lossless``) ``held_bytes`` of the
        model's backlog wait in the agent, not in the qdisc, and ``paused_s`` is the time
        the port has been paused so far: an interval with a pause in it is not judged
        busy (a paused port is not an idle one)."""
        model_backlog -= held_bytes
        if max(model_backlog, kernel_backlog) >= self.min_queue_bytes:
            err = abs(model_backlog - kernel_backlog)
            self.samples += 1
            self.err_sum_bytes += err
            if self.worst is None or err > self.err_max_bytes:
                self.err_max_bytes = err
                self.worst = (t_s, model_backlog, kernel_backlog)
        if self._last is not None:
            t0, sent0, backlog0, paused0 = self._last
            expected = self.rate_bps / 8 * (t_s - t0)
            if expected > 0 and backlog0 >= expected and sent_bytes >= sent0 \
                    and paused_s == paused0:
                util = (sent_bytes - sent0) / expected
                self.busy_intervals += 1
                self.busy_sent_bytes += sent_bytes - sent0
                self.busy_expected_bytes += expected
                self.busy_util_min = util if self.busy_util_min is None \
                    else min(self.busy_util_min, util)
        self._last = (t_s, sent_bytes, kernel_backlog + held_bytes, paused_s)

    def summary(self) -> dict:
        return {"queue_samples": self.samples,
                "queue_err_mean_bytes": self.err_sum_bytes / self.samples if self.samples
                else None,
                "queue_err_max_bytes": self.err_max_bytes if self.samples else None,
                # where the model departed most, to tell which side ran ahead: a kernel
                # queue longer than the model's is a shaper that sent late (its CPU was
                # taken), a shorter one packets the model holds that the kernel sent
                "queue_err_worst": dict(zip(("t_s", "model_bytes", "kernel_bytes"),
                                            self.worst)) if self.worst else None,
                "busy_intervals": self.busy_intervals,
                "busy_util": self.busy_sent_bytes / self.busy_expected_bytes
                if self.busy_intervals else None,
                "busy_util_min": self.busy_util_min}
