"""Switch schemes: what a switch does to a RoCE data packet after the congestion point.

One class per scheme behind one small interface, and a registry. A scheme sees each RoCE
data packet's header once, with the time and the switch's random source, and answers
two things: whether it wants the packet ECN-marked (the pipeline ORs that with RED and
attributes the mark) and whether the packet goes to the port's high-priority class.
The emulator side of a scheme (its port qdisc, whether Symphony is on from the start)
is ``emulator.spec.schemes``; both use these names.

* ``baseline``: nothing beyond RED.
* ``symphony``: the paper's Algorithm 1 (``switch_agent.symphony``): marks flows of
  steps that run ahead of the job's step_min (docs/architecture.md §5.3).
* ``pq``: the paper's priority-queue baseline (§2.3, Fig 5): the tracker only tracks
  step_min; packets of lagging flows (step <= step_min) go to the high class
  (docs/architecture.md §5.4).

Adding a scheme: a class here with ``decide``, one registry entry, and its emulator
side in ``emulator.spec.schemes`` (docs/architecture.md §11).
"""

from __future__ import annotations

from typing import Callable

from runtime import wire
from runtime.compiled import mypyc_attr


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class SwitchScheme:
    """The per-packet hook. ``decide`` returns (mark, high_priority)."""
    name = "baseline"

    def __init__(self, tracker, tracking: str = "job"):
        # tracker: a switch_agent.symphony.SymphonyTracker (not imported: it imports the
        # config, which checks scheme names against this registry)
        self.tracker = tracker
        self.per_ring = tracking == "ring"

    def key(self, hdr) -> object:
        """The tracker's state key of a packet: its job, or its (job, ring)."""
        return (hdr.job, hdr.channel) if self.per_ring else hdr.job

    def decide(self, hdr, now_s: float, random: Callable[[], float]) -> tuple[bool, bool]:
        return False, False


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class SymphonyMarking(SwitchScheme):
    name = "symphony"

    def decide(self, hdr, now_s: float, random: Callable[[], float]) -> tuple[bool, bool]:
        p = self.tracker.observe(self.key(hdr), hdr.step, hdr.psn, hdr.last, now_s)
        return p > 0.0 and (p >= 1.0 or random() < p), False


# compiled (runtime/compiled.py), still open to researchers' subclasses
@mypyc_attr(allow_interpreted_subclasses=True)
class StepPriority(SwitchScheme):
    name = "pq"

    def decide(self, hdr, now_s: float, random: Callable[[], float]) -> tuple[bool, bool]:
        key = self.key(hdr)
        self.tracker.observe(key, hdr.step, hdr.psn, hdr.last, now_s)
        return False, wire.step_diff(hdr.step, self.tracker.jobs[key].step_min) <= 0


SWITCH_SCHEMES: dict[str, type[SwitchScheme]] = {
    "baseline": SwitchScheme,
    "symphony": SymphonyMarking,
    "pq": StepPriority,
}
