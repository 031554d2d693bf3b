"""A lossless emulated switch's held egress queues (switch_agent/lossless.py) on a
two-into-one incast, every point computed by hand. The buffer is that of
tests/test_pfc_mmu.py:

    buffer 100000 B, 3 ports, headroom 10000 B and reserve 4096 B each, alpha 1/8,
    resume offset 3072 B, 1000-byte frames (986 B IP + the 14-byte L2 header), 10 Gb/s:
    one frame is 0.8 us on the wire; the qdisc lead is 2 frames.

Ports 11 and 12 (MMU ports 0 and 1) bring frames in turn toward port 13, one every
0.4 us. With port 13 paused by its far end from t = 0, nothing leaves: every frame
stays held, so the MMU sees what test_pfc_mmu's does -- XOFF out of port 11 at frame 19
(7.6 us), out of port 12 at frame 20 (8.0 us)."""

import math

import pytest

from runtime import pause, wire
from switch_agent.config import PfcParams
from switch_agent.lossless import LosslessPorts, headroom_for
from switch_agent.pipeline import PQ_HIGH_DSCP
from switch_agent.queue_model import L2_HEADER_BYTES, EgressQueue

PARAMS = PfcParams(buffer_bytes=100_000, headroom_bytes=10_000, alpha=0.125,
                   reserve_bytes=4096, resume_offset_bytes=3072, quanta=65535)
RATE = 10e9
FRAME = 1000
ARRIVAL_S = 0.4e-6
FRAME_S = FRAME * 8 / RATE
IN0, IN1, OUT = 11, 12, 13
FAR_MAC = bytes.fromhex("020000000099")


def packet(dscp: int = 0, opcode: int = wire.OP_SEND_ONLY, size: int = FRAME) -> bytearray:
    """An IP/UDP/BTH packet of ``size`` bytes on the wire (L2 header included)."""
    p = bytearray(size - L2_HEADER_BYTES)
    p[0], p[1], p[9] = 0x45, dscp << 2, 17
    p[22:24] = wire.ROCE_UDP_PORT.to_bytes(2, "big")
    p[28] = opcode
    return p


def switch() -> tuple[LosslessPorts, EgressQueue]:
    queues = {i: EgressQueue(RATE, 1 << 40) for i in (IN0, IN1, OUT)}
    ll = LosslessPorts(PARAMS, {i: (f"s1-eth{i}", q, RATE) for i, q in queues.items()},
                       lead_bytes=2 * FRAME)
    for i, port in ll.ports.items():
        port.mac = bytes([2, 0, 0, 0, 0, i])
    return ll, queues[OUT]


def send(ll: LosslessPorts, q: EgressQueue, pid: int, indev: int, t: float, **kw) -> None:
    """A packet as the agent hands it on: into the queue model (the pipeline), then held."""
    pkt = packet(**kw)
    q.enqueue(len(pkt) + L2_HEADER_BYTES, t)
    ll.arrive(pid.to_bytes(4, "big"), None, pkt, OUT, indev, t)


def far_end_pauses(ll: LosslessPorts, quanta: int, t: float) -> None:
    ll.on_pause_frame(OUT, pause.encode(FAR_MAC, {pause.DATA_PRIORITY: quanta}), t)


def released(ll: LosslessPorts) -> list[int]:
    out = [int.from_bytes(pid, "big") for pid, _ in ll.verdicts]
    ll.verdicts.clear()
    return out


def sent_frames(ll: LosslessPorts) -> list[tuple[int, int]]:
    """(port, quanta) of each PAUSE frame out, checked to decode as PFC from the port."""
    out = []
    for ifindex, frame in ll.frames:
        f = pause.decode(frame)
        assert f is not None and f.src_mac == ll.ports[ifindex].mac
        assert f.enabled == 1 << pause.DATA_PRIORITY
        out.append((ifindex, f.quanta[pause.DATA_PRIORITY]))
    ll.frames.clear()
    return out


def incast(ll, q, frames: int, first_pid: int = 1) -> None:
    for k in range(1, frames + 1):
        indev = IN0 if k % 2 else IN1
        assert ll.fits(indev, FRAME - L2_HEADER_BYTES)
        send(ll, q, first_pid + k - 1, indev, k * ARRIVAL_S)


def test_a_port_lets_two_frames_into_its_qdisc_and_the_next_when_one_has_left():
    """Three frames at t = 0: two go (the lead), the third waits 0.8 us for the first to
    leave the (model's) qdisc."""
    ll, q = switch()
    for pid in (1, 2, 3):
        send(ll, q, pid, IN0, 0.0)
    assert released(ll) == [1, 2]
    assert ll.wake == pytest.approx(FRAME_S, abs=2e-9)      # (+1 ns: past it)
    assert ll.due(FRAME_S / 2) == pytest.approx(FRAME_S, abs=2e-9)
    assert released(ll) == []
    assert math.isinf(ll.due(FRAME_S + 1e-9))
    assert released(ll) == [3]
    assert ll.held_packets() == 0 and ll.held_max == 1


