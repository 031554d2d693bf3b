"""The ring layouts (emulator/spec/rings.py) and their spec checks: ``blocks`` is the paper's
Table 1 "8 x 4" read as four rings of eight, two hosts of every leaf each; pure, no root."""

import os

import pytest

from emulator.spec import rings
from emulator.plan import layout as layout_mod
from emulator.spec import load
from tests.toml_util import assert_spec_error

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER = os.path.join(MAIN, "runs", "table1-paper.toml")


def hosts(n):
    return [f"h{i}" for i in range(n)]


def test_blocks_of_eight_on_4_leaves_of_8_take_hosts_2r_and_2r_plus_1_of_every_leaf():
    got = rings.rings(hosts(32), 8, "blocks", 8)
    assert got[0] == (0, 1, 8, 9, 16, 17, 24, 25)
    assert got[3] == (6, 7, 14, 15, 22, 23, 30, 31)
    assert sorted(r for ring in got for r in ring) == list(range(32))   # each host once


def test_half_of_a_block_rings_hops_cross_the_spines():
    ring = rings.rings(hosts(32), 8, "blocks", 8)[1]
    leaf = [rings.leaf_of(f"h{r}", 8) for r in ring]
    crossing = sum(leaf[i] != leaf[(i + 1) % len(ring)] for i in range(len(ring)))
    assert crossing == 4                       # 4 of its 8 hops, the rail layout's: all 4


def test_blocks_with_one_host_per_leaf_is_the_rail_layout():
    assert rings.rings(hosts(16), 4, "blocks", 4) == rings.rings(hosts(16), 4, "rail")


def test_blocks_of_a_listed_subset_use_the_subsets_hosts_of_each_leaf():
    # two leaves of 4; the job has h0, h1 (leaf 0) and h4, h5 (leaf 1): one ring of 4
    assert rings.rings(["h0", "h1", "h4", "h5"], 4, "blocks", 4) == ((0, 1, 2, 3),)


@pytest.mark.parametrize("ring_size,why", [
    (None, "needs ring_size"), (6, "multiple of the job's 4 leaves"),
    (12, "a multiple of 3"), (True, "needs ring_size")])
def test_a_ring_size_that_does_not_divide_the_leaves_says_so(ring_size, why):
    with pytest.raises(ValueError, match=why):
        rings.rings(hosts(32), 8, "blocks", ring_size)


def test_the_paper_spec_is_4_rings_of_8_with_14_steps_and_its_lockstep_bound():
    spec = load(PAPER)
    lay = layout_mod.layout(spec.jobs[0], spec.topology, lambda s: s * 1000)
    assert len(lay.rings) == 4 and lay.ring_size == 8 and lay.steps == 14
    assert lay.passes == 12 and lay.nbytes == 262144 * 8
    # 14 steps of one 256 KB chunk (64 frames of 4 KB + framing) at 10 Mbit/s
    frame = 4096 + 20 + 8 + 12 + 4 + 14
    assert layout_mod.theoretical_cct_s(lay, 10e6, 4096) == pytest.approx(14 * 64 * frame * 8 / 10e6)


def test_the_spec_names_the_key_and_value_of_a_bad_ring_size():
    assert_spec_error(PAPER, "jobs[0].ring_size", "6", "multiple of the job's 4 leaves",
                      overrides=["jobs.0.ring_size=6"])
    assert_spec_error(PAPER, "jobs[0].ring_size", "blocks\" only",
                      overrides=['jobs.0.rings="rail"'])
    assert_spec_error(PAPER, "jobs[0].ring_size", "grid algorithm",
                      overrides=['jobs.0.algorithm="ring2d_allreduce"', "jobs.0.grid=[4, 8]"])


def test_a_block_rings_schedule_sends_to_the_next_host_in_leaf_order_at_every_step():
    """Who sends to whom: at each of the 14 steps every rank of ring 1 (h2, h3, h10, h11,
    ...) sends its step's chunk to its ring successor and receives from its predecessor;
    4 of the ring's 8 flows cross the spines at every step (h3 -> h10, h11 -> h18,
    h19 -> h26, h27 -> h2); the chunk each sends is the one it received a step before."""
    from hosts.collectives import collective
    ring = rings.rings(hosts(32), 8, "blocks", 8)[1]
    assert ring == (2, 3, 10, 11, 18, 19, 26, 27)
    nbytes = 8 * 4096
    sched = {r: collective("ring_allreduce").schedule(ring, r, nbytes, 4) for r in ring}
    for s in range(14):
        sends = {}
        for pos, r in enumerate(ring):
            st = sched[r].steps[s]
            assert st.step == s
            assert ring[st.send_to] == ring[(pos + 1) % 8]
            assert ring[st.recv_from] == ring[pos - 1]
            sends[r] = ring[st.send_to]
        crossing = {(a, b) for a, b in sends.items()
                    if rings.leaf_of(f"h{a}", 8) != rings.leaf_of(f"h{b}", 8)}
        assert crossing == {(3, 10), (11, 18), (19, 26), (27, 2)}
        if s:
            for pos, r in enumerate(ring):        # forwards what it got from its predecessor
                assert sched[r].steps[s].send_range == sched[r].steps[s - 1].recv_range


def test_the_two_leaf_counterpoint_puts_2_of_each_rings_8_hops_on_the_spines():
    spec = load(os.path.join(MAIN, "runs", "table1-two-leaf.toml"))
    assert len(spec.jobs) == 4 and sorted(h for j in spec.jobs for h in j.hosts) == \
        sorted(hosts(32))
    for job in spec.jobs:
        ring = list(job.hosts)
        leaf = [rings.leaf_of(h, 8) for h in ring]
        assert len(set(leaf)) == 2
        assert sum(leaf[i] != leaf[(i + 1) % 8] for i in range(8)) == 2
