"""Which RoCE packets the switch tracks as a job's (no root).

Only a P_Key of the form ``0x8000 | job`` (full-member bit set, job 1..32766) names a job
(docs/architecture.md §2). Any other RoCE data — P_Key 0, 0xFFFF (InfiniBand's default
partition), a key without the full-member bit — is forwarded untouched and counted as
foreign: no Symphony state, no marks, no fault drops, even on a port where every job
packet is marked.
"""

import pytest

from runtime import wire
from switch_agent.config import RedParams, SymphonyParams
from switch_agent.pipeline import Port, SwitchPipeline
from switch_agent.queue_model import EgressQueue
from switch_agent.symphony import SymphonyTracker

PORT = 3
SRC, DST = "10.0.0.2", "10.0.1.2"
N = 200
# every job packet marked: RED at any queue (kmin 0, pmax 1) and Symphony with k = 1
MARK_ALL_RED = RedParams(True, 0, 1, 1.0)
SYMPHONY = SymphonyParams(t_win_s=1.0, k=1.0, n_warmup=0)


def packet(pkey: int, step: int, psn: int) -> bytes:
    body = (wire.build_bth(wire.OP_SEND_MIDDLE, pkey, wire.dest_qp(0, step), psn)
            + bytes(64))
    return wire.build_ip_packet(SRC, DST, 50000, wire.with_icrc(SRC, DST, 50000, body))


def pipeline(red=MARK_ALL_RED, drop_fraction=0.0) -> SwitchPipeline:
    return SwitchPipeline({PORT: Port("p", EgressQueue(1e9, 1 << 30))}, red,
                          SymphonyTracker(SYMPHONY), lambda: 0.0, scheme="symphony",
                          drop_fraction=drop_fraction)


def send_two_steps(pipe, pkey):
    """A lagging step 0 (psn 1..N) and an outpacing step 1: with k = 1 Symphony marks
    every step-1 packet of a job; returns the verdicts."""
    out = []
    for psn in range(1, N + 1):
        out.append(pipe.handle(packet(pkey, 0, psn), PORT, psn * 1e-4))
        out.append(pipe.handle(packet(pkey, 1, psn + 5), PORT, psn * 1e-4))
    return out


@pytest.mark.parametrize("pkey", [0x0000, 0xFFFF, 0x0005, 0x7FFF, 0x8000],
                         ids=["zero", "default-0xffff", "no-full-member-bit", "0x7fff",
                              "job-0"])
def test_roce_of_no_job_is_forwarded_untouched_and_counted_foreign(pkey):
    pipe = pipeline(drop_fraction=1.0)          # would drop every job packet
    verdicts = send_two_steps(pipe, pkey)
    assert verdicts == [None] * (2 * N)          # accepted unchanged: no drop, no CE
    c = pipe.ports[PORT].counters
    assert (c.pkts, c.foreign_pkts, c.roce_pkts, c.other_pkts) == (2 * N, 2 * N, 0, 0)
    assert (c.marks_red, c.marks_symphony, c.marks_both, c.fault_drops) == (0, 0, 0, 0)
    assert pipe.tracker.jobs == {} and pipe.flow_ports == {}
    assert pipe.totals()["total"]["foreign_pkts"] == 2 * N
    assert pipe.ports[PORT].queue.enqueued_pkts == 2 * N     # it still occupies the queue


@pytest.mark.parametrize("job", [1, 300, wire.MAX_JOB])
def test_a_ranks_own_pkey_is_tracked_as_its_job(job):
    pipe = pipeline(red=RedParams(enabled=False))
    assert wire.pkey_of(job) == 0x8000 | job       # what hosts.nic puts on the wire
    verdicts = send_two_steps(pipe, wire.pkey_of(job))
    c = pipe.ports[PORT].counters
    assert (c.roce_pkts, c.foreign_pkts) == (2 * N, 0)
    assert list(pipe.tracker.jobs) == [job]
    assert pipe.tracker.state(job)[0] == 0                   # step_min: the lagging step
    # Symphony marks step 1 (outpacing) once psn_rec > n_warmup: all N of them, k = 1
    assert c.marks_symphony == N and sum(v is not None for v in verdicts[1::2]) == N
    assert all(v is None for v in verdicts[0::2])


def test_foreign_and_job_packets_on_one_port_are_counted_apart():
    pipe = pipeline(red=RedParams(enabled=False))
    send_two_steps(pipe, 0xFFFF)
    send_two_steps(pipe, wire.pkey_of(2))
    c = pipe.ports[PORT].counters
    assert (c.pkts, c.roce_pkts, c.foreign_pkts) == (4 * N, 2 * N, 2 * N)
    assert list(pipe.tracker.jobs) == [2] and c.marks_symphony == N


@pytest.mark.parametrize("pkey, job", [(0x8001, 1), (0xFFFE, 0x7FFE), (0xFFFF, 0), (0, 0),
                                       (0x7FFF, 0), (0x8000, 0)])
def test_parse_ip_roce_gives_the_job_of_job_of(pkey, job):
    assert wire.parse_ip_roce(packet(pkey, 0, 1)).job == wire.job_of(pkey) == job
