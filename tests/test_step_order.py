"""The dependency rule (hosts.collectives.order): on_arrival, the paper's (§2.1), against
in_order, in the pure state machine, the reference executor, the ranks on an in-memory
network and the flow-level model, each with times computed by hand."""

import random
from dataclasses import replace

import pytest

from emulator.model import JobInput, LinkEvent, leaf_spine, simulate
from hosts.collectives import ALGORITHMS, grid_of
from hosts.collectives.order import (IN_ORDER, ON_ARRIVAL, ORDERS, StepOrder, check_order,
                                     dependencies)
from hosts.collectives.schedule import simulate as execute
from runtime.records import CollectiveDone

RING = (0, 1, 2, 3)


def ring_deps(order, n=4):
    return dependencies(ALGORITHMS["ring_allreduce"].schedule(tuple(range(n)), 0, 4 * n * 8),
                        order)


def test_on_arrival_posts_step_2_when_step_1_arrives_before_step_0():
    track = StepOrder(ring_deps(ON_ARRIVAL))
    assert track.arrive(1) == ([1], [2])          # applied at once, step 2's send due
    assert track.arrive(0) == ([0], [1])


def test_in_order_holds_step_1_until_step_0_has_arrived():
    track = StepOrder(ring_deps(IN_ORDER))
    assert track.arrive(1) == ([], [])
    assert track.arrive(0) == ([0, 1], [1, 2])


def test_a_ring_all_reduce_waits_on_arrival_only_for_what_causality_already_keeps():
    """Beyond step s-1, an all-gather step's send waits for the reduce-scatter's reduce of
    the chunk it sends (two steps of the reduce-scatter earlier), and its copy for the
    reduce into the same chunk: both done before the chunk could have come back."""
    n = 5
    deps = ring_deps(ON_ARRIVAL, n)
    rs = n - 1
    for s in range(1, 2 * (n - 1)):
        extra = set(deps.post_after[s]) - {s - 1}
        assert extra == ({s - rs - 2} if s - rs >= 2 else set()), s
    assert all(not deps.apply_after[s] for s in range(rs))     # reduces: any order
    assert [deps.apply_after[rs + s] for s in range(n - 1)] == \
        [(), *[(s - 1,) for s in range(1, n - 1)]]


def test_halving_doubling_sends_wait_for_every_receive_they_carry():
    """Step 2 of an 8-rank halving-doubling sends a range reduced at steps 0 and 1: on
    arrival of step 1 alone it may not go."""
    deps = dependencies(ALGORITHMS["halving_doubling_allreduce"].schedule(
        tuple(range(8)), 0, 4 * 64), ON_ARRIVAL)
    assert deps.post_after[2] == (0, 1)
    track = StepOrder(deps)
    assert track.arrive(1) == ([1], [])
    assert track.arrive(0) == ([0], [1, 2])


def test_a_step_that_arrives_twice_is_an_error():
    track = StepOrder(ring_deps(ON_ARRIVAL))
    track.arrive(0)
    with pytest.raises(RuntimeError, match="step 0 arrived twice"):
        track.arrive(0)


def test_an_unknown_rule_is_refused_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="'fifo'; allowed: on_arrival, in_order"):
        check_order("fifo")


CASES = [("ring_allreduce", RING), ("ring_allreduce", (0, 1, 2, 3, 4, 5, 6, 7)),
         ("ring_reducescatter", RING), ("ring_allgather", RING),
         ("ring2d_allreduce", grid_of(2, 3)),
         ("halving_doubling_allreduce", (0, 1, 2, 3, 4, 5, 6, 7))]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("algorithm,group", CASES)
def test_every_delivery_order_gives_the_exact_result_under_both_rules(algorithm, group, order):
    """50 random delivery orders per case: the same buffers as the oldest-first order."""
    coll = ALGORITHMS[algorithm]
    members = coll.members(group)
    nbytes = 4 * coll.n_chunks(group) * 3
    schedules = {r: coll.schedule(group, r, nbytes, 1) for r in members}
    inputs = {r: [r * 100 + i for i in range(nbytes)] for r in members}
    want = execute(schedules, inputs, order)
    for k in range(50):
        assert execute(schedules, inputs, order, random.Random(k)) == want
    total = [sum(inputs[r][i] for r in members) for i in range(nbytes)]
    for r in members:
        for piece in coll.result(r, group, nbytes, 1):
            o, n = piece.offset, piece.length
            assert want[r][o:o + n] == [sum(inputs[s][i] for s in piece.sources)
                                        for i in range(o, o + n)]
    if coll.bus_passes == 2:
        assert all(want[r] == total for r in members)


# --- the ranks, on tests/test_rank_program.py's in-memory network ----------------------

