"""Unit tests for hosts/collectives/: chunk_ranges, schedules by hand, step counts, registry."""

import pytest

from hosts.collectives import (
    ALGORITHMS, Schedule, chunk_ranges, collective, grid_of, ring2d_all_reduce,
    ring_all_gather, ring_all_reduce, ring_reduce_scatter,
)
from tests.collectives_util import GRIDS, RING_SIZES, make_grid, peer_from, peer_to, rail_rings


def chunk_table(sch: Schedule, chunk_bytes: int = 4):
    """(step, send chunk, recv chunk, send-to rank, recv-from rank, op) per step."""
    return [(st.step, st.send_range[0] // chunk_bytes, st.recv_range[0] // chunk_bytes,
             peer_to(sch, st), peer_from(sch, st), st.op) for st in sch.steps]


# --- chunk_ranges ----------------------------------------------------------------------

def test_chunk_ranges_splits_evenly_divisible_length_into_equal_contiguous_chunks():
    assert chunk_ranges(0, 12, 3) == [(0, 4), (4, 4), (8, 4)]


def test_chunk_ranges_is_shifted_by_offset():
    assert chunk_ranges(100, 48, 4, 4) == [(100, 12), (112, 12), (124, 12), (136, 12)]
    # 40 / 4 = 10 is not a multiple of 4: 8-byte chunks, the last takes 40 - 24 = 16
    assert chunk_ranges(100, 40, 4, 4) == [(100, 8), (108, 8), (116, 8), (124, 16)]


def test_chunk_ranges_last_chunk_takes_the_remainder():
    assert chunk_ranges(0, 10, 3) == [(0, 3), (3, 3), (6, 4)]


def test_chunk_ranges_rounds_chunk_size_down_to_alignment():
    # 100 / 3 = 33 -> 32 (multiple of 4); the last chunk takes 100 - 64 = 36
    assert chunk_ranges(0, 100, 3, align=4) == [(0, 32), (32, 32), (64, 36)]


@pytest.mark.parametrize("length,n,align", [(4096, 4, 4), (1000, 8, 4), (50, 3, 4),
                                            (7, 7, 1), (1 << 20, 5, 64)])
def test_chunk_ranges_cover_the_region_contiguously_with_aligned_sizes(length, n, align):
    chunks = chunk_ranges(16, length, n, align)
    assert len(chunks) == n
    assert chunks[0][0] == 16
    for (o1, s1), (o2, _) in zip(chunks, chunks[1:]):
        assert o1 + s1 == o2
    assert sum(s for _, s in chunks) == length
    assert all(s % align == 0 for _, s in chunks[:-1])
    assert all(s == chunks[0][1] for _, s in chunks[:-1])


def test_chunk_ranges_single_chunk_is_the_whole_region():
    assert chunk_ranges(8, 20, 1, 4) == [(8, 20)]


@pytest.mark.parametrize("n", [0, -1])
def test_chunk_ranges_rejects_fewer_than_one_chunk(n):
    with pytest.raises(ValueError, match=f"cannot split into {n} chunks"):
        chunk_ranges(0, 16, n)


# --- explicit schedules, written out by hand --------------------------------------------

def test_all_reduce_n2_schedule_by_hand():
    ring = [0, 1]
    # (step, send chunk, recv chunk, to, from, op)
    assert chunk_table(ring_all_reduce(ring, 0, 8)) == [
        (0, 0, 1, 1, 1, "reduce"),
        (1, 1, 0, 1, 1, "copy"),
    ]
    assert chunk_table(ring_all_reduce(ring, 1, 8)) == [
        (0, 1, 0, 0, 0, "reduce"),
        (1, 0, 1, 0, 0, "copy"),
    ]


