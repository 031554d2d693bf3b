"""Verification by checksums: every received chunk checked, in memory bounded by the run's
shape rather than its bytes (docs/architecture.md §4, "Verification at scale"; issue 44).

The real-buffer verification (:mod:`hosts.collectives.expected`) holds, per rank, its
input, the result it must end with, and every other member's input to compute that
result, each a whole buffer. Here the inputs have a structure that lets a rank keep four
numbers per segment of its buffer instead, while the bytes on the wire stay real
float32 values:

* Element e of every buffer has a *code*, a pseudo-random function of e alone
  (:func:`codes`), the same for every rank and pass: K = 3 digits d_1(e)..d_K(e) in 0..3.
* Rank r's input of pass p is  a(r) + p + sum_k c_k(r) d_k(e)  (:func:`rank_stats`:
  a(r) in 1..16 and c(r) in 0..3 each, not all 0, drawn from (seed, job, rank)).
* So a range holding the sum of the inputs of a set S of ranks holds, at element e,
  ``ROWS[code(e)] @ (A, C_1..C_K)`` with the *statistics* A = sum_S (a(r) + p) and
  C_k = sum_S c_k(r), and every sum stays a small integer, exact in float32 while
  N (43 + passes) < 2**24.

A rank cuts its buffer into *segments*, the finest partition by its schedule's send and
receive ranges and its result's pieces (:class:`Checksums`), and a pass
(:class:`ChecksumPass`) keeps each segment's statistics, not its bytes. A send generates
the bytes from them. A receive solves each segment's statistics from one element of each
code present and checks that every element is what they generate: a message that does
not fit is a wrong result. A reduce adds the statistics (and checks that float32 adds
the values exactly, as the real mode's sum must be); a copy takes them. At the end each
result piece's segments must hold the statistics of the piece's sources.

A segment of a few elements may not take codes whose rows [1, d_1..d_K] span: several
statistics then generate its bytes. It keeps the least-norm one, and is compared by the
values its codes take, which where they span is the comparison of the statistics.

Numpy; no sockets, no clocks. The codes are computed once per process and shared by every
rank in it (:func:`forget` frees them).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

K = 3                            # digits per code
CODES = 4 ** K                   # codes 0..63: digit k is bits 2k, 2k+1
ROWS = np.array([[1.0] + [float((c >> 2 * k) & 3) for k in range(K)] for c in range(CODES)])
A_MAX = 16                       # a(r) in 1..A_MAX
DTYPE = np.float32
ITEM = np.dtype(DTYPE).itemsize
BLOCK = 1 << 20                  # elements hashed at a time (bounds the temporaries)

_codes = np.zeros(0, np.uint8)   # codes of elements 0..len-1, grown on demand


def codes(count: int) -> np.ndarray:
    """The codes of elements 0..count-1 (uint8, read-only), computed once per process:
    a longer buffer extends them, a shorter one is a prefix."""
    global _codes
    if len(_codes) < count:
        grown = np.empty(count, np.uint8)
        grown[:len(_codes)] = _codes
        for lo in range(len(_codes), count, BLOCK):
            hi = min(count, lo + BLOCK)
            grown[lo:hi] = _mix(np.arange(lo + 1, hi + 1, dtype=np.uint64))
        grown.setflags(write=False)
        _codes = grown
    return _codes[:count]


def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: the top 2K bits of a well-mixed hash of each element."""
    z = z * np.uint64(0x9E3779B97F4A7C15)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(64 - 2 * K)).astype(np.uint8)


def forget() -> None:
    """Free the codes and what was derived from them (a run's end, ``emulator.sim.run``)."""
    global _codes
    _codes = np.zeros(0, np.uint8)
    segment.cache_clear()


@functools.lru_cache(maxsize=None)
def rank_stats(seed: int, job: int, rank: int) -> tuple:
    """(a, c_1..c_K) of a rank: a in 1..A_MAX, so that a rank counted once too often or
    too few always changes A; c a nonzero code, so that every range's values vary with
    the element (a misplaced packet shows)."""
    rng = np.random.default_rng([seed, job, rank])
    a = int(rng.integers(1, A_MAX + 1))
    c = int(rng.integers(1, CODES))
    return (a,) + tuple(int(x) for x in ROWS[c, 1:])


def pass_stats(stats, pass_index: int, ranks: int = 1) -> np.ndarray:
    """The statistics of ``ranks`` inputs of ``pass_index`` whose (a, c) sum to ``stats``."""
    out = np.array(stats, dtype=np.float64)
    out[0] += ranks * pass_index
    return out


def values(stats: np.ndarray) -> np.ndarray:
    """Each code's float32 value under ``stats`` (an integer's nearest float32)."""
    return np.rint(ROWS @ stats).astype(DTYPE)


def generate(stats: np.ndarray, lo: int, hi: int, out: np.ndarray | None = None) -> np.ndarray:
    """Elements lo..hi-1 of a range with these statistics, as float32 (into ``out``)."""
    return np.take(values(stats), codes(hi)[lo:hi], out=out)


