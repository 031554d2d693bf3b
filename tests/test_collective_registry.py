"""Unit tests for hosts/collectives/'s registry: every entry behind the one interface,
halving-doubling all-reduce (Thakur, Rabenseifner & Gropp 2005), and the generic expected
result against the reference executor. Pure, no root."""

import numpy as np
import pytest

from hosts.collectives import (ALGORITHMS, Collective, HalvingDoublingAllReduce, Schedule,
                               Step, collective, grid_of, simulate)
from hosts.collectives.base import Piece
from hosts.collectives.expected import Expected, expected_result
from tests.collectives_util import assert_steps_consistent, elementwise_sum, random_inputs

HD = "halving_doubling_allreduce"
POWERS = (2, 4, 8, 16)
ITEM = 4

# One valid group per algorithm, and the members a reduction sums over.
GROUPS = {
    "ring_allreduce": (3, 1, 2, 0),
    "ring_reducescatter": (5, 0, 2),
    "ring_allgather": (4, 2, 0, 1, 3),
    "ring2d_allreduce": grid_of(2, 3),
    HD: (7, 1, 4, 0, 6, 3, 2, 5),
}
SHAPES = {"ring_allreduce": 4, "ring_reducescatter": 3, "ring_allgather": 5,
          "ring2d_allreduce": (2, 3), HD: 8}


def members_of(group):
    return sorted(r for row in group for r in (row if isinstance(row, tuple) else (row,)))


def schedules_of(algorithm, group, nbytes, align=4):
    coll = ALGORITHMS[algorithm]
    return {r: coll.schedule(group, r, nbytes, align) for r in members_of(group)}


# --- the registry's interface ----------------------------------------------------------

def test_registry_holds_every_algorithm_under_its_name_legacy_ones_first():
    assert list(ALGORITHMS) == ["ring_allreduce", "ring_reducescatter", "ring_allgather",
                                "ring2d_allreduce", HD]
    for name, coll in ALGORITHMS.items():
        assert isinstance(coll, Collective) and coll.name == name
    assert [n for n, c in ALGORITHMS.items() if c.needs_grid] == ["ring2d_allreduce"]


def test_every_entry_is_there_for_the_test_tables():
    assert set(GROUPS) == set(SHAPES) == set(ALGORITHMS)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_schedule_is_a_schedule_of_n_steps_numbered_from_zero(algorithm):
    coll, group = ALGORITHMS[algorithm], GROUPS[algorithm]
    for r in members_of(group):
        sch = coll.schedule(group, r, 4 * 48)
        assert isinstance(sch, Schedule) and sch.rank == r
        assert all(isinstance(st, Step) and st.op in ("reduce", "copy") for st in sch.steps)
        assert [st.step for st in sch.steps] == list(range(coll.n_steps(group)))
        assert all(r in ring for ring in sch.rings)
        assert collective(algorithm).schedule(group, r, 4 * 48) == sch


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_schedules_are_consistent_across_ranks(algorithm):
    assert_steps_consistent(schedules_of(algorithm, GROUPS[algorithm], 4 * 48 + 8))


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_check_accepts_its_shape_and_rejects_too_few_ranks(algorithm):
    coll = ALGORITHMS[algorithm]
    assert coll.check(SHAPES[algorithm]) is None
    bad = (1, 3) if coll.needs_grid else 1
    err = coll.check(bad)
    assert isinstance(err, str) and algorithm in err


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_bus_factor_follows_nccl_tests(algorithm):
    coll = ALGORITHMS[algorithm]
    reduces_all = algorithm.endswith("allreduce")
    for n in (2, 4, 6, 16):
        assert coll.bus_factor(n) == pytest.approx((2 if reduces_all else 1) * (n - 1) / n)
        assert collective(algorithm).bus_factor(n) == coll.bus_factor(n)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_members_chunks_and_group_of_a_jobs_rings(algorithm):
    coll, group = ALGORITHMS[algorithm], GROUPS[algorithm]
    assert list(coll.members(group)) == members_of(group)
    if coll.needs_grid:
        assert coll.n_chunks(group) == len(group[0])        # the row ring's chunks
        assert coll.group_of(group, [list(row) for row in group], 4) == group
        with pytest.raises(ValueError, match="needs a grid"):
            coll.group_of(group, None, 4)
    else:
        assert coll.n_chunks(group) == len(group)
        other = tuple(r + 100 for r in group)
        assert coll.group_of((other, group), None, group[1]) == group
        with pytest.raises(ValueError, match="rank 99 is in none of the rings"):
            coll.group_of((other, group), None, 99)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_entry_result_pieces_lie_in_the_buffer_and_name_members(algorithm):
    coll, group = ALGORITHMS[algorithm], GROUPS[algorithm]
    nbytes = 4 * 48 + 8
    for r in members_of(group):
        pieces = coll.result(r, group, nbytes, ITEM)
        assert pieces and all(isinstance(p, Piece) for p in pieces)
        for p in pieces:
            assert 0 <= p.offset and p.offset + p.length <= nbytes and p.length > 0
            assert set(p.sources) <= set(members_of(group))


