"""hosts.rank's programs without a network: four ranks of one ring on an in-memory NIC with
a virtual clock (each message arrives ``nbytes / rate`` after it was sent), so the order
of collectives, their ready times and the results are checked exactly."""

import heapq
from types import SimpleNamespace

import pytest

from emulator.spec import workloads
from hosts.config import RankConfig
from hosts.rank import RankProgram, link_after
from runtime.records import CollectiveDone
from runtime.scale import Scale

RATE_BPS = 8e6                   # 1 MB/s: a 4 KB chunk takes 4 ms
IPS = {r: f"10.0.{r}.2" for r in range(4)}


class FakeNet:
    def __init__(self):
        self.now = 0.0
        self.events = []             # (time, seq, dst ip, flow, message, on_complete)
        self.seq = 0
        self.programs = {}
        self.hold = {}               # (sender ip, wire step) -> extra seconds in flight
        self.sent = []               # (sender ip, wire step, time posted)

    def nic(self, ip):
        net = self

        class Nic:
            def send(self, peer, job, channel, step, data, on_complete=None):
                net.seq += 1
                net.sent.append((ip, step, net.now))
                flow = SimpleNamespace(job=job, channel=channel, step=step, peer=ip)
                t = net.now + len(data) * 8 / RATE_BPS + net.hold.get((ip, step), 0.0)
                heapq.heappush(net.events, (t, net.seq, peer, flow, bytes(data), on_complete))
        return Nic()

    def run(self, until_s=1e4):
        progs = [p for ps in self.programs.values() for p in ps]
        while not all(p.done for p in progs):
            nxt = [t for p in progs if (t := p.next_event()) is not None]
            if self.events:
                nxt.append(self.events[0][0])
            assert nxt, "stuck: nothing in flight and nothing scheduled"
            self.now = max(self.now, min(nxt))
            assert self.now < until_s
            for p in progs:
                p.tick(self.now)
            while self.events and self.events[0][0] <= self.now:
                _, _, dst, flow, msg, done = heapq.heappop(self.events)
                assert any(p.on_message(flow, msg, self.now) for p in self.programs[dst])
                if done:
                    done(flow)


def rank_spec(r, job=3, **kw):
    program = kw.pop("program", None)
    return RankConfig(**{"job": job, "rank": r, "algorithm": "ring_allreduce",
                         "group": (0, 1, 2, 3), "channel": 0, "rank_ips": dict(IPS),
                         "nbytes": 16384, "passes": 1, "compute_gap_s": 0.0, "start_s": 0.0,
                         "steps_per_collective": 6, "seed": 7,
                         "program": tuple(map(tuple, program)) if program else None, **kw})


def run_ring(*jobs):
    """Run job specs (a list of keyword sets each) on the same four hosts."""
    net = FakeNet()
    records = []
    tele = SimpleNamespace(write=records.append)
    for r in range(4):
        nic = net.nic(IPS[r])
        net.programs[IPS[r]] = [RankProgram(nic, rank_spec(r, **kw), 0.0, tele, lambda: None)
                                for kw in jobs]
        link_after(net.programs[IPS[r]])
    net.run()
    return sorted((r for r in records if isinstance(r, CollectiveDone)),
                  key=lambda r: (r.job, r.pass_index, r.rank))


def ring_of_four(program=None, nbytes=16384, passes=1, compute_gap_s=0.0):
    return run_ring(dict(program=program, nbytes=nbytes, passes=passes,
                         compute_gap_s=compute_gap_s))


def per_pass(colls):
    out = {}
    for c in colls:
        out.setdefault(c.pass_index, []).append(c)
    return [(min(c.start_s for c in cs), max(c.end_s for c in cs), cs)
            for _, cs in sorted(out.items())]


def test_passes_with_a_compute_gap_start_the_gap_after_the_previous_end():
    passes = per_pass(ring_of_four(passes=3, compute_gap_s=0.5))
    assert all(c.verified for _, _, cs in passes for c in cs)
    for (_, end, _), (start, _, _) in zip(passes, passes[1:]):
        assert start == pytest.approx(end + 0.5, abs=0.02)


