"""What each pass of a collective must produce on one rank, for every algorithm of the
registry: the collective says which byte ranges hold the sum of which ranks' inputs
(:meth:`hosts.collectives.base.Collective.result`); this module turns that into numpy
arrays and checks buffers against them. A pass runs on a real buffer (:class:`BufferPass`):
the default, for runs whose buffers fit in memory; :mod:`hosts.collectives.checksums`
verifies the same collectives without holding them (docs/architecture.md §4).

Exact arithmetic: rank r's input of pass p is ``base(r) + p``, where ``base(r)`` holds small
integers (0..63) as float32. A range that sums k inputs (k = N for an all-reduce or a
reduce-scatter, 1 for a gathered chunk) must hold ``target + k p``. Every partial sum on
the way is an integer of at most k (63 + p), so while N (63 + passes) < 2**24 each is
exactly representable in float32, and the result is the same whichever order the
schedule adds the inputs in (along a ring, down a halving-doubling butterfly, or numpy's
order here): buffers are compared with ``==``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)          # an array field: no elementwise ==
class ExpectedResult:
    ranges: tuple          # ((offset, length), ...): the bytes of the buffer to check
    target: np.ndarray     # pass 0's values (zero outside ``ranges``, unchecked there)
    per_pass: tuple        # per range: how much its values grow per pass (its inputs)


def expected_result(collective, rank: int, group, nbytes: int, itemsize: int,
                    base, sum_of=None) -> ExpectedResult:
    """``base(r)``: rank r's input of pass 0, an array of ``nbytes // itemsize`` items;
    ``sum_of(ranks)``, if given: the sum of those ranks' (a sorted tuple), which a
    process with many ranks keeps once for all (each rank of an N-rank all-reduce needs
    the sum of all N: without it N ranks draw N inputs each)."""
    inputs: dict = {}

    def input_of(r: int) -> np.ndarray:
        if r not in inputs:
            inputs[r] = base(r)
        return inputs[r]

    target = np.zeros(nbytes // itemsize, input_of(rank).dtype)
    if target.dtype.itemsize != itemsize:
        raise ValueError(f"inputs have {target.dtype.itemsize}-byte items, not {itemsize}")
    ranges, per_pass = [], []
    for piece in collective.result(rank, group, nbytes, itemsize):
        if piece.offset % itemsize or piece.length % itemsize:
            raise ValueError(f"range ({piece.offset}, {piece.length}) is not made of "
                             f"{itemsize}-byte items")
        lo, hi = piece.offset // itemsize, (piece.offset + piece.length) // itemsize
        if sum_of is not None and len(piece.sources) > 1:
            target[lo:hi] += sum_of(tuple(sorted(piece.sources)))[lo:hi]
        else:
            for r in piece.sources:
                target[lo:hi] += input_of(r)[lo:hi]
        ranges.append((piece.offset, piece.length))
        per_pass.append(len(piece.sources))
    return ExpectedResult(tuple(ranges), target, tuple(per_pass))


class Expected:
    """What each pass must produce on ``rank``, computed once from every rank's seeded
    input ``base(r)`` (pass p's input is ``base(r) + p``)."""

    def __init__(self, collective, rank: int, group, nbytes: int, base, sum_of=None):
        self.base = base(rank)
        self.dtype = self.base.dtype.type
        self.item = self.base.dtype.itemsize
        res = expected_result(collective, rank, group, nbytes, self.item,
                              lambda r: self.base if r == rank else base(r), sum_of)
        self.ranges, self.target, self.per_pass = res.ranges, res.target, res.per_pass

    def input(self, pass_index: int) -> np.ndarray:
        return self.base + self.dtype(pass_index)

    def check(self, buf: np.ndarray, pass_index: int) -> bool:
        i = self.item
        return all(np.array_equal(buf[o // i:(o + n) // i],
                                  self.target[o // i:(o + n) // i] + self.dtype(k * pass_index))
                   for (o, n), k in zip(self.ranges, self.per_pass))

    def start(self, pass_index: int) -> BufferPass:
        return BufferPass(self, pass_index)


class BufferPass:
    """One pass of one rank on a real buffer: its input, each received message reduced
    into it or copied over it, checked at the end against :class:`Expected`. The same
    small interface as the checksums' (:class:`hosts.collectives.checksums.ChecksumPass`)."""

    def __init__(self, expected: Expected, pass_index: int):
        self.expected, self.pass_index = expected, pass_index
        self.buf = expected.input(pass_index)

    def send(self, rng: tuple) -> bytes:
        """The bytes of byte range ``rng``, copied (the buffer changes on)."""
        o, n = rng
        return self.buf.view(np.uint8)[o:o + n].tobytes()

    def apply(self, step, message: bytes) -> None:
        """A received message for ``step`` (a ``hosts.collectives.schedule.Step``)."""
        o, n = step.recv_range
        i = self.expected.item
        view = self.buf[o // i:(o + n) // i]
        incoming = np.frombuffer(message, view.dtype)
        if step.op == "reduce":
            view += incoming
        else:
            view[:] = incoming

    def check(self) -> bool:
        return self.expected.check(self.buf, self.pass_index)
