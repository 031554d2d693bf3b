"""switch_agent.schemes through the pipeline: each scheme is one object behind one hook,
picked by name; what it does to real RoCEv2 packets (marks, DSCP, counters), no root."""

import random

import pytest

from runtime import wire
from switch_agent.config import RedParams, SymphonyParams
from switch_agent.pipeline import PQ_HIGH_DSCP, Port, SwitchPipeline
from switch_agent.queue_model import EgressQueue
from switch_agent.schemes import SWITCH_SCHEMES, StepPriority, SwitchScheme, SymphonyMarking
from switch_agent.symphony import SymphonyTracker

PORT = 7
RED_OFF = RedParams(False, 50_000, 100_000, 0.2)


def pipeline(scheme: str, tracking: str = "job", k: float = 1.0) -> SwitchPipeline:
    # A port fast enough that no queue builds: only the scheme can mark.
    ports = {PORT: Port("p", EgressQueue(1e12, 1 << 20))}
    tracker = SymphonyTracker(SymphonyParams(t_win_s=1.0, k=k, n_warmup=0, tracking=tracking))
    return SwitchPipeline(ports, RED_OFF, tracker, random.Random(1).random, scheme=scheme,
                          tracking=tracking)


def packet(step: int, psn: int, *, job: int = 1, channel: int = 0, last: bool = False):
    op = wire.OP_SEND_LAST if last else wire.OP_SEND_MIDDLE
    udp = wire.with_icrc("10.0.0.2", "10.0.1.2", 50000,
                         wire.build_data(job, channel, step, psn, op, b"x" * 64))
    return wire.build_ip_packet("10.0.0.2", "10.0.1.2", 50000, udp)


def feed(pipe, pkts, now=0.0):
    return [pipe.handle(p, PORT, now) for p in pkts]


def test_the_registry_maps_each_name_to_its_class():
    assert {n: c for n, c in SWITCH_SCHEMES.items()} == {"baseline": SwitchScheme,
                                                  "symphony": SymphonyMarking,
                                                  "pq": StepPriority}
    with pytest.raises(ValueError, match="unknown scheme 'ecmp'; allowed: baseline, symphony, pq"):
        pipeline("baseline").set_scheme("ecmp")


def _lag_then_ahead(n=200):
    # step 5 is the slowest (psn_rec grows to 49), then step 6 packets run ahead
    return [packet(5, psn) for psn in range(50)] + [packet(6, psn) for psn in range(n)]


def test_baseline_never_marks_or_prioritizes_without_congestion():
    pipe = pipeline("baseline")
    out = feed(pipe, _lag_then_ahead())
    assert out == [None] * 250
    c = pipe.totals()["total"]
    assert c["marks_symphony"] == c["marks_red"] == c["pq_high"] == 0


def test_symphony_marks_only_the_steps_that_run_ahead():
    pipe = pipeline("symphony", k=1.0)           # P = min(1, psn / psn_rec): 1 past psn 49
    out = feed(pipe, _lag_then_ahead())
    assert all(o is None for o in out[:50])                       # step_min's own: never
    marked = [o for o in out[50:] if o is not None]
    assert len(marked) >= 150                                     # psn >= 49: always marked
    assert all(wire.parse_ip_roce(bytes(o)).ecn == wire.ECN_CE for o in marked)
    assert pipe.totals()["total"]["marks_symphony"] == len(marked)


def test_pq_sends_lagging_packets_to_the_high_class_and_marks_nothing():
    pipe = pipeline("pq")
    out = feed(pipe, _lag_then_ahead(50))
    high = [o for o in out if o is not None]
    assert len(high) == 50                                        # the 50 step-5 packets
    assert all(wire.parse_ip_roce(bytes(o)).ecn == wire.ECN_ECT0 for o in high)
    assert all(o[1] >> 2 == PQ_HIGH_DSCP for o in high)
    assert out[50:] == [None] * 50
    assert pipe.totals()["total"]["pq_high"] == 50


