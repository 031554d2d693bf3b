"""hosts/collectives/checksums.py: verification by the statistics of structured inputs.
Small cases checked by hand, every algorithm of the registry run over its ranks in
memory (each message delivered as the ranks' dependency rule says), and the errors a
transport or a schedule could make -- a corrupted element, a swapped chunk, a chunk
added twice, another pass's data, a sum float32 cannot hold -- each caught."""

import numpy as np
import pytest

from hosts.collectives import ALGORITHMS, grid_of
from hosts.collectives import checksums as cs
from hosts.collectives.checksums import Checksums, rank_stats
from hosts.collectives.expected import Expected
from hosts.collectives.order import StepOrder, dependencies

ITEM = 4
GROUPS = {"ring_allreduce": (0, 1, 2, 3), "ring_reducescatter": (0, 1, 2, 3),
          "ring_allgather": (0, 1, 2, 3), "halving_doubling_allreduce": tuple(range(8)),
          "ring2d_allreduce": grid_of(2, 4)}
# the codes of elements 0..7 and their digits (d_1, d_2, d_3): bits 0-1, 2-3, 4-5
CODES_0_7 = [56, 27, 1, 62, 6, 20, 11, 49]


def digits(code):
    return [(code >> 2 * k) & 3 for k in range(3)]


def seeded(r):
    return rank_stats(7, 1, r)


