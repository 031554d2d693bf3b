"""Unit tests for hosts/collectives/: ranks' schedules agree and simulate to the exact sum."""

import pytest

from hosts.collectives import (
    chunk_ranges, ring2d_all_reduce, ring_all_gather, ring_all_reduce, ring_reduce_scatter,
    simulate,
)
from tests.collectives_util import (
    GRIDS, RING_SIZES, assert_steps_consistent, elementwise_sum, make_grid, peer_from,
    peer_to, rail_rings, random_inputs,
)


# --- consistency across ranks ----------------------------------------------------------

@pytest.mark.parametrize("n", RING_SIZES)
@pytest.mark.parametrize("builder", [ring_all_reduce, ring_reduce_scatter, ring_all_gather])
def test_1d_sender_send_range_equals_receiver_recv_range_every_step(n, builder):
    ring = list(range(n))
    schedules = {r: builder(ring, r, 4 * n + 6) for r in ring}     # uneven last chunk too
    assert_steps_consistent(schedules)


@pytest.mark.parametrize("n", RING_SIZES)
def test_1d_peers_are_ring_successor_and_predecessor(n):
    ring = [10 + 3 * i for i in range(n)]              # arbitrary global ids
    for p, r in enumerate(ring):
        sch = ring_all_reduce(ring, r, 4 * n)
        for st in sch.steps:
            assert peer_to(sch, st) == ring[(p + 1) % n]
            assert peer_from(sch, st) == ring[(p - 1) % n]


def test_rail_rings_are_independent_and_consistent():
    schedules = {r: ring_all_reduce(ring, r, 64) for ring in rail_rings() for r in ring}
    assert sorted(schedules) == list(range(16))
    assert_steps_consistent(schedules)
    for r, sch in schedules.items():
        for st in sch.steps:
            assert peer_to(sch, st) % 4 == r % 4 and peer_from(sch, st) % 4 == r % 4


@pytest.mark.parametrize("rows,cols", GRIDS)
def test_ring2d_sender_send_range_equals_receiver_recv_range_every_step(rows, cols):
    grid = make_grid(rows, cols)
    schedules = {r: ring2d_all_reduce(grid, r, 4 * rows * cols * 2)
                 for r in range(rows * cols)}
    assert_steps_consistent(schedules)


@pytest.mark.parametrize("rows,cols", GRIDS)
def test_ring2d_row_steps_stay_in_row_and_column_steps_stay_in_column(rows, cols):
    grid = make_grid(rows, cols)
    for r in range(rows * cols):
        sch = ring2d_all_reduce(grid, r, 4 * rows * cols)
        for st in sch.steps:
            dst, src = peer_to(sch, st), peer_from(sch, st)
            if st.ring == 0:
                assert dst // cols == r // cols and src // cols == r // cols
            else:
                assert dst % cols == r % cols and src % cols == r % cols


# --- simulate: the result is exact ----------------------------------------------------

@pytest.mark.parametrize("n", RING_SIZES)
@pytest.mark.parametrize("length_extra", [0, 5])
def test_simulated_all_reduce_gives_exact_sum_on_every_rank(n, length_extra):
    ring = list(range(n))
    length = 4 * n * 3 + length_extra
    schedules = {r: ring_all_reduce(ring, r, length) for r in ring}
    inputs = random_inputs(ring, length, seed=n)
    out = simulate(schedules, inputs)
    expected = elementwise_sum(inputs.values())
    for r in ring:
        assert out[r] == expected, f"rank {r} of {n}"


@pytest.mark.parametrize("n", RING_SIZES)
def test_simulated_reduce_scatter_leaves_rank_p_owning_reduced_chunk_p_plus_1(n):
    ring = list(range(n))
    length = 4 * n * 2 + 3
    schedules = {r: ring_reduce_scatter(ring, r, length) for r in ring}
    inputs = random_inputs(ring, length, seed=100 + n)
    out = simulate(schedules, inputs)
    total = elementwise_sum(inputs.values())
    chunks = chunk_ranges(0, length, n, 4)
    for p in ring:
        o, size = chunks[(p + 1) % n]
        assert out[p][o:o + size] == total[o:o + size], f"rank {p} of {n}"


@pytest.mark.parametrize("n", RING_SIZES)
def test_simulated_all_gather_gives_every_rank_every_owners_chunk(n):
    ring = list(range(n))
    length = 4 * n * 2 + 7
    schedules = {r: ring_all_gather(ring, r, length) for r in ring}
    inputs = random_inputs(ring, length, seed=200 + n)
    out = simulate(schedules, inputs)
    chunks = chunk_ranges(0, length, n, 4)
    expected = []
    for owner, (o, size) in enumerate(chunks):
        expected += inputs[owner][o:o + size]
    for r in ring:
        assert out[r] == expected, f"rank {r} of {n}"


def test_simulated_rail_rings_sum_within_each_rail_only():
    rings = rail_rings()
    length = 40
    schedules = {r: ring_all_reduce(ring, r, length) for ring in rings for r in ring}
    inputs = random_inputs(range(16), length, seed=7)
    out = simulate(schedules, inputs)
    for ring in rings:
        expected = elementwise_sum(inputs[r] for r in ring)
        for r in ring:
            assert out[r] == expected, f"rank {r} of rail {ring}"
    assert out[0] != out[1]                    # different rails, different sums


@pytest.mark.parametrize("rows,cols", GRIDS)
@pytest.mark.parametrize("length_extra", [0, 6])
def test_simulated_ring2d_all_reduce_gives_exact_sum_on_every_rank(rows, cols, length_extra):
    grid = make_grid(rows, cols)
    n = rows * cols
    length = 4 * n * 2 + length_extra
    schedules = {r: ring2d_all_reduce(grid, r, length) for r in range(n)}
    inputs = random_inputs(range(n), length, seed=rows * 10 + cols)
    out = simulate(schedules, inputs)
    expected = elementwise_sum(inputs.values())
    for r in range(n):
        assert out[r] == expected, f"rank {r} of {rows}x{cols}"


def test_simulate_does_not_modify_the_inputs():
    ring = [0, 1, 2]
    schedules = {r: ring_all_reduce(ring, r, 12) for r in ring}
    inputs = {r: [r + 1] * 12 for r in ring}
    before = {r: list(v) for r, v in inputs.items()}
    out = simulate(schedules, inputs)
    assert inputs == before
    assert out[0] == [6] * 12


def test_simulate_reports_deadlock_when_a_peer_is_missing():
    schedules = {0: ring_all_reduce([0, 1], 0, 8)}      # rank 1 never runs
    with pytest.raises(RuntimeError, match=r"deadlocked at steps \{0: 0\}"):
        simulate(schedules, {0: [1] * 8})
