"""Progress lines on long tasks: one throttle, so every line a run, a sweep or a summary
prints comes at most so often, whatever its shape.

The clock is the caller's (a line is progress only: nothing a run measures reads it).
"""

from __future__ import annotations

import time


class Every:
    """Due once ``first_s`` after ``start``, then at most every ``every_s``: ``due(now)``
    says whether a line is due at ``now`` (and, if so, waits for the next one)."""

    def __init__(self, every_s: float, start: float = 0.0, first_s: float | None = None):
        self.every_s = every_s
        self.next = start + (every_s if first_s is None else first_s)

    def due(self, now: float) -> bool:
        if now < self.next:
            return False
        self.next = now + self.every_s
        return True


class Tally:
    """``tell(what, done)`` says ``<label>: <what> <done> of <total> <unit> (<s> s)`` to
    ``say`` at most every ``every_s`` of ``clock``; nothing when ``say`` is None."""

    def __init__(self, say, label: str, total: int, unit: str = "runs",
                 every_s: float = 10.0, clock=time.monotonic):
        self.say, self.label, self.total, self.unit, self.clock = say, label, total, unit, clock
        self.t0 = clock()
        self.every = Every(every_s, self.t0)

    def __call__(self, what: str, done: int) -> None:
        if self.say is None:
            return
        now = self.clock()
        if self.every.due(now):
            self.say(f"{self.label}: {what} {done} of {self.total} {self.unit} "
                     f"({now - self.t0:.0f} s)")