def test_switching_symphony_on_at_run_time_starts_from_fresh_state():
    pipe = pipeline("baseline")
    feed(pipe, [packet(3, psn) for psn in range(20)])
    pipe.set_symphony(True)
    assert pipe.symphony_enabled and pipe.tracker.jobs == {}
    pipe.set_symphony(False)
    assert pipe.scheme.name == "baseline"


def test_tracking_per_ring_keeps_one_state_per_job_and_channel():
    per_job, per_ring = pipeline("symphony", "job"), pipeline("symphony", "ring")
    pkts = ([packet(5, psn, channel=0) for psn in range(50)]
            + [packet(9, psn, channel=1) for psn in range(50)])
    out_job, out_ring = feed(per_job, pkts), feed(per_ring, pkts)
    # per job, ring 1's step 9 runs ahead of ring 0's step 5 and is marked
    assert sum(o is not None for o in out_job[50:]) > 15           # ~ sum(psn / 49) = 25
    # per ring, each ring has its own step_min: ring 1 is its own slowest, never marked
    assert out_ring == [None] * 100
    assert set(per_ring.tracker.jobs) == {(1, 0), (1, 1)}
    assert set(per_job.tracker.jobs) == {1}


def test_the_pipeline_records_each_flows_egress_port_from_its_first_packet():
    pipe = pipeline("baseline")
    feed(pipe, [packet(5, psn) for psn in range(3)] + [packet(6, 0, channel=2)])
    src_dst = bytes([10, 0, 0, 2, 10, 0, 1, 2])
    assert pipe.flow_ports == {(1, 0, 5, src_dst): "p", (1, 2, 6, src_dst): "p"}


@pytest.mark.parametrize("shared", [False, True])
def test_a_port_whose_classes_share_one_buffer_drops_what_overflows_it(shared):
    # A pq port is two kernel FIFOs of the buffer's size each: without the agent's own
    # drop it would hold twice the buffer. 10 frames offered at once into 4 frames' room:
    # the model keeps 4 and the agent drops the other 6 itself (only on a shared port;
    # on a FIFO port the kernel's own FIFO drops them and the agent leaves them be).
    frame = packet(5, 0)
    room = 4 * (len(frame) + 14)
    port = Port("p", EgressQueue(1e6, room), shared_buffer=shared)
    pipe = SwitchPipeline({PORT: port}, RED_OFF,
                          SymphonyTracker(SymphonyParams(t_win_s=1.0, n_warmup=0)),
                          random.Random(1).random, scheme="pq")
    out = [pipe.handle(packet(5, psn), PORT, 0.0) for psn in range(10)]
    assert [v == b"" for v in out] == [False] * 4 + [shared] * 6
    assert pipe.totals()["total"]["model_drops"] == 6
    assert port.queue.backlog(0.0) == pytest.approx(room)


@pytest.mark.parametrize("tracking", ["job", "ring"])
def test_a_closed_window_names_its_job_and_under_per_ring_tracking_its_ring(tracking):
    from runtime.records import decode, encode
    windows = []
    ports = {PORT: Port("p", EgressQueue(1e12, 1 << 20))}
    tracker = SymphonyTracker(SymphonyParams(t_win_s=1.0, k=1.0, n_warmup=0, tracking=tracking))
    pipe = SwitchPipeline(ports, RED_OFF, tracker, random.Random(1).random, scheme="symphony",
                          tracking=tracking, on_window=windows.append)
    for now in (0.0, 2.5):                     # the second round closes the first windows
        feed(pipe, [packet(5, psn, channel=ch) for ch in (0, 1) for psn in range(3)], now)
    keys = {(w.job, w.ring) for w in windows}
    assert keys == ({(1, 0), (1, 1)} if tracking == "ring" else {(1, None)})
    assert all(isinstance(w.job, int) for w in windows)
    assert [decode(encode(w)) for w in windows] == windows      # as a run folder reads it back


