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

from hosts.config import STREAM_BYTES

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

    def stream(self, rng: tuple) -> Fitting:
        """A receive of byte range ``rng``, fitted as its bytes arrive."""
        i, j = self.spans[rng]
        return Fitting(self.segments[i:j], rng)


class Generated:
    """The bytes of a range that holds ``stats`` (one row per segment of ``segments``),
    made on demand: a slice of it is generated from the statistics, a block of
    STREAM_BYTES at a time, so a message in flight holds a block, not its bytes (the
    statistics are a copy: what the buffer held when the send was posted)."""

    def __init__(self, segments, stats: np.ndarray, rng: tuple):
        self.segments, self.stats, self.rng = segments, stats, rng
        self.lo = rng[0] // ITEM
        self.block = np.zeros(0, DTYPE).data.cast("B")
        self.at = 0                              # the block's first byte in the message

    def __len__(self) -> int:
        return self.rng[1]

    def __bytes__(self) -> bytes:
        """The whole range, made a block at a time (the block held stays one)."""
        return b"".join(bytes(self[a:a + STREAM_BYTES])
                        for a in range(0, self.rng[1], STREAM_BYTES)) if self.rng[1] else b""

    def __getitem__(self, part: slice) -> memoryview:
        a, b, _ = part.indices(self.rng[1])
        if not (self.at <= a and b <= self.at + len(self.block)):
            self._make(a - a % ITEM, max(b - a + ITEM, STREAM_BYTES))
        return self.block[a - self.at:b - self.at]

    def _make(self, at: int, nbytes: int) -> None:
        """Generate the block of bytes at..at + nbytes (item-aligned, within the range)."""
        e0 = self.lo + at // ITEM
        e1 = min(self.lo + self.rng[1] // ITEM, e0 + -(-nbytes // ITEM))
        out = np.empty(e1 - e0, DTYPE)
        for seg, stats in zip(self.segments, self.stats):
            lo, hi = max(seg.lo, e0), min(seg.hi, e1)
            if lo < hi:
                generate(stats, lo, hi, out[lo - e0:hi - e0])
        self.block, self.at = out.data.cast("B"), at


@dataclass(frozen=True, eq=False)
class Fitted:
    """A received range, fitted: per segment the statistics its bytes were generated
    from and whether every element is what they generate (:meth:`Segment.fit`)."""
    rng: tuple
    nbytes: int
    got: tuple
    fits: tuple

    def __len__(self) -> int:
        return self.nbytes


class Fitting:
    """A receive of one range, fitted as its bytes arrive (``feed``, in order), with the
    same result as :meth:`Segment.fit` on the whole message: each segment's statistics
    solved from the first element of each code (kept until the last of them has come),
    then every element compared with what they generate, STREAM_BYTES at a time. So a
    message being received holds at most a block and a segment's head, not its bytes."""

    def __init__(self, segments, rng: tuple):
        self.segments, self.rng = segments, rng
        self.pending = bytearray()               # bytes not yet fitted
        self.nbytes = 0
        self.k = 0                               # the segment being received
        self.head: list[np.ndarray] = []         # its elements while its statistics are unknown
        self.head_n = 0
        self.got: list = []
        self.fits: list = []
        self.cur: np.ndarray | None = None       # its statistics, once solved
        self._at = 0                             # the next element, once they are
        self.ok = True

    def feed(self, chunk) -> None:
        self.pending += chunk
        self.nbytes += len(chunk)
        if len(self.pending) >= STREAM_BYTES:
            self._fit()

    def result(self) -> Fitted:
        self._fit()
        if self.pending or self.k < len(self.segments):   # a short (or ragged) message
            return Fitted(self.rng, self.nbytes, (), ())
        return Fitted(self.rng, self.nbytes, tuple(self.got), tuple(self.fits))

    def _fit(self) -> None:
        whole = len(self.pending) - len(self.pending) % ITEM
        part = np.frombuffer(bytes(self.pending[:whole]), DTYPE)
        del self.pending[:whole]
        while len(part) and self.k < len(self.segments):
            seg = self.segments[self.k]
            at = seg.lo + self.head_n if self.cur is None else self._at
            take = part[:seg.hi - at]
            part = part[len(take):]
            if self.cur is None:
                self.head.append(take)
                self.head_n += len(take)
                if self.head_n > int(seg.first.max()):
                    head = np.concatenate(self.head)
                    got = seg.solve @ head[seg.first].astype(np.float64)
                    self.cur = np.rint(got) if seg.spans else got
                    self.ok = bool(np.array_equal(head, generate(self.cur, seg.lo,
                                                                 seg.lo + len(head))))
                    self.head, self._at = [], seg.lo + len(head)
            else:
                self.ok = self.ok and bool(np.array_equal(
                    take, generate(self.cur, at, at + len(take))))
                self._at = at + len(take)
            if self.cur is not None and self._at == seg.hi:
                self.got.append(self.cur)
                self.fits.append(self.ok)
                self.k, self.cur, self.head_n, self.ok = self.k + 1, None, 0, True
        if len(part):                            # more bytes than the range holds
            self.pending[:0] = part.tobytes()


class ChecksumPass:
    """One pass of one rank: its segments' statistics, from its own input's, changed by
    each message it applies. The same small interface as the real buffers'
    (:class:`hosts.collectives.expected.BufferPass`)."""

    def __init__(self, plan: Checksums, pass_index: int):
        self.plan, self.pass_index = plan, pass_index
        self.stats = np.tile(pass_stats(plan.own, pass_index), (len(plan.segments), 1))
        self.misfits: list[tuple] = []     # byte ranges whose message did not fit

    def send(self, rng: tuple) -> Generated:
        """The bytes of byte range ``rng`` as the real buffer would hold them now,
        generated a block at a time as the NIC reads them (:class:`Generated`)."""
        i, j = self.plan.spans[rng]
        return Generated(self.plan.segments[i:j], self.stats[i:j].copy(), rng)

    def apply(self, step, message) -> None:
        """A received message for ``step`` (a ``hosts.collectives.schedule.Step``): its
        bytes, or what a :class:`Fitting` made of them as they arrived; each segment
        fitted, then reduced into its statistics or copied over them."""
        i, j = self.plan.spans[step.recv_range]
        if not isinstance(message, Fitted):
            fitting = self.plan.stream(step.recv_range)
            fitting.feed(message)
            message = fitting.result()
        if message.rng != step.recv_range or len(message.got) != j - i:
            self.misfits.append(step.recv_range)  # another step's range, or a short message
            return
        for k in range(i, j):
            seg = self.plan.segments[k]
            got, fits = message.got[k - i], message.fits[k - i]
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
