"""Halving-doubling all-reduce (Rabenseifner's algorithm, as in Thakur, Rabenseifner and
Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 2005): a
reduce-scatter by recursive halving, then an all-gather by recursive doubling, for a
power-of-two number of ranks N: log2 N steps each, 2 log2 N in all.

The buffer is cut into N chunks (as a ring cuts it, so ``chunk_bytes`` means the same);
a *block* of size d is d consecutive chunks starting at a multiple of d. With p the
rank's position in the group:

* reduce-scatter step k = 0..log2 N - 1: the partner is at distance d = N / 2^(k+1),
  position p XOR d (the paper's recursive halving: the first exchange is with the rank
  N/2 away, each later one at half the distance). Before the step the rank's region is
  the block of size 2d that holds p; it sends the half the partner keeps (the block of
  size d holding the partner) and reduces into the half it keeps (the block holding p).
  Afterwards rank p owns chunk p, summed over all N ranks.
* all-gather step k: the mirror, distance d = 2^k (the paper's recursive doubling): the
  rank sends the block of size d it holds complete and copies in the partner's, so its
  complete region doubles.

MPICH's code also runs the reduce-scatter the other way round (distance doubling, vector
halving); any order of the log2 N bits is a valid butterfly, this one is the paper's.

Each step is one message to one peer (``send_to == recv_from``, the partner's position;
group 0), under the run's dependency rule (:mod:`hosts.collectives.order`): a rank
starts step s once step s-1 has fully arrived and been applied, and -- since step s
sends what steps 0..s-1 reduced -- once every earlier receive that wrote into its range
has been; it never waits for its own sends. No deadlock: every step pairs the ranks up,
so once every rank has applied step s-1 every rank has sent, and will receive, step s.
No mixed data: a message is matched by its sender and step, and what it carries was read
after everything it sums had been applied (:func:`hosts.collectives.schedule.simulate`
checks both, in any delivery order).
"""

from __future__ import annotations

from hosts.collectives.base import AllReduce
from hosts.collectives.schedule import Schedule, Step, chunk_ranges, span


class HalvingDoublingAllReduce(AllReduce):
    name = "halving_doubling_allreduce"

    def check(self, shape):
        err = super().check(shape)
        if err is None and shape & (shape - 1):
            return f"halving-doubling needs a power-of-two number of ranks, got {shape}"
        return err

    def n_steps(self, group):
        return 2 * (len(group).bit_length() - 1)

    def schedule(self, group, rank, nbytes, align=4):
        group = tuple(group)
        n = len(group)
        err = self.check(n)
        if err:
            raise ValueError(err)
        p = group.index(rank)
        chunks = chunk_ranges(0, nbytes, n, align)

        def block(q: int, d: int) -> tuple[int, int]:
            lo = q // d * d
            return span(chunks, lo, lo + d)

        levels = n.bit_length() - 1
        steps = []
        for k in range(levels):                   # reduce-scatter, recursive halving
            d = n >> (k + 1)
            steps.append(Step(k, 0, p ^ d, p ^ d, block(p ^ d, d), block(p, d), "reduce"))
        for k in range(levels):                   # all-gather, recursive doubling
            d = 1 << k
            steps.append(Step(levels + k, 0, p ^ d, p ^ d, block(p, d), block(p ^ d, d), "copy"))
        return Schedule(rank, (group,), tuple(steps))
