"""The simulator's virtual clock: an event heap and the loop that runs it.

Pure: the time is the loop's own; nothing here knows what an event does.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Callable


class Event:
    """What the loop's own kinds of event share: ``fire(t)``. A port, a datagram reaching
    its host and a host's wake-up are Events (called natively when compiled, and made
    without a bound method or a ``partial`` each time); anything else is a callable."""

    def fire(self, t: float) -> None:
        raise NotImplementedError


class Loop:
    """The virtual clock and its event heap: ``at(t, fn)`` calls ``fn(t)`` (or
    ``fn.fire(t)``, an :class:`Event`) then; events of one time in the order they were
    put."""

    def __init__(self):
        self.now = 0.0
        self._heap: list = []
        self._seq = 0
        self.events = 0
        self.stop = False               # set by an event that may have ended the run

    @property
    def idle(self) -> bool:
        """No event left: nothing can happen any more."""
        return not self._heap

    def at(self, t_s: float, fn: Event | Callable[[float], None]) -> None:
        self._seq += 1
        heappush(self._heap, (t_s if t_s > self.now else self.now, self._seq, fn))

    def run(self, until_s: float, done: Callable[[], bool]) -> bool:
        """Run events up to ``until_s``; True when ``done()`` held. ``done`` is asked after
        an event that set :attr:`stop` (whoever may have ended the run sets it), and at
        the end."""
        heap, pop = self._heap, heappop
        self.stop = False
        events = self.events
        try:
            while heap:
                t = heap[0][0]
                if t > until_s:
                    self.now = until_s
                    return done()
                _, _, fn = pop(heap)
                self.now = t
                events += 1
                if isinstance(fn, Event):
                    fn.fire(t)
                else:
                    fn(t)
                if self.stop:
                    self.stop = False
                    if done():
                        return True
            return done()
        finally:
            self.events = events
