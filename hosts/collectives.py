"""Ring-based collective algorithms as schedules (DESIGN.md §4.3), Astra-Sim style.

A collective is, for each rank, a list of :class:`Step`: at step ``s`` the rank sends
chunk ``send_chunk`` of a buffer region to its ring successor and receives chunk
``recv_chunk`` from its predecessor, then reduces it in (``op="reduce"``) or copies it
(``op="copy"``). The transport does not know which algorithm it carries.

Dependency rule (the paper's, §2.1): a rank starts step s as soon as it has fully
received, and applied, step s-1 from its predecessor; it never waits for its own earlier
sends. That is how flows of different steps come to overlap on a link.

Algorithms:

* :func:`ring_reduce_scatter` — N-1 steps; afterwards rank p owns chunk (p+1) mod N,
  reduced over the ring.
* :func:`ring_all_gather` — N-1 steps from rank p owning chunk (p+own) mod N.
* :func:`ring_all_reduce` — reduce-scatter then all-gather, 2(N-1) steps.
* :func:`ring2d_all_reduce` — hierarchical over a rows x columns grid: reduce-scatter
  along the row ring, all-reduce of the owned piece along the column ring, all-gather
  along the row ring: 2(X-1) + 2(Y-1) steps.

Pure: no sockets, no numpy. Regions and chunks are byte ranges of the rank's buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

OPS = ("reduce", "copy")


@dataclass(frozen=True)
class Step:
    step: int            # index within the collective (0-based, across phases)
    ring: int            # which ring of the rank this step uses (index into Schedule.rings)
    send_to: int         # position in that ring of the successor
    recv_from: int       # position of the predecessor
    send_range: tuple    # (offset, length) in bytes of the rank's buffer
    recv_range: tuple
    op: str              # what to do with the received chunk


@dataclass(frozen=True)
class Schedule:
    """One rank's schedule: its rings (member rank ids, in ring order) and its steps."""
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


def _ring_phase(pos: int, n: int, chunks: list, first_step: int, ring_index: int,
                kind: str, own: int = 0) -> list[Step]:
    succ, pred = (pos + 1) % n, (pos - 1) % n
    steps = []
    for s in range(n - 1):
        if kind == "rs":
            send_c, recv_c, op = (pos - s) % n, (pos - s - 1) % n, "reduce"
        else:
            send_c, recv_c, op = (pos + own - s) % n, (pos + own - s - 1) % n, "copy"
        steps.append(Step(first_step + s, ring_index, succ, pred, chunks[send_c], chunks[recv_c], op))
    return steps


def ring_reduce_scatter(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    pos, n = ring.index(rank), len(ring)
    chunks = chunk_ranges(0, nbytes, n, align)
    return Schedule(rank, (tuple(ring),), tuple(_ring_phase(pos, n, chunks, 0, 0, "rs")))


def ring_all_gather(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    """Standalone all-gather: rank at position p contributes chunk p."""
    pos, n = ring.index(rank), len(ring)
    chunks = chunk_ranges(0, nbytes, n, align)
    return Schedule(rank, (tuple(ring),), tuple(_ring_phase(pos, n, chunks, 0, 0, "ag", own=0)))


def ring_all_reduce(ring: list[int], rank: int, nbytes: int, align: int = 4) -> Schedule:
    pos, n = ring.index(rank), len(ring)
    chunks = chunk_ranges(0, nbytes, n, align)
    steps = (_ring_phase(pos, n, chunks, 0, 0, "rs")
             + _ring_phase(pos, n, chunks, n - 1, 0, "ag", own=1))
    return Schedule(rank, (tuple(ring),), tuple(steps))


def ring2d_all_reduce(grid: list[list[int]], rank: int, nbytes: int, align: int = 4) -> Schedule:
    """``grid[r][c]``: the rank at row r, column c. Row rings run along a row, column rings
    down a column."""
    rows, cols = len(grid), len(grid[0])
    if any(len(r) != cols for r in grid):
        raise ValueError("a 2D ring needs a rectangular grid")
    r, c = next((i, row.index(rank)) for i, row in enumerate(grid) if rank in row)
    row_ring = list(grid[r])
    col_ring = [grid[i][c] for i in range(rows)]
    x, y = len(row_ring), len(col_ring)
    row_chunks = chunk_ranges(0, nbytes, x, align)
    owned = row_chunks[(c + 1) % x]                       # after the row reduce-scatter
    col_chunks = chunk_ranges(owned[0], owned[1], y, align)
    steps = _ring_phase(c, x, row_chunks, 0, 0, "rs")
    first = len(steps)
    steps += _ring_phase(r, y, col_chunks, first, 1, "rs")
    steps += _ring_phase(r, y, col_chunks, first + y - 1, 1, "ag", own=1)
    steps += _ring_phase(c, x, row_chunks, first + 2 * (y - 1), 0, "ag", own=1)
    return Schedule(rank, (tuple(row_ring), tuple(col_ring)), tuple(steps))


ALGORITHMS = {
    "ring_allreduce": ring_all_reduce,
    "ring_reducescatter": ring_reduce_scatter,
    "ring_allgather": ring_all_gather,
}


def n_steps(algorithm: str, ring_size: int, cols: int | None = None) -> int:
    """Steps of one collective: 2(N-1) for all-reduce, N-1 for RS / AG."""
    if algorithm == "ring2d_allreduce":
        return 2 * (ring_size - 1) + 2 * (cols - 1)
    return 2 * (ring_size - 1) if algorithm == "ring_allreduce" else ring_size - 1


def bus_factor(algorithm: str, n: int) -> float:
    """nccl-tests' busbw = algbw x factor: 2(N-1)/N for all-reduce, (N-1)/N for RS / AG."""
    return 2 * (n - 1) / n if algorithm in ("ring_allreduce", "ring2d_allreduce") else (n - 1) / n


def simulate(schedules: dict[int, Schedule], inputs: dict[int, list]) -> dict[int, list]:
    """Execute schedules on Python lists of numbers (one element per byte-range unit) in
    the dependency order, for tests: returns each rank's final buffer."""
    bufs = {r: list(v) for r, v in inputs.items()}
    pos = {r: 0 for r in schedules}            # next step index per rank
    inflight = {}                              # (receiver, step) -> data snapshot
    progress = True
    while progress:
        progress = False
        for r, sch in schedules.items():
            i = pos[r]
            if i >= len(sch.steps):
                continue
            st = sch.steps[i]
            # send step i (snapshot now), once
            key_out = (sch.rings[st.ring][st.send_to], st.step)
            if key_out not in inflight and (r, "sent", st.step) not in inflight:
                o, n = st.send_range
                inflight[key_out] = bufs[r][o:o + n]
                inflight[(r, "sent", st.step)] = True
                progress = True
            # apply receive of step i when it has arrived
            if (r, st.step) in inflight:
                data = inflight.pop((r, st.step))
                o, n = st.recv_range
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


def build_schedule_for(algorithm: str, ring_or_grid, rank: int, nbytes: int,
                       align: int = 4) -> Schedule:
    """The schedule of ``rank``: ``ring_or_grid`` is the ring (rank ids in order), or for
    ``ring2d_allreduce`` the grid of rank ids (rows of columns)."""
    if algorithm == "ring2d_allreduce":
        return ring2d_all_reduce([list(r) for r in ring_or_grid], rank, nbytes, align)
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; allowed: "
                         f"{', '.join(list(ALGORITHMS) + ['ring2d_allreduce'])}")
    return ALGORITHMS[algorithm](list(ring_or_grid), rank, nbytes, align)