def test_all_reduce_n3_schedule_by_hand():
    ring = [0, 1, 2]
    # reduce-scatter: rank p sends chunk p-s, receives p-s-1 from p-1 and reduces it;
    # rank p then owns chunk p+1 and all-gathers from it.
    assert chunk_table(ring_all_reduce(ring, 0, 12)) == [
        (0, 0, 2, 1, 2, "reduce"),
        (1, 2, 1, 1, 2, "reduce"),
        (2, 1, 0, 1, 2, "copy"),
        (3, 0, 2, 1, 2, "copy"),
    ]
    assert chunk_table(ring_all_reduce(ring, 1, 12)) == [
        (0, 1, 0, 2, 0, "reduce"),
        (1, 0, 2, 2, 0, "reduce"),
        (2, 2, 1, 2, 0, "copy"),
        (3, 1, 0, 2, 0, "copy"),
    ]
    assert chunk_table(ring_all_reduce(ring, 2, 12)) == [
        (0, 2, 1, 0, 1, "reduce"),
        (1, 1, 0, 0, 1, "reduce"),
        (2, 0, 2, 0, 1, "copy"),
        (3, 2, 1, 0, 1, "copy"),
    ]


def test_all_reduce_n3_on_a_permuted_ring_uses_ring_positions_for_chunks_and_global_ids_for_peers():
    ring = [7, 3, 5]                  # positions: 7 -> 0, 3 -> 1, 5 -> 2
    sch = ring_all_reduce(ring, 3, 12)
    assert sch.rank == 3 and sch.rings == ((7, 3, 5),)
    assert chunk_table(sch) == [
        (0, 1, 0, 5, 7, "reduce"),
        (1, 0, 2, 5, 7, "reduce"),
        (2, 2, 1, 5, 7, "copy"),
        (3, 1, 0, 5, 7, "copy"),
    ]
    assert {(st.send_to, st.recv_from) for st in sch.steps} == {(2, 0)}


def test_reduce_scatter_n4_schedule_by_hand():
    ring = [0, 1, 2, 3]
    assert chunk_table(ring_reduce_scatter(ring, 0, 16)) == [
        (0, 0, 3, 1, 3, "reduce"),
        (1, 3, 2, 1, 3, "reduce"),
        (2, 2, 1, 1, 3, "reduce"),
    ]
    assert chunk_table(ring_reduce_scatter(ring, 2, 16)) == [
        (0, 2, 1, 3, 1, "reduce"),
        (1, 1, 0, 3, 1, "reduce"),
        (2, 0, 3, 3, 1, "reduce"),
    ]


def test_all_gather_n3_schedule_by_hand_starts_from_own_chunk():
    ring = [0, 1, 2]
    assert chunk_table(ring_all_gather(ring, 0, 12)) == [
        (0, 0, 2, 1, 2, "copy"),
        (1, 2, 1, 1, 2, "copy"),
    ]
    assert chunk_table(ring_all_gather(ring, 1, 12)) == [
        (0, 1, 0, 2, 0, "copy"),
        (1, 0, 2, 2, 0, "copy"),
    ]
    assert chunk_table(ring_all_gather(ring, 2, 12)) == [
        (0, 2, 1, 0, 1, "copy"),
        (1, 1, 0, 0, 1, "copy"),
    ]


def test_rail_ring_rank5_talks_to_its_rail_neighbours_only():
    rings = rail_rings()
    assert rings[1] == [1, 5, 9, 13]
    sch = ring_all_reduce(rings[1], 5, 16)
    assert sch.rings == ((1, 5, 9, 13),)
    assert chunk_table(sch) == [
        (0, 1, 0, 9, 1, "reduce"),
        (1, 0, 3, 9, 1, "reduce"),
        (2, 3, 2, 9, 1, "reduce"),
        (3, 2, 1, 9, 1, "copy"),
        (4, 1, 0, 9, 1, "copy"),
        (5, 0, 3, 9, 1, "copy"),
    ]


