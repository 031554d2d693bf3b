"""Which flows a step-aware scheme serves first, kept up to date as flows come and go.

* ``ideal-priority``: on every link, the flows of their job's lowest active step (with
  ``tracking = "ring"``: their (job, channel)'s) go first; the rest share what is left. A flow's
  level is the same on every hop. It is the strict-priority idea of the Symphony paper's
  §2.3 made perfect (every link knows the job's true lowest step at once), not a
  mechanism: an estimate of what serving the laggards first could win back. It is a
  heuristic, not a proven bound (no case slower than ``baseline`` was found).
* ``pq`` (the emulator's ``pq`` scheme: the paper's §2.3 / Fig 5 baseline): every
  switch keeps, per job, the lowest step among the job's active flows that cross it
  (``switch_agent``'s ``step_min``), and its strict-priority ports serve flows of that
  step first. A flow may be high at one switch and low at the next; host NICs have no
  priority (their egress is one FIFO), so every flow is low there.

Levels (``emulator.model.maxmin``, 0 first): ``BACKGROUND`` fixed-rate non-RoCE traffic,
then ``HIGH`` prioritized collective flows, then ``LOW`` every other collective flow (under
``baseline`` nothing is HIGH). Background is a fixed allocation taken off first, under
every scheme: a UDP stream does not back off, so it holds its rate on every hop of its
path and the collectives share what it leaves. That is exact in a FIFO; a real ``pq`` port
queues it with the low class, so where the high class alone would fill such a port the
stream would lose packets there instead, which the model does not show.

A group's lowest step counts every active flow (started, not yet delivered), black-holed
ones included (for ``pq``: every flow on a path through the switch).
"""

from __future__ import annotations

BACKGROUND, HIGH, LOW = 0, 1, 2


class Groups:
    """Active flows by group and step; ``lowest[group]`` the lowest step in it."""

    def __init__(self):
        self.steps: dict = {}            # group -> {step: set of flows}
        self.lowest: dict = {}
        self.touched: set = set()

    def add(self, group, flow) -> None:
        self.steps.setdefault(group, {}).setdefault(flow.gstep, set()).add(flow)
        self.touched.add(group)

    def remove(self, group, flow) -> None:
        by_step = self.steps[group]
        s = by_step[flow.gstep]
        s.discard(flow)
        if not s:
            del by_step[flow.gstep]
        self.touched.add(group)

    def changed(self):
        """Flows at a group's old or new lowest step, for every group whose lowest moved
        since the last call (their level may have changed)."""
        out = []
        for g in self.touched:
            by_step = self.steps.get(g, {})
            new = min(by_step) if by_step else None
            old = self.lowest.get(g)
            if new != old:
                self.lowest[g] = new
                out.extend(by_step.get(old, ()))
                out.extend(by_step.get(new, ()))
        self.touched.clear()
        return out


class Priorities:
    """Per scheme: which groups a flow is in and its level(s) from the groups' state."""

    def __init__(self, scheme: str, tracking: str):
        self.scheme, self.tracking = scheme, tracking            # tracking: "job" | "ring"
        self.groups = Groups()

    def groups_of(self, flow) -> list:
        if flow.background or self.scheme == "baseline":
            return []
        if self.scheme == "ideal-priority":
            return [(flow.job,) if self.tracking == "job" else (flow.job, flow.channel)]
        return [(node, flow.job) for node in (flow.path or ())[1:-1]]

    def enter(self, flow) -> None:
        for g in self.groups_of(flow):
            self.groups.add(g, flow)

    def leave(self, flow) -> None:
        for g in self.groups_of(flow):
            self.groups.remove(g, flow)

    def level(self, flow):
        """An int (the same on every hop) or, for ``pq``, one level per hop."""
        if self.scheme == "pq":
            if flow.background:
                return [BACKGROUND] * len(flow.links)
            low = self.groups.lowest
            return [LOW if i == 0 or low.get((node, flow.job)) != flow.gstep else HIGH
                    for i, node in enumerate(flow.path[:-1])]
        if flow.background:
            return BACKGROUND
        if self.scheme == "baseline":
            return LOW
        g = self.groups_of(flow)[0]
        return HIGH if self.groups.lowest.get(g) == flow.gstep else LOW