def run(algorithm, group, nbytes, pass_index=0, stats=seeded, tamper=None, mode="checksums"):
    """Every rank of ``group`` runs one pass; returns {rank: its pass} and every message
    sent, [(sender, step index, bytes)]. ``tamper(receiver, step index, message, passes)``
    returns the messages to apply in its place (default: the message)."""
    coll = ALGORITHMS[algorithm]
    members = coll.members(group)
    schedules = {r: coll.schedule(group, r, nbytes, ITEM) for r in members}
    if mode == "checksums":
        verifiers = {r: Checksums(coll, schedules[r], r, group, nbytes, stats)
                     for r in members}
    else:            # the real buffers, on the same structured inputs
        def base(r):
            return cs.generate(cs.pass_stats(stats(r), 0), 0, nbytes // ITEM)
        verifiers = {r: Expected(coll, r, group, nbytes, base) for r in members}
    passes = {r: v.start(pass_index) for r, v in verifiers.items()}
    orders = {r: StepOrder(dependencies(s)) for r, s in schedules.items()}
    waiting = {r: {} for r in members}
    sent, inflight = [], []

    def post(r, i):
        st = schedules[r].steps[i]
        data = bytes(passes[r].send(st.send_range))
        sent.append((r, i, data))
        inflight.append((schedules[r].rings[st.ring][st.send_to], i, data))

    for r in members:
        post(r, 0)
    while inflight:
        dst, i, data = inflight.pop(0)
        waiting[dst][i] = data
        apply, due = orders[dst].arrive(i)
        for j in apply:
            msg = waiting[dst].pop(j)
            for m in (tamper(dst, j, msg, passes) if tamper else [msg]):
                passes[dst].apply(schedules[dst].steps[j], m)
        for j in due:
            post(dst, j)
    assert all(o.done for o in orders.values())
    return passes, sorted(sent)


def verified(passes):
    return {r: p.check() for r, p in passes.items()}


# --- the structure, by hand ---------------------------------------------------------------

def test_an_elements_code_depends_on_the_element_alone_and_every_code_is_drawn():
    cs.forget()
    assert cs.codes(8).tolist() == CODES_0_7
    assert cs.codes(100_000)[:8].tolist() == CODES_0_7          # a prefix, however grown
    counts = np.bincount(cs.codes(1 << 16), minlength=64)
    assert len(counts) == 64 and counts.min() > 0.8 * 1024 and counts.max() < 1.2 * 1024
    assert not cs.codes(8).flags.writeable
    cs.forget()
    assert cs.codes(8).tolist() == CODES_0_7


def test_a_ranks_statistics_are_seeded_in_range_and_never_without_a_pattern():
    drawn = [rank_stats(1, 1, r) for r in range(5000)]
    assert all(1 <= s[0] <= 16 and all(0 <= c <= 3 for c in s[1:]) and any(s[1:])
               for s in drawn)
    assert len(set(drawn)) > 990                              # of the 16 x 63 = 1008
    assert rank_stats(1, 1, 5) == rank_stats(1, 1, 5) != rank_stats(2, 1, 5)


def test_a_range_holds_the_values_its_statistics_generate_by_hand():
    """Two ranks, (a, c) = (1, (1, 0, 0)) and (2, (0, 1, 0)), 8 elements: rank 0's input of
    pass 0 is 1 + d_1(e), rank 1's of pass 2 is 2 + 2 + d_2(e); after rank 0 reduces
    rank 1's chunk in, the chunk holds (1 + 2, 1, 1, 0): 3 + d_1(e) + d_2(e)."""
    stats = {0: (1, 1, 0, 0), 1: (2, 0, 1, 0)}.get
    d = np.array([digits(c) for c in CODES_0_7])
    coll = ALGORITHMS["ring_allreduce"]
    plans = {r: Checksums(coll, coll.schedule((0, 1), r, 32, ITEM), r, (0, 1), 32, stats)
             for r in (0, 1)}
    p0, p1 = plans[0].start(0), plans[1].start(2)
    assert np.frombuffer(bytes(p0.send((0, 32))), np.float32).tolist() == (1 + d[:, 0]).tolist()
    assert np.frombuffer(bytes(p1.send((0, 32))), np.float32).tolist() == (4 + d[:, 1]).tolist()
    step0 = coll.schedule((0, 1), 0, 32, ITEM).steps[0]     # rank 0 reduces chunk 1 in
    assert step0.recv_range == (16, 16) and step0.op == "reduce"
    p1 = plans[1].start(0)
    p0.apply(step0, bytes(p1.send(step0.recv_range)))
    assert p0.stats[1].tolist() == [3, 1, 1, 0]
    assert np.frombuffer(bytes(p0.send((16, 16))), np.float32).tolist() == \
        (3 + d[4:, 0] + d[4:, 1]).tolist()
    assert not p0.misfits and not p0.check()                  # chunk 0 not yet summed


# --- every algorithm, verified; and the same bytes as real buffers -----------------------

CASES = [(a, g, n) for a, g in GROUPS.items() for n in (4 * 1000 + 8, 96)]


@pytest.mark.parametrize("algorithm,group,nbytes", CASES)
def test_every_algorithm_is_verified_and_sends_what_real_buffers_would(algorithm, group,
                                                                     nbytes):
    """Each pass verified on every rank; and every message byte for byte what the real
    buffers send on the same inputs (the real mode reducing and copying them itself)."""
    for p in (0, 3):
        passes, sent = run(algorithm, group, nbytes, p)
        assert all(verified(passes).values()), (algorithm, p)
        _, real = run(algorithm, group, nbytes, p, mode="buffers")
        assert sent == real


@pytest.mark.parametrize("algorithm", ["ring_allreduce", "halving_doubling_allreduce"])
def test_segments_of_a_few_elements_are_verified_and_checked_too(algorithm):
    """8 bytes over 4 ranks: chunks of 0, 0, 0 and 2 elements, whose codes cannot span
    the statistics; what they generate is still checked exactly."""
    group = GROUPS[algorithm][:4]
    passes, _ = run(algorithm, group, 8, 1)
    assert all(verified(passes).values())

    def off_by_one(dst, j, msg, passes):
        m = np.frombuffer(msg, np.float32).copy()
        if dst == group[1] and len(m):
            m[-1] += 1
        return [m.tobytes()]
    assert not all(verified(run(algorithm, group, 8, 1, tamper=off_by_one)[0]).values())


def test_a_pass_checks_its_pieces_not_the_rest_of_its_buffer():
    """A reduce-scatter's rank 2 owns chunk 3 only: its check ignores its other chunks."""
    passes, _ = run("ring_reducescatter", (0, 1, 2, 3), 64)
    p = passes[2]
    assert p.plan.pieces[0][0] == (3, 4) and p.check()         # chunk (2 + 1) mod 4
    p.stats[0] += 1
    assert p.check()
    p.stats[3, 0] += 1
    assert not p.check()


# --- what it catches ----------------------------------------------------------------------

def _at(rank, step):
    """A tamper that changes the message of ``step`` to ``rank`` by ``change``."""
    def wrap(change):
        def tamper(dst, j, msg, passes):
            return change(msg, passes) if (dst, j) == (rank, step) else [msg]
        return tamper
    return wrap


def test_one_corrupted_element_is_a_wrong_result_of_its_receiver():
    def corrupt(msg, passes):
        m = np.frombuffer(msg, np.float32).copy()
        m[123] += 1
        return [m.tobytes()]
    passes, _ = run("ring_allreduce", (0, 1, 2, 3), 4000, tamper=_at(1, 2)(corrupt))
    ok = verified(passes)
    assert not ok[1] and passes[1].misfits == [(2000, 1000)]     # chunk 2, reduced in
    assert all(ok[r] for r in (0, 2, 3))       # what it sent on, its statistics made


@pytest.mark.parametrize("value", [np.nan, np.inf, 0.5])
def test_an_element_that_is_no_integer_is_caught(value):
    def corrupt(msg, passes):
        m = np.frombuffer(msg, np.float32).copy()
        m[7] = value
        return [m.tobytes()]
    with np.errstate(invalid="ignore"):
        passes, _ = run("ring_allgather", (0, 1, 2, 3), 4000, tamper=_at(2, 0)(corrupt))
        assert not verified(passes)[2]


def test_a_swapped_chunk_does_not_fit_its_elements():
    """Rank 1 is sent chunk 2 where chunk 3 is due, same size: its elements' codes are
    other elements', so the values do not fit."""
    def swap(msg, passes):
        return [bytes(passes[0].send((2000, 1000)))]
    passes, _ = run("ring_allgather", (0, 1, 2, 3), 4000, tamper=_at(1, 0)(swap))
    assert passes[1].misfits and not verified(passes)[1]


def test_a_chunk_added_twice_leaves_its_owner_with_a_wrong_sum():
    """Rank 1 reduces step 0's chunk (chunk 0) twice: each time the message fits, but the
    sum it passes on counts rank 0 twice, which the chunk's owner (rank 3) finds."""
    def twice(msg, passes):
        return [msg, msg]
    passes, _ = run("ring_reducescatter", (0, 1, 2, 3), 4000, tamper=_at(1, 0)(twice))
    ok = verified(passes)
    assert not passes[1].misfits and not ok[3] and ok[0] and ok[1] and ok[2]


def test_another_passes_data_is_a_wrong_result():
    def next_pass(msg, passes):
        return [bytes(passes[0].plan.start(passes[0].pass_index + 1).send((3000, 1000)))]
    passes, _ = run("ring_reducescatter", (0, 1, 2, 3), 4000, tamper=_at(1, 0)(next_pass))
    assert not all(verified(passes).values())


def test_a_sum_float32_cannot_hold_exactly_is_a_wrong_result():
    """Inputs near 2**23: two of them sum to odd integers past 2**24, where float32 holds
    even ones only; the real mode's sum would be rounded, so the reduce does not fit."""
    def big(r):
        return (2**23 + 1 + r, 1, 0, 0)
    passes, _ = run("ring_allreduce", (0, 1), 64, stats=big)
    assert passes[0].misfits and passes[1].misfits
    assert not any(verified(passes).values())


# --- a message fitted as it arrives, bytes generated as they are read --------------------

def _plan(nbytes=4 * 3000):
    coll = ALGORITHMS["ring_allreduce"]
    group = (0, 1, 2, 3)
    return Checksums(coll, coll.schedule(group, 0, nbytes, ITEM), 0, group, nbytes, seeded)


@pytest.mark.parametrize("block", [8, 64, 1000, 1 << 18])
def test_a_message_fitted_as_it_arrives_is_the_whole_message_fitted(monkeypatch, block):
    """Fed in ragged chunks (not whole items) and fitted STREAM_BYTES at a time, every
    segment's statistics and verdict are Segment.fit's on the whole message, a corrupted
    element caught in the segment that holds it, wherever it is."""
    monkeypatch.setattr(cs, "STREAM_BYTES", block)
    plan = _plan()
    rng = np.random.default_rng(3)
    for o, n in sorted(plan.spans):
        i, j = plan.spans[o, n]
        stats = rng.integers(0, 9, (j - i, 4)).astype(float) + [1, 0, 0, 0]
        message = np.frombuffer(bytes(cs.Generated(plan.segments[i:j], stats, (o, n))),
                                np.float32).copy()
        for bad in (None, 0, n // ITEM // 2, n // ITEM - 1):
            m = message.copy()
            if bad is not None:
                m[bad] += 1
            data = m.tobytes()
            fitting = plan.stream((o, n))
            at = 0
            while at < len(data):
                step = int(rng.integers(1, 700))
                fitting.feed(memoryview(data)[at:at + step])
                at += step
            got = fitting.result()
            assert got.rng == (o, n) and len(got) == n and len(got.got) == j - i
            for k in range(i, j):
                seg = plan.segments[k]
                want, fits = seg.fit(m[seg.lo - o // ITEM:seg.hi - o // ITEM])
                assert np.array_equal(got.got[k - i], want) and got.fits[k - i] == fits
            assert all(got.fits) == (bad is None)


def test_a_short_message_fits_nothing(monkeypatch):
    plan = _plan()
    (o, n) = max(plan.spans, key=lambda r: r[1])
    fitting = plan.stream((o, n))
    fitting.feed(bytes(cs.Generated(plan.segments, np.ones((len(plan.segments), 4)),
                                    (0, plan.segments[-1].hi * ITEM)))[:n - 8])
    assert fitting.result().got == ()


@pytest.mark.parametrize("block", [12, 4096, 1 << 18])
def test_generated_bytes_read_in_any_order_are_the_buffers(monkeypatch, block):
    """A NIC reads a message packet by packet and goes back (go-back-N): every slice is
    the bytes the whole range generated at once holds, and the block held is bounded."""
    monkeypatch.setattr(cs, "STREAM_BYTES", block)
    plan = _plan()
    p = plan.start(2)
    (o, n) = max(plan.spans, key=lambda r: r[1])
    i, j = plan.spans[o, n]
    whole = np.concatenate([cs.generate(p.stats[k], plan.segments[k].lo, plan.segments[k].hi)
                            for k in range(i, j)]).tobytes()
    g = p.send((o, n))
    assert len(g) == n and bytes(g) == whole
    mtu = 1000
    for psn in [0, 1, 2, 1, 2, 3, 4, 3, 5, 6, 7, 8, 9, 10, 11, 0, 11]:
        assert bytes(g[psn * mtu:(psn + 1) * mtu]) == whole[psn * mtu:(psn + 1) * mtu]
        assert len(g.block) <= max(block, mtu + ITEM) + ITEM


def test_a_send_is_what_the_buffer_held_when_it_was_posted():
    plan = _plan()
    p = plan.start(0)
    (o, n) = max(plan.spans, key=lambda r: r[1])
    before = bytes(p.send((o, n)))
    g = p.send((o, n))
    p.stats += 1                      # a later step changes the buffer
    assert bytes(g) == before and bytes(p.send((o, n))) != before