def test_n_steps_of_a_ring_and_of_a_grid():
    assert ALGORITHMS[HD].n_steps(tuple(range(8))) == 6
    assert ALGORITHMS["ring2d_allreduce"].n_steps(grid_of(4, 3)) == 2 * 2 + 2 * 3


def test_unknown_algorithm_is_refused_naming_every_allowed_one():
    with pytest.raises(ValueError) as e:
        collective("tree")
    assert "'tree'" in str(e.value)
    assert all(name in str(e.value) for name in ALGORITHMS)


def test_grid_of_fills_row_by_row():
    assert grid_of(2, 3) == ((0, 1, 2), (3, 4, 5))


# --- halving-doubling all-reduce --------------------------------------------------------

def chunk_of(rng: tuple, chunk_bytes: int = 4) -> tuple:
    """A byte range as (first chunk, chunks)."""
    return (rng[0] // chunk_bytes, rng[1] // chunk_bytes)


def test_halving_doubling_n4_rank1_schedule_by_hand():
    sch = ALGORITHMS[HD].schedule((0, 1, 2, 3), 1, 16)
    assert sch.rings == ((0, 1, 2, 3),)
    got = [(st.step, st.ring, st.send_to, st.recv_from, chunk_of(st.send_range),
            chunk_of(st.recv_range), st.op) for st in sch.steps]
    assert got == [
        # reduce-scatter, distance 2: keep chunks 0-1, send 2-3 to rank 3
        (0, 0, 3, 3, (2, 2), (0, 2), "reduce"),
        # distance 1: keep chunk 1, send chunk 0 to rank 0
        (1, 0, 0, 0, (0, 1), (1, 1), "reduce"),
        # all-gather, distance 1: chunk 1 to rank 0, chunk 0 from it
        (2, 0, 0, 0, (1, 1), (0, 1), "copy"),
        # distance 2: chunks 0-1 to rank 3, chunks 2-3 from it
        (3, 0, 3, 3, (0, 2), (2, 2), "copy"),
    ]


@pytest.mark.parametrize("n", POWERS)
def test_halving_doubling_has_2_log2_n_steps_reduce_then_copy(n):
    coll = ALGORITHMS[HD]
    levels = n.bit_length() - 1
    group = tuple(range(n))
    assert coll.n_steps(group) == 2 * levels
    for r in group:
        sch = coll.schedule(group, r, 4 * n)
        assert [st.step for st in sch.steps] == list(range(2 * levels))
        assert [st.op for st in sch.steps] == ["reduce"] * levels + ["copy"] * levels
        assert {st.ring for st in sch.steps} == {0}


@pytest.mark.parametrize("n", POWERS)
def test_halving_doubling_partners_halve_then_double_the_distance(n):
    levels = n.bit_length() - 1
    group = tuple(10 + 3 * i for i in range(n))            # arbitrary global ids
    distances = [n >> (k + 1) for k in range(levels)] + [1 << k for k in range(levels)]
    for p, r in enumerate(group):
        sch = ALGORITHMS[HD].schedule(group, r, 4 * n)
        assert [st.send_to for st in sch.steps] == [p ^ d for d in distances]
        assert all(st.recv_from == st.send_to for st in sch.steps)
        assert all(sch.rings[0][st.send_to] != r for st in sch.steps)


def tiles(ranges, region) -> bool:
    """The byte ranges cover ``region`` (offset, length) exactly once."""
    out = sorted(ranges)
    return out[0][0] == region[0] and sum(n for _, n in out) == region[1] and \
        all(o1 + n1 == o2 for (o1, n1), (o2, _) in zip(out, out[1:]))


@pytest.mark.parametrize("n", POWERS)
@pytest.mark.parametrize("extra", [0, 12])                  # 12: a larger last chunk
def test_halving_doubling_byte_ranges_cover_the_buffer_exactly(n, extra):
    levels = n.bit_length() - 1
    nbytes = 4 * n * 3 + extra
    whole = (0, nbytes)
    group = tuple(range(n))
    schedules = {r: ALGORITHMS[HD].schedule(group, r, nbytes) for r in group}
    owned = {}
    for r, sch in schedules.items():
        rs, ag = sch.steps[:levels], sch.steps[levels:]
        region = whole
        for st in rs:             # the region splits into the half sent and the half kept
            assert tiles([st.send_range, st.recv_range], region)
            region = st.recv_range
        owned[r] = region
        assert tiles([st.send_range for st in rs] + [region], whole)
        assert tiles([st.recv_range for st in ag] + [region], whole)
        for st in ag:             # it sends all it holds complete, and that doubles
            assert st.send_range == region
            region = (min(region[0], st.recv_range[0]), region[1] + st.recv_range[1])
            assert tiles([st.send_range, st.recv_range], region)
        assert region == whole
    assert tiles(list(owned.values()), whole)      # after the reduce-scatter: one chunk each
    assert_steps_consistent(schedules)


@pytest.mark.parametrize("n", POWERS)
@pytest.mark.parametrize("extra", [0, 5])
def test_simulated_halving_doubling_gives_every_rank_the_exact_sum(n, extra):
    group = tuple(range(n))[::-1]                              # positions != ids
    length = 4 * n * 3 + extra
    schedules = {r: ALGORITHMS[HD].schedule(group, r, length) for r in group}
    inputs = random_inputs(group, length, seed=n + extra)
    out = simulate(schedules, inputs)
    expected = elementwise_sum(inputs.values())
    for r in group:
        assert out[r] == expected, f"rank {r} of {n}"


def test_simulated_halving_doubling_groups_side_by_side_do_not_mix():
    groups = [(0, 2, 4, 6), (1, 3, 5, 7)]
    schedules = {r: ALGORITHMS[HD].schedule(g, r, 32) for g in groups for r in g}
    inputs = random_inputs(range(8), 32, seed=3)
    out = simulate(schedules, inputs)
    for g in groups:
        for r in g:
            assert out[r] == elementwise_sum(inputs[q] for q in g)


@pytest.mark.parametrize("n", [3, 5, 6, 12])
def test_halving_doubling_check_rejects_a_non_power_of_two(n):
    coll = ALGORITHMS[HD]
    msg = f"halving-doubling needs a power-of-two number of ranks, got {n}"
    assert coll.check(n) == msg
    with pytest.raises(ValueError, match=msg):
        coll.schedule(tuple(range(n)), 0, 4 * n)


@pytest.mark.parametrize("n", POWERS)
def test_halving_doubling_check_accepts_powers_of_two(n):
    assert ALGORITHMS[HD].check(n) is None


@pytest.mark.parametrize("bad", [0, 1, -4, "8", 8.0, True, None])
def test_halving_doubling_check_rejects_fewer_than_two_or_non_integers(bad):
    assert "needs at least 2 ranks" in ALGORITHMS[HD].check(bad)


def test_halving_doubling_bus_factor_is_the_all_reduce_one():
    for n in POWERS:
        assert ALGORITHMS[HD].bus_factor(n) == ALGORITHMS["ring_allreduce"].bus_factor(n)
    assert ALGORITHMS[HD].bus_factor(8) == pytest.approx(1.75)


def test_halving_doubling_is_an_entry_of_its_class():
    assert type(ALGORITHMS[HD]) is HalvingDoublingAllReduce


def test_simulate_refuses_a_message_of_the_wrong_size():
    group = (0, 1)
    schedules = {r: ALGORITHMS[HD].schedule(group, r, 8) for r in group}
    st = schedules[1].steps[0]
    bad = Step(st.step, st.ring, st.send_to, st.recv_from, st.send_range,
               (st.recv_range[0], st.recv_range[1] - 1), st.op)
    schedules[1] = Schedule(1, schedules[1].rings, (bad,) + schedules[1].steps[1:])
    with pytest.raises(RuntimeError, match="rank 1 step 0: got 4 units from rank 0, expected 3"):
        simulate(schedules, {0: [1] * 8, 1: [2] * 8})


def test_simulate_reports_a_message_to_the_wrong_peer_as_a_deadlock():
    group = (0, 1, 2, 3)
    schedules = {r: ALGORITHMS[HD].schedule(group, r, 16) for r in group}
    st = schedules[0].steps[0]                                 # to 1, not its partner 2
    wrong = Step(st.step, st.ring, 1, st.recv_from, st.send_range, st.recv_range, st.op)
    schedules[0] = Schedule(0, schedules[0].rings, (wrong,) + schedules[0].steps[1:])
    with pytest.raises(RuntimeError, match="deadlocked"):
        simulate(schedules, {r: [r] * 16 for r in group})


# --- the generic expected result, against the reference executor ------------------------

def seeded(seed: int, count: int):
    """``base(r)``: small integers 0..63 as float32, like hosts.rank's inputs."""
    def base(r: int) -> np.ndarray:
        return np.random.default_rng([seed, r]).integers(0, 64, count).astype(np.float32)
    return base


def simulate_items(schedules, inputs: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """simulate() on float32 items: each item is ITEM byte units holding its value."""
    out = simulate(schedules, {r: np.repeat(v, ITEM).tolist() for r, v in inputs.items()})
    items = {}
    for r, units in out.items():
        per_byte = np.array(units, dtype=np.float64).reshape(-1, ITEM)
        assert (per_byte == per_byte[:, :1]).all(), f"rank {r}: an item was split"
        items[r] = per_byte[:, 0].astype(np.float32)
    return items


CASES = [(a, GROUPS[a]) for a in ALGORITHMS] + [
    ("ring_allreduce", (0, 1)), ("ring_reducescatter", (3, 1, 2, 0)),
    ("ring_allgather", (1, 0)), ("ring2d_allreduce", grid_of(2, 2)),
    ("ring2d_allreduce", grid_of(4, 2)), (HD, (0, 1)), (HD, (3, 0, 2, 1)),
]


@pytest.mark.parametrize("algorithm,group", CASES)
@pytest.mark.parametrize("nbytes", [4 * 24, 4 * 24 + 8])
def test_expected_matches_what_the_schedules_compute_on_every_pass(algorithm, group, nbytes):
    coll = ALGORITHMS[algorithm]
    base = seeded(len(members_of(group)) + nbytes, nbytes // ITEM)
    schedules = schedules_of(algorithm, group, nbytes, ITEM)
    expected = {r: Expected(coll, r, group, nbytes, base) for r in schedules}
    for p in range(3):
        inputs = {r: e.input(p) for r, e in expected.items()}
        for r in schedules:
            assert np.array_equal(inputs[r], base(r) + np.float32(p))
        out = simulate_items(schedules, inputs)
        for r, e in expected.items():
            assert e.check(out[r], p), f"{algorithm} rank {r} pass {p}"
            assert not e.check(out[r], p + 1)
            for (o, n) in e.ranges:                     # every checked byte counts
                for i in (o // ITEM, (o + n) // ITEM - 1):
                    bad = out[r].copy()
                    bad[i] += 1
                    assert not e.check(bad, p)


def test_expected_reduce_scatter_checks_only_the_owned_chunk():
    coll, group, nbytes = ALGORITHMS["ring_reducescatter"], (0, 1, 2, 3), 64
    base = seeded(1, nbytes // ITEM)
    e = Expected(coll, 2, group, nbytes, base)
    assert e.ranges == ((48, 16),) and e.per_pass == (4,)     # chunk (2 + 1) mod 4
    buf = e.target + np.float32(4 * 5)
    buf[:12] = -1                                             # outside: not checked
    assert e.check(buf, 5)


def test_expected_all_gather_takes_each_chunk_from_its_owner_and_grows_by_one():
    coll, group, nbytes = ALGORITHMS["ring_allgather"], (2, 0, 1), 24
    base = seeded(2, nbytes // ITEM)
    e = Expected(coll, 0, group, nbytes, base)
    assert e.ranges == ((0, 8), (8, 8), (16, 8)) and e.per_pass == (1, 1, 1)
    assert np.array_equal(e.target, np.concatenate([base(2)[:2], base(0)[2:4], base(1)[4:]]))


@pytest.mark.parametrize("algorithm", [a for a in ALGORITHMS if a.endswith("allreduce")])
def test_expected_all_reduce_is_the_sum_over_every_member(algorithm):
    coll, group = ALGORITHMS[algorithm], GROUPS[algorithm]
    nbytes = 4 * 24
    base = seeded(3, nbytes // ITEM)
    e = Expected(coll, members_of(group)[0], group, nbytes, base)
    assert e.ranges == ((0, nbytes),) and e.per_pass == (len(members_of(group)),)
    assert np.array_equal(e.target, sum(base(r) for r in members_of(group)))


def test_entry_expected_returns_ranges_target_and_per_pass_calling_base_once_per_rank():
    calls = []
    inner = seeded(4, 8)

    def base(r):
        calls.append(r)
        return inner(r)
    res = ALGORITHMS["ring_allgather"].expected(1, (0, 1, 2, 3), 32, ITEM, base)
    assert res.ranges == ((0, 8), (8, 8), (16, 8), (24, 8)) and res.per_pass == (1,) * 4
    assert np.array_equal(res.target, np.concatenate([inner(r)[2 * r:2 * r + 2]
                                                      for r in range(4)]))
    assert sorted(calls) == [0, 1, 2, 3]


def test_expected_refuses_inputs_whose_items_do_not_match_itemsize():
    with pytest.raises(ValueError, match="4-byte items, not 8"):
        expected_result(ALGORITHMS["ring_allreduce"], 0, (0, 1), 32, 8, seeded(5, 4))


@pytest.mark.parametrize("algorithm,group", CASES)
def test_a_kept_sum_of_inputs_gives_the_same_expected_result(algorithm, group):
    coll, nbytes = ALGORITHMS[algorithm], 4 * 24
    base = seeded(5, nbytes // ITEM)
    sums = {}

    def sum_of(ranks):
        sums[ranks] = sums.get(ranks, 0) + 1
        return sum(base(r) for r in ranks)
    for r in members_of(group):
        plain, kept = Expected(coll, r, group, nbytes, base), \
            Expected(coll, r, group, nbytes, base, sum_of)
        assert kept.ranges == plain.ranges and kept.per_pass == plain.per_pass
        assert np.array_equal(kept.target, plain.target)
    assert all(len(ranks) > 1 and list(ranks) == sorted(ranks) for ranks in sums)


def test_a_process_with_a_large_group_draws_each_input_once():
    """128 ranks of one all-reduce in one process (the simulator at the paper's size):
    each rank's input drawn at most twice (its own buffer, the group's sum), not once
    per member (16,384 draws)."""
    from hosts import rank as rank_mod
    from hosts.config import RankConfig
    rank_mod.forget_inputs()
    group = tuple(range(128))
    ips = {i: f"10.0.{i // 200}.{i % 200 + 1}" for i in group}
    try:
        for r in group:
            rank_mod.build(RankConfig(job=1, rank=r, algorithm="ring_allreduce", group=group,
                                      channel=0, rank_ips=ips, nbytes=4 * 1024, passes=1,
                                      steps_per_collective=2 * 127, seed=1))
        info = rank_mod.rank_base.cache_info()
        assert info.misses <= 2 * 128, info
        assert rank_mod.inputs_sum.cache_info().misses == 1
    finally:
        rank_mod.forget_inputs()
