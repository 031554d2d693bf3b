"""Ring collectives over one ring of N ranks (the Symphony paper's §2.1): the buffer is cut
into N chunks and each step moves one chunk to the ring successor.

* :func:`ring_reduce_scatter` — N-1 steps; afterwards rank p owns chunk (p+1) mod N,
  reduced over the ring.
* :func:`ring_all_gather` — N-1 steps from rank p owning chunk p.
* :func:`ring_all_reduce` — reduce-scatter then all-gather, 2(N-1) steps.
"""

from __future__ import annotations

from hosts.collectives.base import AllReduce, Collective, Piece
from hosts.collectives.schedule import Schedule, chunk_ranges, ring_phase


def _ring(ring, rank: int, nbytes: int, align: int):
    ring = tuple(ring)
    return ring, ring.index(rank), len(ring), chunk_ranges(0, nbytes, len(ring), align)


def ring_reduce_scatter(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    ring, pos, n, chunks = _ring(ring, rank, nbytes, align)
    return Schedule(rank, (ring,), tuple(ring_phase(pos, n, chunks, 0, 0, "rs")))


def ring_all_gather(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    """Standalone all-gather: rank at position p contributes chunk p."""
    ring, pos, n, chunks = _ring(ring, rank, nbytes, align)
    return Schedule(rank, (ring,), tuple(ring_phase(pos, n, chunks, 0, 0, "ag", own=0)))


def ring_all_reduce(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    ring, pos, n, chunks = _ring(ring, rank, nbytes, align)
    steps = (ring_phase(pos, n, chunks, 0, 0, "rs")
             + ring_phase(pos, n, chunks, n - 1, 0, "ag", own=1))
    return Schedule(rank, (ring,), tuple(steps))


class RingAllReduce(AllReduce):
    name = "ring_allreduce"
    schedule = staticmethod(ring_all_reduce)

    def n_steps(self, group):
        return 2 * (len(group) - 1)


class _RingPhase(Collective):
    """A reduce-scatter or an all-gather alone: one ring phase of N-1 steps."""

    def n_steps(self, group):
        return len(group) - 1


class RingReduceScatter(_RingPhase):
    name = "ring_reducescatter"
    schedule = staticmethod(ring_reduce_scatter)

    def result(self, rank, group, nbytes, align=4):
        """Only the owned chunk, (p+1) mod N, is defined: the sum over the ring."""
        ring, pos, n, chunks = _ring(group, rank, nbytes, align)
        offset, length = chunks[(pos + 1) % n]
        return (Piece(offset, length, self.members(ring)),)


class RingAllGather(_RingPhase):
    name = "ring_allgather"
    schedule = staticmethod(ring_all_gather)

    def result(self, rank, group, nbytes, align=4):
        """Chunk q of every rank's buffer is the input of the rank at position q."""
        ring, _, _, chunks = _ring(group, rank, nbytes, align)
        return tuple(Piece(o, ln, (owner,)) for owner, (o, ln) in zip(ring, chunks))