def test_a_program_runs_each_collective_with_its_own_size_and_checks_it():
    program = [[16384, 0.0, True], [4096, 0.0, False], [65536, 0.0, False]]
    colls = ring_of_four(program)
    assert [c.nbytes for c in colls[::4]] == [16384, 4096, 65536]
    assert len(colls) == 12 and all(c.verified for c in colls)


def test_a_program_waits_for_ready_times_from_its_iterations_start():
    # One collective takes 6 x 4 ms = 24.6 ms here. Iteration = [bucket ready 1.0 s after
    # the iteration began, bucket ready at 1.01 s]: the second is ready while the first
    # is still being reduced, so it waits for it; then one ready 0.1 s after the start.
    program = [[16384, 1.0, True], [16384, 1.01, False], [16384, 1.1, False]] * 2
    passes = per_pass(ring_of_four(program))
    assert passes[0][1] - passes[0][0] == pytest.approx(0.0246, abs=1e-3)
    assert passes[0][0] == pytest.approx(1.0)
    assert passes[1][0] == pytest.approx(passes[0][1])           # queued behind bucket 0
    assert passes[2][0] == pytest.approx(1.1)                    # ready after 1 ended
    end_of_iteration = passes[2][1]
    assert passes[3][0] == pytest.approx(end_of_iteration + 1.0)  # compute again
    assert passes[4][0] == pytest.approx(passes[3][1])
    assert passes[5][0] == pytest.approx(end_of_iteration + 1.1)


def test_workload_program_of_vgg16_runs_and_verifies_on_the_fake_ring():
    prog = workloads.program("vgg16", 1, 1 / 4096, 25 * 2**20, 1.0, Scale(2000).time_s, 16)
    colls = ring_of_four([[c.nbytes, c.ready_s, c.begins_iteration] for c in prog])
    assert len(colls) == 4 * len(prog) and all(c.verified for c in colls)
    starts = [s for s, _, _ in per_pass(colls)]
    assert starts[0] == pytest.approx(prog[0].ready_s)


def test_a_job_after_another_starts_on_each_host_when_its_predecessor_ended_there():
    colls = run_ring(dict(job=3, passes=2), dict(job=4, after_job=3, start_s=0.3, passes=1))
    assert len(colls) == 12 and all(c.verified for c in colls)
    for r in range(4):
        end3 = max(c.end_s for c in colls if c.job == 3 and c.rank == r)
        start4 = next(c.start_s for c in colls if c.job == 4 and c.rank == r)
        assert start4 == pytest.approx(end3 + 0.3)


def test_a_job_after_a_job_missing_on_the_host_is_refused():
    with pytest.raises(SystemExit, match="runs after job 9, which has no rank on this host"):
        run_ring(dict(job=4, after_job=9))


def test_a_program_with_in_flight_runs_ready_collectives_at_once_up_to_its_limit():
    # Three buckets ready together at 1.0 s, then an iteration of one bucket ready 0.1 s
    # after it began. One collective takes 24.6 ms on the fake ring (messages do not share
    # a link there), so concurrent ones end together.
    program = [[16384, 1.0, True], [16384, 1.0, False], [16384, 1.0, False],
               [16384, 0.1, True]]
    one = 0.0246
    at_once = per_pass(run_ring(dict(program=program, in_flight=0)))
    assert [s for s, _, _ in at_once[:3]] == pytest.approx([1.0] * 3)
    assert [e for _, e, _ in at_once[:3]] == pytest.approx([1.0 + one] * 3, abs=1e-3)
    # the next iteration begins once all three ended (the optimizer's step)
    assert at_once[3][0] == pytest.approx(max(e for _, e, _ in at_once[:3]) + 0.1)
    two = per_pass(run_ring(dict(program=program, in_flight=2)))
    assert [s for s, _, _ in two[:3]] == pytest.approx([1.0, 1.0, two[0][1]])
    seq = per_pass(run_ring(dict(program=program)))                # in_flight = 1
    assert [s for s, _, _ in seq[1:3]] == pytest.approx([seq[0][1], seq[1][1]])
    for passes in (at_once, two, seq):
        assert len(passes) == 4 and all(c.verified for _, _, cs in passes for c in cs)


def test_in_flight_below_zero_is_refused():
    with pytest.raises(ValueError, match=r"in_flight must be >= 0 \(0: no limit\), got -1"):
        rank_spec(0, in_flight=-1)