def test_an_incast_into_a_paused_port_pauses_both_upstreams_where_the_mmu_says():
    ll, q = switch()
    far_end_pauses(ll, 65535, 0.0)
    incast(ll, q, 18)
    assert sent_frames(ll) == [] and released(ll) == []
    send(ll, q, 19, IN0, 19 * ARRIVAL_S)
    assert sent_frames(ll) == [(IN0, 65535)]
    send(ll, q, 20, IN1, 20 * ARRIVAL_S)
    assert sent_frames(ll) == [(IN1, 65535)]
    assert ll.held_packets() == ll.held_max == 20 and released(ll) == []
    # each XOFF is sent again at half its time, 65535 x 512 / 10 Gb/s / 2 = 1.678 ms on
    refresh_s = 65535 * 512 / RATE / 2
    ll.due(19 * ARRIVAL_S + refresh_s - 1e-9)
    assert sent_frames(ll) == []
    ll.due(20 * ARRIVAL_S + refresh_s)
    assert sent_frames(ll) == [(IN0, 65535), (IN1, 65535)]


def test_the_far_ends_xon_releases_the_held_frames_and_each_upstream_resumes_on_time():
    """XON into port 13 at 10 us: frames 1 and 2 go at once (the lead), frame k >= 3 at
    10 + (k - 2) x 0.8 us. As in test_pfc_mmu, port 0 may resume at its 3rd release
    (the 5th overall; s0 2904 + 3072 <= T 6363), port 1 at its 3rd (the 6th): XON out of
    port 11 at 12.4 us, out of port 12 at 13.2 us; they were paused 4.8 and 5.2 us."""
    ll, q = switch()
    far_end_pauses(ll, 65535, 0.0)
    incast(ll, q, 20)
    sent_frames(ll)
    far_end_pauses(ll, 0, 10e-6)
    assert released(ll) == [1, 2] and sent_frames(ll) == []
    xon = {}
    for k in range(3, 21):
        t = 10e-6 + (k - 2) * FRAME_S
        assert ll.wake == pytest.approx(t, abs=2e-9)
        ll.due(t + 1e-9)
        assert released(ll) == [k]
        for port, quanta in sent_frames(ll):
            assert quanta == 0
            xon[port] = k
    assert xon == {IN0: 5, IN1: 6}
    recs = {r.port: r for r in ll.records(20e-6)}
    assert recs["s1-eth13"].pauses_rx == 1 and recs["s1-eth13"].resumes_rx == 1
    assert recs["s1-eth13"].paused_s == pytest.approx(10e-6)
    for port, frames_in in (("s1-eth11", 10), ("s1-eth12", 10)):
        r = recs[port]
        assert (r.pauses_tx, r.resumes_tx, r.drops) == (1, 1, 0)
        assert r.max_ingress_bytes == frames_in * FRAME


def test_a_frame_beyond_the_headroom_is_dropped_and_counted():
    """Port 12 keeps sending into its headroom after its XOFF (an upstream that does not
    honour it): 10000 B of headroom hold its 20th frame and 9 more; the 10th is dropped."""
    ll, q = switch()
    far_end_pauses(ll, 65535, 0.0)
    incast(ll, q, 20)
    for k in range(9):
        assert ll.fits(IN1, FRAME - L2_HEADER_BYTES)
        send(ll, q, 100 + k, IN1, 9e-6 + k * 1e-7)
    assert not ll.fits(IN1, FRAME - L2_HEADER_BYTES)
    (r,) = [r for r in ll.records(20e-6) if r.port == "s1-eth12"]
    assert r.drops == 1 and r.max_ingress_bytes == 19 * FRAME


def test_pq_high_class_is_released_before_the_low():
    ll, q = switch()
    far_end_pauses(ll, 65535, 0.0)
    send(ll, q, 1, IN0, 1e-6)
    send(ll, q, 2, IN0, 2e-6, dscp=PQ_HIGH_DSCP)
    far_end_pauses(ll, 0, 5e-6)
    assert released(ll) == [2, 1]


def test_acks_and_cnps_are_never_held_nor_accounted():
    ll, q = switch()
    far_end_pauses(ll, 65535, 0.0)
    send(ll, q, 1, IN1, 1e-6, opcode=wire.OP_ACKNOWLEDGE, size=80)
    send(ll, q, 2, IN1, 2e-6, opcode=wire.OP_CNP, size=80)
    assert released(ll) == [1, 2]
    assert ll.mmu.ingress_bytes == [0, 0, 0] and ll.held_max == 0


def test_what_the_qdisc_held_when_the_pause_came_still_leaves():
    """Two frames in the qdisc, one held, when a PAUSE comes at t = 0: the two leave by
    1.6 us all the same, so at the XON (5 us) the held one goes at once."""
    ll, q = switch()
    for pid in (1, 2, 3):
        send(ll, q, pid, IN0, 0.0)
    assert released(ll) == [1, 2]
    far_end_pauses(ll, 65535, 0.0)
    assert q.backlog(5e-6) == pytest.approx(FRAME)
    far_end_pauses(ll, 0, 5e-6)
    assert released(ll) == [3]


def test_the_emulated_headroom_adds_the_lead_and_a_frame():
    assert headroom_for(PARAMS, 2 * FRAME, FRAME).headroom_bytes == 10_000 + 3 * FRAME
