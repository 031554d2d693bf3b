"""The interface every collective implements, one class per collective (ASTRA-sim style),
and the description of a rank's result that lets one generic check serve them all.

A collective's *group* is what its schedule is built over: for a 1D algorithm the rank's
ring (a tuple of global rank ids, in order); for a grid algorithm (``needs_grid``) the
grid, a tuple of rows of rank ids. Its *shape*, what :meth:`Collective.check` validates
before any group exists, is the group's size (an int) or, for a grid, ``(rows, columns)``.

Pure: no sockets, no clocks, no numpy.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from hosts.collectives.schedule import Schedule


@dataclass(frozen=True)
class Piece:
    """A byte range of a rank's final buffer and the ranks whose inputs it holds the sum
    of: every member for a reduced range, the owner alone for a gathered chunk."""
    offset: int
    length: int
    sources: tuple


class Collective(ABC):
    """One collective algorithm. Instances are stateless; :data:`hosts.collectives.ALGORITHMS`
    maps each ``name`` to one."""

    name: str = ""
    needs_grid: bool = False
    # nccl-tests' busbw = algbw x bus_passes (N-1)/N: 2 for an all-reduce (a reduce-scatter
    # and an all-gather's worth of data), 1 for a reduce-scatter or an all-gather.
    bus_passes: int = 1

    @abstractmethod
    def schedule(self, group, rank: int, nbytes: int, align: int = 4) -> Schedule:
        """The steps of ``rank`` (a member of ``group``) on an ``nbytes`` buffer, chunk sizes
        multiples of ``align`` bytes."""

    @abstractmethod
    def n_steps(self, group) -> int:
        """Steps of one collective over ``group`` (every rank has the same number)."""

    @abstractmethod
    def result(self, rank: int, group, nbytes: int, align: int = 4) -> tuple[Piece, ...]:
        """What ``rank``'s buffer holds once its schedule has run: the byte ranges a check
        must look at, each with the ranks whose inputs it sums (the rest is unspecified)."""

    def check(self, shape) -> str | None:
        """Why a group of this shape cannot run the collective, or None if it can."""
        if isinstance(shape, bool) or not isinstance(shape, int) or shape < 2:
            return f"{self.name} needs at least 2 ranks, got {shape!r}"
        return None

    def bus_factor(self, n: int) -> float:
        """nccl-tests' busbw / algbw for ``n`` ranks: 2(N-1)/N for an all-reduce, (N-1)/N
        for a reduce-scatter or an all-gather."""
        return self.bus_passes * (n - 1) / n

    def members(self, group) -> tuple:
        """Every rank of the group, sorted: whose inputs a reduction sums."""
        return tuple(sorted(group))

    def n_chunks(self, group) -> int:
        """How many chunks the schedule first cuts the buffer into: a job's ``chunk_bytes``
        times this is its buffer size."""
        return len(group)

    def group_of(self, rings, grid, rank: int) -> tuple:
        """The group ``rank`` takes part in, from a job's rings (tuples of ranks) and grid
        (rows of ranks, or None): here the ring that holds it."""
        for ring in rings:
            if rank in ring:
                return tuple(ring)
        raise ValueError(f"rank {rank} is in none of the rings {rings}")

    def expected(self, rank: int, group, nbytes: int, itemsize: int, base):
        """The arrays a pass must produce (see :mod:`hosts.collectives.expected`, which
        imports numpy: imported here so the schedules need no numpy)."""
        from hosts.collectives.expected import expected_result
        return expected_result(self, rank, group, nbytes, itemsize, base)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AllReduce(Collective):
    """An all-reduce: every rank ends with the sum of every member's whole buffer."""

    bus_passes = 2

    def result(self, rank: int, group, nbytes: int, align: int = 4) -> tuple[Piece, ...]:
        return (Piece(0, nbytes, self.members(group)),)
