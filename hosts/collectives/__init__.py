"""Collective algorithms as per-rank schedules, behind one registry (ASTRA-sim style: one
class per collective, one interface, :class:`~hosts.collectives.base.Collective`).

``ALGORITHMS[name]`` supplies, for a rank's *group* (its ring, or for a grid algorithm the
grid, a tuple of rows of rank ids):

* ``schedule(group, rank, nbytes, align=4)`` — the rank's :class:`Schedule`;
* ``n_steps(group)``; ``bus_factor(n)`` — nccl-tests' busbw / algbw;
* ``needs_grid``; ``check(shape)`` — why a group of that size (or ``(rows, columns)``)
  cannot run it, or None;
* ``result(rank, group, nbytes, align)`` — the byte ranges the rank ends with and whose
  inputs each sums; :mod:`hosts.collectives.expected` (numpy) makes the arrays a pass
  must produce from it (also ``expected(rank, group, nbytes, itemsize, base)``), and
  :mod:`hosts.collectives.checksums` the statistics each segment must end with, for
  runs too big for real buffers;
* ``members(group)``, ``n_chunks(group)``, ``group_of(rings, grid, rank)`` — for a job's
  layout.

Every schedule runs under the run's dependency rule (:mod:`hosts.collectives.order`; the
Symphony paper's, §2.1, by default): a rank starts step s once step s-1 has fully arrived
and been applied, and never waits for its own sends.

Modules: :mod:`~hosts.collectives.schedule` (steps, chunks, the reference executor),
:mod:`~hosts.collectives.ring`, :mod:`~hosts.collectives.ring2d`,
:mod:`~hosts.collectives.halving_doubling`.
"""

from __future__ import annotations

from hosts.collectives.base import AllReduce, Collective, Piece
from hosts.collectives.halving_doubling import HalvingDoublingAllReduce
from hosts.collectives.ring import (RingAllGather, RingAllReduce, RingReduceScatter,
                                    ring_all_gather, ring_all_reduce, ring_reduce_scatter)
from hosts.collectives.ring2d import Ring2dAllReduce, grid_of, ring2d_all_reduce
from hosts.collectives.schedule import OPS, Schedule, Step, chunk_ranges, simulate

ALGORITHMS: dict[str, Collective] = {c.name: c for c in (
    RingAllReduce(), RingReduceScatter(), RingAllGather(), Ring2dAllReduce(),
    HalvingDoublingAllReduce())}


def collective(algorithm: str) -> Collective:
    """The registry entry of ``algorithm``; ValueError naming the allowed ones otherwise."""
    try:
        return ALGORITHMS[algorithm]
    except (KeyError, TypeError):
        raise ValueError(f"unknown algorithm {algorithm!r}; allowed: "
                         f"{', '.join(ALGORITHMS)}") from None


__all__ = ["ALGORITHMS", "OPS", "AllReduce", "Collective", "HalvingDoublingAllReduce",
           "Piece", "Ring2dAllReduce", "RingAllGather", "RingAllReduce", "RingReduceScatter",
           "Schedule", "Step", "chunk_ranges", "collective", "grid_of", "ring2d_all_reduce",
           "ring_all_gather", "ring_all_reduce", "ring_reduce_scatter", "simulate"]
