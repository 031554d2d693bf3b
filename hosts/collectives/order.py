"""The dependency rule: when a rank applies a receive and when it posts a send.

Two rules, chosen per run (the spec's ``collective.order``):

* ``on_arrival`` (the Symphony paper's, §2.1; the default): a rank posts step s's send
  once it has fully received and applied step s-1, whatever its earlier steps are doing,
  and applies each receive when it arrives. On a ring that is all the data need: step s
  sends exactly the range received at step s-1 (docs/architecture.md, "Dependency rule").
* ``in_order``: receives are applied strictly in step order, so step s's send waits for
  steps 0..s-1 to have *all* arrived: what one FIFO connection per neighbour gives (and
  what this project did before 2026-12-02). Kept for ablation and for
  ``transport.per_step_sport = false``, where every step of a channel shares one path.

So that every result stays exact for any collective, ``on_arrival`` adds the two waits
the data need, which a ring never feels (each is implied by causality: :func:`dependencies`
says why). A receive waits for an earlier step's receive that writes the same bytes,
unless both are reductions (sums commute). A send waits for every earlier receive that
wrote into the range it sends (halving-doubling sends at step s what steps 0..s-1
reduced; a ring sends what step s-1 wrote, and a range an earlier step wrote that step
s-1 then overwrote).

Pure: :class:`StepOrder` is the state machine of one pass that ``hosts.rank`` and the
flow-level model (``emulator.model.ranks``) both drive.
"""

from __future__ import annotations

from dataclasses import dataclass

ON_ARRIVAL, IN_ORDER = "on_arrival", "in_order"
ORDERS = (ON_ARRIVAL, IN_ORDER)
DEFAULT_ORDER = ON_ARRIVAL


def check_order(order: str) -> str:
    if order not in ORDERS:
        raise ValueError(f"unknown dependency rule {order!r}; allowed: {', '.join(ORDERS)}")
    return order


def _overlap(a: tuple, b: tuple) -> bool:
    return a[1] > 0 and b[1] > 0 and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


@dataclass(frozen=True)
class Dependencies:
    """For one schedule under one rule, by step index: ``apply_after[j]``, the steps whose
    receives must be applied before step j's is; ``post_after[s]``, those whose receives
    must be applied before step s's send is posted (step 0's: none)."""
    apply_after: tuple
    post_after: tuple


def dependencies(schedule, order: str = DEFAULT_ORDER) -> Dependencies:
    """The waits of ``schedule`` (a ``hosts.collectives.schedule.Schedule``, which imports
    this module) under ``order``.

    On a ring all-reduce under ``on_arrival`` the only waits beyond the paper's (step s-1
    before step s's send) are ones causality already keeps, so they never hold anything:
    the all-gather's copy of chunk c (and its send of it) waits for the reduce-scatter's
    reduce into c, and the copied chunk cannot exist before this rank's own contribution
    to c was sent, which was posted only after that reduce.
    """
    steps = schedule.steps
    check_order(order)
    if order == IN_ORDER:
        chain = tuple((j - 1,) if j else () for j in range(len(steps)))
        return Dependencies(chain, chain)
    apply_after, post_after = [], []
    for j, st in enumerate(steps):
        apply_after.append(tuple(
            k for k in range(j) if _overlap(steps[k].recv_range, st.recv_range)
            and not (steps[k].op == st.op == "reduce")))
        wrote = {k for k in range(j) if _overlap(steps[k].recv_range, st.send_range)}
        post_after.append(tuple(sorted(wrote | {j - 1})) if j else ())
    return Dependencies(tuple(apply_after), tuple(post_after))


class StepOrder:
    """One pass of one rank under a rule: told which step's receive has arrived, it says
    which receives to apply now (in that order) and which steps' sends become due.

    Step 0's send is due at the start (the caller posts it); every other step's send is
    returned exactly once, when its last wait is applied.
    """

    __slots__ = ("deps", "n", "arrived", "applied", "posted", "_waiting")

    def __init__(self, deps: Dependencies):
        self.deps = deps
        self.n = len(deps.apply_after)
        self.arrived = [False] * self.n
        self.applied = [False] * self.n
        self.posted = [False] * self.n
        if self.n:
            self.posted[0] = True
        self._waiting: list[int] = []        # arrived, not applied yet (in step order)

    def arrive(self, i: int) -> tuple[list[int], list[int]]:
        """Step ``i``'s receive is in: (steps to apply now, in order; sends due now)."""
        if self.arrived[i]:
            raise RuntimeError(f"step {i} arrived twice")
        self.arrived[i] = True
        self._waiting.append(i)
        self._waiting.sort()
        apply: list[int] = []
        progress = True
        while progress:
            progress = False
            for j in self._waiting:
                if all(self.applied[k] for k in self.deps.apply_after[j]):
                    self._waiting.remove(j)
                    self.applied[j] = True
                    apply.append(j)
                    progress = True
                    break
        due = []
        if apply:
            for s in range(1, self.n):
                if not self.posted[s] and all(self.applied[k] for k in self.deps.post_after[s]):
                    self.posted[s] = True
                    due.append(s)
        return apply, due

    def expects(self, i: int) -> bool:
        """Whether step ``i``'s receive is still to come."""
        return not self.arrived[i]

    @property
    def done(self) -> bool:
        """Every receive applied: the pass holds its result."""
        return all(self.applied)