@pytest.mark.parametrize("per_class, marked", [(True, False), (False, True)])
def test_pq_red_per_class_marks_a_lagging_packet_on_its_own_class_backlog(per_class, marked):
    # A port whose low class holds 20 frames of the step running ahead (over kmax) and whose
    # high class holds one lagging frame: a second lagging frame finds 2 frames in its class
    # (under kmin). HPCC's ns-3 marks on the class's queue, so it passes unmarked; on the
    # port's whole queue (per_class = false) it is marked for the other class's backlog.
    frame = len(packet(5, 0)) + 14
    red = RedParams(True, 3 * frame, 6 * frame, 1.0, per_class=per_class)
    port = Port("p", EgressQueue(1e6, 1 << 20))
    pipe = SwitchPipeline({PORT: port}, red,
                          SymphonyTracker(SymphonyParams(t_win_s=1.0, n_warmup=0)),
                          random.Random(1).random, scheme="pq")
    pipe.handle(packet(5, 0), PORT, 0.0)                      # step_min = 5: high
    for psn in range(20):
        pipe.handle(packet(6, psn), PORT, 0.0)                # ahead: the low class
    out = pipe.handle(packet(5, 1), PORT, 0.0)
    assert out[1] >> 2 == PQ_HIGH_DSCP                        # the high class either way
    assert (wire.parse_ip_roce(bytes(out)).ecn == wire.ECN_CE) is marked
    assert port.queue.q_high == pytest.approx(2 * frame if per_class else 0)


def test_red_per_class_leaves_single_class_schemes_as_they_were():
    frame = len(packet(5, 0)) + 14
    outs = {}
    for per_class in (True, False):
        red = RedParams(True, 3 * frame, 6 * frame, 0.5, per_class=per_class)
        pipe = SwitchPipeline({PORT: Port("p", EgressQueue(1e6, 1 << 20))}, red,
                              SymphonyTracker(SymphonyParams(t_win_s=1.0, n_warmup=0, k=0.5)),
                              random.Random(3).random, scheme="symphony")
        outs[per_class] = [None if o is None else bytes(o) for o in feed(pipe, _lag_then_ahead())]
    assert outs[True] == outs[False]
    assert sum(o is not None for o in outs[True]) > 50        # RED and Symphony both marked


@pytest.mark.parametrize("rate_bps", [1e12, 1e3])
def test_symphony_with_a_minimum_queue_marks_only_where_packets_queue(rate_bps):
    # symphony.mark_min_queue_bytes (an option; 0 is the paper's rule): on a port where
    # nothing queues the steps that run ahead go unmarked; where the backlog reaches it,
    # they are marked as before
    frame = len(packet(6, 0)) + 14
    tracker = SymphonyTracker(SymphonyParams(t_win_s=1.0, k=1.0, n_warmup=0))
    pipe = SwitchPipeline({PORT: Port("p", EgressQueue(rate_bps, 1 << 20))}, RED_OFF, tracker,
                          random.Random(1).random, scheme="symphony",
                          mark_min_queue_bytes=2 * frame)
    out = [pipe.handle(p, PORT, i * 1e-3) for i, p in enumerate(_lag_then_ahead())]
    marked = sum(o is not None for o in out[50:])
    if rate_bps > 1e9:                       # drains at once: never two frames waiting
        assert marked == 0 and pipe.totals()["total"]["marks_symphony"] == 0
    else:                                    # everything waits: marked as without the option
        assert marked == sum(o is not None for o in feed(pipeline("symphony"),
                                                          _lag_then_ahead())[50:]) >= 150


def test_a_minimum_queue_for_symphony_is_bytes_in_range():
    with pytest.raises(ValueError, match="mark_min_queue_bytes"):
        SymphonyParams(t_win_s=1.0, mark_min_queue_bytes=-1)
    with pytest.raises(ValueError, match="mark_min_queue_bytes"):
        SymphonyParams(t_win_s=1.0, mark_min_queue_bytes=1.5)