def test_ring2d_2x2_rank0_schedule_by_hand():
    grid = [[0, 1], [2, 3]]
    sch = ring2d_all_reduce(grid, 0, 16)
    assert sch.rings == ((0, 1), (0, 2))
    got = [(st.step, st.ring, peer_to(sch, st), peer_from(sch, st), st.send_range,
            st.recv_range, st.op) for st in sch.steps]
    assert got == [
        # row reduce-scatter over (0, 1): halves of 8 bytes; rank 0 keeps half 1 (8..16)
        (0, 0, 1, 1, (0, 8), (8, 8), "reduce"),
        # column reduce-scatter of the owned half over (0, 2): quarters of 4 bytes
        (1, 1, 2, 2, (8, 4), (12, 4), "reduce"),
        # column all-gather of that half, from the owned quarter (12..16)
        (2, 1, 2, 2, (12, 4), (8, 4), "copy"),
        # row all-gather, from the owned half (8..16)
        (3, 0, 1, 1, (8, 8), (0, 8), "copy"),
    ]


def test_ring2d_2x2_rank3_schedule_by_hand():
    grid = [[0, 1], [2, 3]]
    sch = ring2d_all_reduce(grid, 3, 16)
    assert sch.rings == ((2, 3), (1, 3))
    got = [(st.step, st.ring, peer_to(sch, st), peer_from(sch, st), st.send_range,
            st.recv_range, st.op) for st in sch.steps]
    assert got == [
        (0, 0, 2, 2, (8, 8), (0, 8), "reduce"),     # keeps half 0 (0..8)
        (1, 1, 1, 1, (4, 4), (0, 4), "reduce"),
        (2, 1, 1, 1, (0, 4), (4, 4), "copy"),
        (3, 0, 2, 2, (0, 8), (8, 8), "copy"),
    ]


def test_ring2d_2x4_rank_uses_row_ring_along_row_and_column_ring_down_column():
    grid = make_grid(2, 4)                            # [[0,1,2,3],[4,5,6,7]]
    sch = ring2d_all_reduce(grid, 6, 32)
    assert sch.rings == ((4, 5, 6, 7), (2, 6))
    rings_used = [st.ring for st in sch.steps]
    assert rings_used == [0, 0, 0, 1, 1, 0, 0, 0]
    assert [st.op for st in sch.steps] == ["reduce"] * 4 + ["copy"] * 4
    # row peers: successor 7, predecessor 5; column peer: 2 both ways
    assert [(peer_to(sch, st), peer_from(sch, st)) for st in sch.steps] == \
        [(7, 5)] * 3 + [(2, 2)] * 2 + [(7, 5)] * 3
    # column steps work inside the owned row chunk: column 2 owns row chunk 3 = (24, 8)
    col_steps = [st for st in sch.steps if st.ring == 1]
    for st in col_steps:
        for off, size in (st.send_range, st.recv_range):
            assert 24 <= off and off + size <= 32 and size == 4


# --- step counts -----------------------------------------------------------------------

@pytest.mark.parametrize("n", RING_SIZES)
def test_all_reduce_has_2n_minus_2_steps_numbered_from_zero(n):
    sch = ring_all_reduce(list(range(n)), 0, 4 * n)
    assert len(sch.steps) == 2 * (n - 1) == ALGORITHMS["ring_allreduce"].n_steps(tuple(range(n)))
    assert [st.step for st in sch.steps] == list(range(2 * (n - 1)))
    assert [st.op for st in sch.steps] == ["reduce"] * (n - 1) + ["copy"] * (n - 1)


@pytest.mark.parametrize("n", RING_SIZES)
@pytest.mark.parametrize("algorithm,builder,op", [
    ("ring_reducescatter", ring_reduce_scatter, "reduce"),
    ("ring_allgather", ring_all_gather, "copy"),
])
def test_reduce_scatter_and_all_gather_have_n_minus_1_steps(n, algorithm, builder, op):
    sch = builder(list(range(n)), n - 1, 4 * n)
    assert len(sch.steps) == n - 1 == ALGORITHMS[algorithm].n_steps(tuple(range(n)))
    assert [st.step for st in sch.steps] == list(range(n - 1))
    assert {st.op for st in sch.steps} == {op}