@dataclass(frozen=True, eq=False)            # array fields: no elementwise ==
class Segment:
    """Elements lo..hi-1: the codes they take (``present``), where each first appears
    (``first``, from lo), and how statistics follow from one value per code (``solve``,
    the pseudo-inverse of their rows; ``spans``: those rows determine them)."""
    lo: int
    hi: int
    present: np.ndarray
    first: np.ndarray
    solve: np.ndarray
    spans: bool

    def fit(self, part: np.ndarray) -> tuple[np.ndarray, bool]:
        """The statistics ``part`` (the segment's float32 elements) was generated from,
        and whether every element is what they generate."""
        got = self.solve @ part[self.first].astype(np.float64)
        if self.spans:
            got = np.rint(got)
        return got, bool(np.array_equal(part, generate(got, self.lo, self.hi)))

    def same(self, have: np.ndarray, want: np.ndarray) -> bool:
        """Whether statistics ``have`` generate what ``want`` (integers) does here."""
        rows = ROWS[self.present]
        return bool(np.array_equal(np.rint(rows @ have), rows @ want))


@functools.lru_cache(maxsize=None)
def segment(lo: int, hi: int) -> Segment:
    """Elements lo..hi-1 as a :class:`Segment` (the same for every rank that has it)."""
    c = codes(hi)[lo:hi]
    present = np.flatnonzero(np.bincount(c, minlength=CODES))
    head = c[:4 * CODES]                       # where a code first appears: nearly always here
    found, at = np.unique(head, return_index=True)
    where = dict(zip(found.tolist(), at.tolist()))
    first = np.array([where[k] if k in where else int(np.argmax(c == k)) for k in present])
    rows = ROWS[present]
    return Segment(lo, hi, present, first, np.linalg.pinv(rows),
                   int(np.linalg.matrix_rank(rows)) == K + 1)


class Checksums:
    """What each pass of ``rank`` starts from and must produce, per segment of its buffer:
    from its collective, its schedule and each member's ``stats(r)``, (a, c_1..c_K)."""

    def __init__(self, collective, schedule, rank: int, group, nbytes: int, stats):
        pieces = collective.result(rank, group, nbytes, ITEM)
        ranges = {(p.offset, p.length) for p in pieces}
        ranges |= {r for st in schedule.steps for r in (st.send_range, st.recv_range)}
        for o, n in ranges:
            if o % ITEM or n % ITEM:
                raise ValueError(f"range ({o}, {n}) is not made of {ITEM}-byte items")
        cuts = sorted({0, nbytes // ITEM} | {x // ITEM for o, n in ranges for x in (o, o + n)})
        self.segments = tuple(segment(lo, hi) for lo, hi in zip(cuts, cuts[1:]))
        at = {x: i for i, x in enumerate(cuts)}
        # a byte range -> the segments it is made of, i..j-1
        self.spans = {(o, n): (at[o // ITEM], at[(o + n) // ITEM]) for o, n in ranges}
        self.own = stats(rank)
        self.pieces = tuple((self.spans[p.offset, p.length],
                             np.sum([stats(r) for r in p.sources], axis=0), len(p.sources))
                            for p in pieces)

    def start(self, pass_index: int) -> ChecksumPass:
        return ChecksumPass(self, pass_index)


class ChecksumPass:
    """One pass of one rank: its segments' statistics, from its own input's, changed by
    each message it applies. The same small interface as the real buffers'
    (:class:`hosts.collectives.expected.BufferPass`)."""

    def __init__(self, plan: Checksums, pass_index: int):
        self.plan, self.pass_index = plan, pass_index
        self.stats = np.tile(pass_stats(plan.own, pass_index), (len(plan.segments), 1))
        self.misfits: list[tuple] = []     # byte ranges whose message did not fit

    def send(self, rng: tuple) -> memoryview:
        """The bytes of byte range ``rng``, generated: what the real buffer would hold."""
        i, j = self.plan.spans[rng]
        out = np.empty(rng[1] // ITEM, DTYPE)
        o = rng[0] // ITEM
        for k in range(i, j):
            seg = self.plan.segments[k]
            generate(self.stats[k], seg.lo, seg.hi, out[seg.lo - o:seg.hi - o])
        return out.data.cast("B")

    def apply(self, step, message: bytes) -> None:
        """A received message for ``step`` (a ``hosts.collectives.schedule.Step``): each
        segment fitted, then reduced into its statistics or copied over them."""
        i, j = self.plan.spans[step.recv_range]
        m = np.frombuffer(message, DTYPE)
        o = step.recv_range[0] // ITEM
        for k in range(i, j):
            seg = self.plan.segments[k]
            got, fits = seg.fit(m[seg.lo - o:seg.hi - o])
            if step.op == "reduce":
                new = self.stats[k] + got
                # the real mode's float32 sum, code by code (every element has just
                # matched its code's value): exact, or that mode's result would be lost
                p = seg.present
                fits = fits and bool(np.array_equal(
                    values(self.stats[k])[p] + values(got)[p], np.rint(ROWS[p] @ new)))
                got = new
            if not fits:
                self.misfits.append((seg.lo * ITEM, (seg.hi - seg.lo) * ITEM))
            self.stats[k] = got

    def check(self) -> bool:
        """Every message fitted and every result piece holds its sources' statistics."""
        return not self.misfits and all(
            self.plan.segments[k].same(self.stats[k], pass_stats(base, self.pass_index, n))
            for (i, j), base, n in self.plan.pieces for k in range(i, j))
