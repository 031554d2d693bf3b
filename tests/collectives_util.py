"""Shared helpers for the collective tests: rings, grids, inputs, schedule consistency."""

import random

from hosts.collectives import Schedule, Step


RING_SIZES = (2, 3, 4, 5, 8)
GRIDS = ((2, 2), (4, 2), (2, 4), (8, 4))          # (rows, columns)


# --- helpers ---------------------------------------------------------------------------

def peer_to(sch: Schedule, st: Step) -> int:
    return sch.rings[st.ring][st.send_to]


def peer_from(sch: Schedule, st: Step) -> int:
    return sch.rings[st.ring][st.recv_from]


def make_grid(rows: int, cols: int) -> list[list[int]]:
    return [[r * cols + c for c in range(cols)] for r in range(rows)]


def rail_rings(n_rails: int = 4, per_rail: int = 4) -> list[list[int]]:
    """Ring r = ranks {r, r + n_rails, r + 2 n_rails, ...} (the Symphony paper's Fig 1a)."""
    return [[r + n_rails * i for i in range(per_rail)] for r in range(n_rails)]


def random_inputs(ranks, length: int, seed: int) -> dict[int, list[int]]:
    rng = random.Random(seed)
    return {r: [rng.randint(-1000, 1000) for _ in range(length)] for r in ranks}


def elementwise_sum(bufs) -> list[int]:
    return [sum(col) for col in zip(*bufs)]


def assert_steps_consistent(schedules: dict[int, Schedule]) -> None:
    """At every step, what a rank sends is exactly what its receiver expects from it."""
    n_steps_all = {len(s.steps) for s in schedules.values()}
    assert len(n_steps_all) == 1, f"ranks disagree on the number of steps: {n_steps_all}"
    for i in range(n_steps_all.pop()):
        receivers = []
        for r, sch in schedules.items():
            st = sch.steps[i]
            assert st.step == i
            dst = peer_to(sch, st)
            assert dst != r, f"rank {r} sends to itself at step {i}"
            rst = schedules[dst].steps[i]
            assert peer_from(schedules[dst], rst) == r, \
                f"step {i}: rank {r} sends to {dst}, but {dst} receives from " \
                f"{peer_from(schedules[dst], rst)}"
            assert rst.recv_range == st.send_range, \
                f"step {i}: rank {r} sends {st.send_range}, rank {dst} expects {rst.recv_range}"
            assert rst.ring == st.ring
            receivers.append(dst)
        assert sorted(receivers) == sorted(schedules), \
            f"step {i}: every rank must receive exactly once, got {sorted(receivers)}"