@pytest.mark.parametrize("rows,cols", GRIDS)
def test_ring2d_has_2x_minus_2_plus_2y_minus_2_steps(rows, cols):
    grid = make_grid(rows, cols)
    sch = ring2d_all_reduce(grid, 0, 4 * rows * cols)
    expected = 2 * (cols - 1) + 2 * (rows - 1)
    assert len(sch.steps) == expected
    assert ALGORITHMS["ring2d_allreduce"].n_steps(grid_of(rows, cols)) == expected
    assert [st.step for st in sch.steps] == list(range(expected))
    # phases: row RS, column RS, column AG, row AG
    assert [st.ring for st in sch.steps] == \
        [0] * (cols - 1) + [1] * (2 * (rows - 1)) + [0] * (cols - 1)
    assert [st.op for st in sch.steps] == \
        ["reduce"] * (cols - 1 + rows - 1) + ["copy"] * (rows - 1 + cols - 1)


def test_n_steps_examples():
    assert ALGORITHMS["ring_allreduce"].n_steps(tuple(range(4))) == 6
    assert ALGORITHMS["ring_allreduce"].n_steps(tuple(range(32))) == 62
    assert ALGORITHMS["ring_reducescatter"].n_steps(tuple(range(8))) == 7
    assert ALGORITHMS["ring_allgather"].n_steps(tuple(range(2))) == 1
    assert ALGORITHMS["ring2d_allreduce"].n_steps(grid_of(8, 4)) == 20


# --- bus factor and the registry's schedules ---------------------------------------------

@pytest.mark.parametrize("algorithm,n,expected", [
    ("ring_allreduce", 2, 1.0),
    ("ring_allreduce", 4, 1.5),
    ("ring_allreduce", 8, 1.75),
    ("ring2d_allreduce", 32, 62 / 32),
    ("ring_reducescatter", 4, 0.75),
    ("ring_reducescatter", 2, 0.5),
    ("ring_allgather", 8, 0.875),
    ("ring_allgather", 5, 0.8),
])
def test_bus_factor_follows_nccl_tests(algorithm, n, expected):
    assert ALGORITHMS[algorithm].bus_factor(n) == pytest.approx(expected)


@pytest.mark.parametrize("algorithm", sorted(a for a, c in ALGORITHMS.items() if not c.needs_grid))
def test_schedule_of_1d_algorithms_takes_the_ring_as_a_tuple_or_a_list(algorithm):
    ring = (3, 1, 2, 0)
    assert ALGORITHMS[algorithm].schedule(ring, 2, 32) == \
        ALGORITHMS[algorithm].schedule(list(ring), 2, 32)


def test_ring2d_schedule_takes_a_grid_of_tuples():
    grid = ((0, 1), (2, 3))
    assert ALGORITHMS["ring2d_allreduce"].schedule(grid, 3, 16) == \
        ring2d_all_reduce([[0, 1], [2, 3]], 3, 16)


def test_collective_rejects_unknown_algorithm_naming_it_and_the_allowed_ones():
    with pytest.raises(ValueError) as e:
        collective("ring_alltoall")
    msg = str(e.value)
    assert "'ring_alltoall'" in msg
    for name in ("ring_allreduce", "ring_reducescatter", "ring_allgather", "ring2d_allreduce"):
        assert name in msg


@pytest.mark.parametrize("grid", [[[0, 1], [2]], [[0, 1], [2, 3, 4]], [[0], [1, 2]]])
def test_ring2d_rejects_a_non_rectangular_grid(grid):
    with pytest.raises(ValueError, match="rectangular grid"):
        ring2d_all_reduce(grid, 0, 64)
    with pytest.raises(ValueError, match="rectangular grid"):
        ALGORITHMS["ring2d_allreduce"].schedule(grid, 0, 64)
