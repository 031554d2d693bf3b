"""What every collective is made of: per-rank steps over byte ranges, and a reference
executor.

A collective is, for each rank, a list of :class:`Step`: at step ``s`` the rank sends a
byte range of its buffer to one peer of one of its groups (a ring, or a halving-doubling
partner) and receives a byte range from one peer, then reduces it in (``op="reduce"``) or
copies it (``op="copy"``). The transport does not know which algorithm it carries.

Dependency rule (the Symphony paper's, §2.1): a rank starts step s as soon as it has fully
received, and applied, step s-1; it never waits for its own earlier sends. That is how
flows of different steps come to overlap on a link. :mod:`hosts.collectives.order` owns
the rule (and the ``in_order`` alternative).

Pure: no sockets, no clocks, no numpy. Regions and chunks are byte ranges of the rank's
buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.collectives.order import DEFAULT_ORDER, StepOrder, dependencies

OPS = ("reduce", "copy")


@dataclass(frozen=True)
class Step:
    step: int            # index within the collective (0-based, across phases)
    ring: int            # which group of the rank this step uses (index into Schedule.rings)
    send_to: int         # position in that group of the peer it sends to
    recv_from: int       # position of the peer it receives from
    send_range: tuple    # (offset, length) in bytes of the rank's buffer
    recv_range: tuple
    op: str              # what to do with the received chunk


@dataclass(frozen=True)
class Schedule:
    """One rank's schedule: its groups (member rank ids, in order) and its steps."""
    rank: int
    rings: tuple         # tuple of tuples of global rank ids
    steps: tuple         # tuple of Step


def chunk_ranges(offset: int, length: int, n: int, align: int = 1) -> list[tuple[int, int]]:
    """Split [offset, offset+length) into n contiguous chunks, sizes multiple of ``align``
    (the last chunk takes the remainder)."""
    if n < 1:
        raise ValueError(f"cannot split into {n} chunks")
    base = (length // n) // align * align
    out = []
    for i in range(n):
        size = base if i < n - 1 else length - base * (n - 1)
        out.append((offset + i * base, size))
    return out


def span(chunks: list[tuple[int, int]], lo: int, hi: int) -> tuple[int, int]:
    """The byte range of the contiguous chunks ``chunks[lo:hi]``."""
    start = chunks[lo][0]
    last_offset, last_size = chunks[hi - 1]
    return (start, last_offset + last_size - start)


def ring_phase(pos: int, n: int, chunks: list, first_step: int, ring_index: int,
               kind: str, own: int = 0) -> list[Step]:
    """The N-1 steps of one ring phase for the rank at position ``pos`` of an ``n``-rank
    ring: a reduce-scatter (``kind="rs"``: send chunk pos-s, reduce chunk pos-s-1) or an
    all-gather (``"ag"``: from owning chunk pos+own, copy chunk pos+own-s-1). Steps are
    numbered from ``first_step`` and use the rank's group ``ring_index``."""
    succ, pred = (pos + 1) % n, (pos - 1) % n
    steps = []
    for s in range(n - 1):
        if kind == "rs":
            send_c, recv_c, op = (pos - s) % n, (pos - s - 1) % n, "reduce"
        else:
            send_c, recv_c, op = (pos + own - s) % n, (pos + own - s - 1) % n, "copy"
        steps.append(Step(first_step + s, ring_index, succ, pred, chunks[send_c], chunks[recv_c], op))
    return steps


def simulate(schedules: dict[int, Schedule], inputs: dict[int, list],
             order: str = DEFAULT_ORDER, rng=None) -> dict[int, list]:
    """Execute schedules on Python lists of numbers (one element per byte-range unit) under
    the dependency rule ``order`` (:mod:`hosts.collectives.order`), for tests: returns
    each rank's final buffer.

    A message is matched as ``hosts.rank`` matches a flow: by its sender, receiver, group
    index (the channel) and step. A rank posts a step's send (a snapshot of its buffer)
    when the rule says it is due, and applies a receive when the rule lets it. Messages
    in flight are delivered oldest first, or in an order drawn from ``rng`` (a
    ``random.Random``): under either rule the result must not depend on it.
    Raises ``RuntimeError`` when ranks deadlock (a message sent to the wrong peer, group or
    step leaves a receive unmatched, so it shows as one) or when a message's size is not
    what its receiver expects.
    """
    bufs = {r: list(v) for r, v in inputs.items()}
    tracks = {r: StepOrder(dependencies(sch, order)) for r, sch in schedules.items()}
    expect = {r: {(sch.rings[st.ring][st.recv_from], st.ring, st.step): i
                  for i, st in enumerate(sch.steps)} for r, sch in schedules.items()}
    got: dict[int, dict[int, list]] = {r: {} for r in schedules}
    inflight: list[tuple] = []                 # (receiver, (sender, ring, step), data)

    def post(r: int, i: int) -> None:
        st = schedules[r].steps[i]
        o, n = st.send_range
        inflight.append((schedules[r].rings[st.ring][st.send_to], (r, st.ring, st.step),
                         bufs[r][o:o + n]))

    for r, sch in schedules.items():
        if sch.steps:
            post(r, 0)
    while True:
        deliverable = [m for m in inflight if m[1] in expect.get(m[0], {})]
        if not deliverable:
            break
        msg = deliverable[rng.randrange(len(deliverable))] if rng is not None else deliverable[0]
        inflight.remove(msg)
        r, key, data = msg
        i = expect[r].pop(key)
        st = schedules[r].steps[i]
        if len(data) != st.recv_range[1]:
            raise RuntimeError(f"rank {r} step {st.step}: got {len(data)} units "
                               f"from rank {key[0]}, expected {st.recv_range[1]}")
        got[r][i] = data
        apply, due = tracks[r].arrive(i)
        for j in apply:
            st = schedules[r].steps[j]
            o, n = st.recv_range
            data = got[r].pop(j)
            if st.op == "reduce":
                bufs[r][o:o + n] = [a + b for a, b in zip(bufs[r][o:o + n], data)]
            else:
                bufs[r][o:o + n] = data
        for j in due:
            post(r, j)
    stuck = {r: sum(t.applied) for r, t in tracks.items() if not t.done}
    if stuck:
        raise RuntimeError(f"schedules deadlocked at steps {stuck}")
    return bufs
