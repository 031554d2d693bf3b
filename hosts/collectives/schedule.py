"""What every collective is made of: per-rank steps over byte ranges, and a reference
executor.

A collective is, for each rank, a list of :class:`Step`: at step ``s`` the rank sends a
byte range of its buffer to one peer of one of its groups (a ring, or a halving-doubling
partner) and receives a byte range from one peer, then reduces it in (``op="reduce"``) or
copies it (``op="copy"``). The transport does not know which algorithm it carries.

Dependency rule (the Symphony paper's, §2.1): a rank starts step s as soon as it has fully
received, and applied, step s-1; it never waits for its own earlier sends. That is how
flows of different steps come to overlap on a link.

Pure: no sockets, no clocks, no numpy. Regions and chunks are byte ranges of the rank's
buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def simulate(schedules: dict[int, Schedule], inputs: dict[int, list]) -> dict[int, list]:
    """Execute schedules on Python lists of numbers (one element per byte-range unit) under
    the dependency rule, for tests: returns each rank's final buffer.

    A message is matched as ``hosts.rank`` matches a flow: by its sender, receiver, group
    index (the channel) and step. A rank posts step i's send (a snapshot of its buffer)
    when it starts step i and applies step i's receive only once it has applied step i-1,
    so the result does not depend on the order in which messages arrive; this
    deterministic order is one of them.
    Raises ``RuntimeError`` when ranks deadlock (a message sent to the wrong peer, group or
    step leaves a receive unmatched, so it shows as one) or when a message's size is not
    what its receiver expects.
    """
    bufs = {r: list(v) for r, v in inputs.items()}
    pos = {r: 0 for r in schedules}            # next step index per rank
    sent = {r: -1 for r in schedules}          # highest step index whose send is posted
    inflight = {}                              # (sender, receiver, ring, step) -> data
    progress = True
    while progress:
        progress = False
        for r, sch in schedules.items():
            i = pos[r]
            if i >= len(sch.steps):
                continue
            st = sch.steps[i]
            group = sch.rings[st.ring]
            if sent[r] < i:
                o, n = st.send_range
                inflight[(r, group[st.send_to], st.ring, st.step)] = bufs[r][o:o + n]
                sent[r] = i
                progress = True
            key_in = (group[st.recv_from], r, st.ring, st.step)
            if key_in in inflight:
                data = inflight.pop(key_in)
                o, n = st.recv_range
                if len(data) != n:
                    raise RuntimeError(f"rank {r} step {st.step}: got {len(data)} units "
                                       f"from rank {key_in[0]}, expected {n}")
                if st.op == "reduce":
                    bufs[r][o:o + n] = [a + b for a, b in zip(bufs[r][o:o + n], data)]
                else:
                    bufs[r][o:o + n] = data
                pos[r] += 1
                progress = True
    stuck = {r: pos[r] for r, s in schedules.items() if pos[r] < len(s.steps)}
    if stuck:
        raise RuntimeError(f"schedules deadlocked at steps {stuck}")
    return bufs