def test_ranks_on_a_fake_network_post_step_2_at_step_1s_arrival_under_on_arrival():
    """Ring of 4, 4 KB chunks at 1 MB/s (T = 4.096 ms each). Rank 0's step-0 message to
    rank 1 is held 10 ms, so it lands at T + 10 ms; rank 0's step 1 (posted at T, when
    step 0 came from rank 3) lands at 2T. On arrival rank 1 sends step 2 at 2T; in order
    at T + 10 ms, with step 1."""
    from tests.test_rank_program import IPS, RATE_BPS, FakeNet, rank_spec
    from types import SimpleNamespace
    from hosts.rank import RankProgram

    sent = {}
    for order in ORDERS:
        net = FakeNet()
        net.hold = {(IPS[0], 0): 0.010}
        records = []
        tele = SimpleNamespace(write=records.append)
        for r in range(4):
            net.programs[IPS[r]] = [RankProgram(net.nic(IPS[r]), rank_spec(r, order=order),
                                                0.0, tele, lambda: None)]
        net.run()
        sent[order] = {step: t for ip, step, t in net.sent if ip == IPS[1]}
        colls = [c for c in records if isinstance(c, CollectiveDone)]
        assert len(colls) == 4 and all(c.verified for c in colls), order
    t = 4096 * 8 / RATE_BPS
    assert sent[ON_ARRIVAL][2] == pytest.approx(2 * t)
    assert sent[IN_ORDER][2] == pytest.approx(t + 0.010)
    assert sent[ON_ARRIVAL][1] == sent[IN_ORDER][1] == pytest.approx(t + 0.010)


# --- the flow-level model, with times by hand --------------------------------------------

R = 8e6


def test_the_model_posts_step_2_at_step_1s_arrival_under_on_arrival():
    """4 leaves x 4 spines, one host each; a ring h0 -> h1 -> h2 -> h3 -> h0, every flow of
    sender i over spine i, alone on its links, a chunk time T at rate R; only rank 0's step
    0 goes over spine 1, whose uplink from leaf0 runs at R/4: it arrives at 4T. Rank 0's
    step 1, posted at T, shares h0's own uplink with it: 3R/4 until rank 0's step 2 joins
    at 2T, then 3R/8 for its last quarter: it arrives at 8T/3. Rank 1 sends step 2 at
    8T/3 on arrival, at 4T in order (with step 1)."""
    fab = leaf_spine(4, 4, 1, rate_bps=R, routing="ecmp")
    job = JobInput(job=1, algorithm="ring_allreduce", hosts=("h0", "h1", "h2", "h3"),
                   rings=((0, 1, 2, 3),), nbytes=4 * 16384)
    paths = {}
    for i in range(4):
        j = (i + 1) % 4
        for step in range(6):
            spine = 1 if (i, step) == (0, 0) else i
            paths[(1, 0, step, f"h{i}", f"h{j}")] = (f"h{i}", f"leaf{i}", f"spine{spine}",
                                                     f"leaf{j}", f"h{j}")
    slow = LinkEvent(0.0, "leaf0", "spine1", rate_bps=R / 4)
    starts = {}
    for order in ORDERS:
        res = simulate(fab, [replace(job, order=order)], paths=paths, link_events=[slow])
        starts[order] = {f.step: f.start_s for f in res.send_flows
                         if f.src_host == "h1"}
        wire_t = min(f.end_s - f.start_s for f in res.send_flows)
    t = wire_t
    assert starts[ON_ARRIVAL][2] == pytest.approx(8 * t / 3, rel=1e-9)
    assert starts[IN_ORDER][2] == pytest.approx(4 * t, rel=1e-9)
    assert starts[ON_ARRIVAL][1] == starts[IN_ORDER][1] == pytest.approx(4 * t, rel=1e-9)


@pytest.mark.parametrize("order", ORDERS)
def test_a_later_pass_from_a_faster_peer_waits_for_its_own_pass(order):
    """Three passes; rank 0's last message of pass 0 to rank 1 is held 30 ms, so rank 0
    (done with pass 0) sends pass 1's step 0 to rank 1 before rank 1's pass 0 can end:
    it waits, rank 1 starts pass 1 only after pass 0 ended, and every pass is exact."""
    from tests.test_rank_program import IPS, FakeNet, rank_spec
    from types import SimpleNamespace
    from hosts.rank import RankProgram

    net = FakeNet()
    net.hold = {(IPS[0], 5): 0.030}
    records = []
    tele = SimpleNamespace(write=records.append)
    for r in range(4):
        net.programs[IPS[r]] = [RankProgram(net.nic(IPS[r]), rank_spec(r, order=order,
                                                                        passes=3),
                                            0.0, tele, lambda: None)]
    net.run()
    colls = {(c.rank, c.pass_index): c for c in records if isinstance(c, CollectiveDone)}
    assert len(colls) == 12 and all(c.verified for c in colls.values())
    early = next(t for ip, step, t in net.sent if ip == IPS[0] and step == 6)
    assert early < colls[(1, 0)].end_s
    for r in range(4):
        for p in (1, 2):
            assert colls[(r, p)].start_s >= colls[(r, p - 1)].end_s
