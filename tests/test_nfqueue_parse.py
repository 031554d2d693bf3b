"""switch_agent/nfqueue.py's parser without root: a packet message as nfnetlink_queue
builds it (packet header, in and out device, timestamp, payload), read from a stand-in
socket -- the handler gets the payload and output interface, the verdict names the
packet, and the time the packet waited for the agent is measured from its timestamp."""

import socket
import struct
import time

import pytest

from switch_agent import nfqueue as nfq


def _attr(kind: int, data: bytes) -> bytes:
    n = 4 + len(data)
    return struct.pack("=HH", n, kind) + data + b"\0" * (-n & 3)


def _packet_message(pid: int, outdev: int, payload: bytes, stamp: float | None) -> bytes:
    attrs = (_attr(nfq.NFQA_PACKET_HDR, struct.pack("!IHB", pid, 0x0800, 1))
             + _attr(nfq.NFQA_IFINDEX_INDEV, struct.pack("!I", 2))
             + _attr(nfq.NFQA_IFINDEX_OUTDEV, struct.pack("!I", outdev)))
    if stamp is not None:
        sec = int(stamp)
        attrs += _attr(nfq.NFQA_TIMESTAMP, struct.pack("!QQ", sec, int((stamp - sec) * 1e6)))
    attrs += _attr(nfq.NFQA_PAYLOAD, payload)
    body = struct.pack("=BBH", socket.AF_INET, 0, socket.htons(0)) + attrs
    return struct.pack("=IHHII", 16 + len(body), nfq._PACKET_TYPE, 0, 0, 0) + body


class _Sock:
    def __init__(self, datagrams):
        self.datagrams, self.sent = list(datagrams), []

    def recv_into(self, buf):
        if not self.datagrams:
            raise BlockingIOError
        d = self.datagrams.pop(0)
        buf[:len(d)] = d
        return len(d)

    def send(self, data):
        self.sent.append(bytes(data))


def _queue(datagrams) -> nfq.NfQueue:
    q = object.__new__(nfq.NfQueue)                 # no netlink socket: the parser alone
    q.queue_num, q.sock = 0, _Sock(datagrams)
    q._buf = bytearray(0x10000 + 512)
    q._view = memoryview(q._buf)
    q._accept_prefix = b"A" * 28
    q._drop_prefix = b"D" * 28
    q.received = q.enobufs = 0
    q.held = [0, 0.0, 0.0]
    return q


def test_packets_reach_the_handler_with_their_port_and_their_wait_is_timed():
    now = time.time()
    msgs = [_packet_message(7, 5, b"first payload", now - 0.25),
            _packet_message(8, 6, b"second", now - 0.05),
            _packet_message(9, 5, b"no stamp", None)]
    q = _queue([b"".join(msgs)])                    # one datagram, three messages
    seen = []
    assert q.process(lambda p, dev: seen.append((bytes(p), dev))) == 3
    assert seen == [(b"first payload", 5), (b"second", 6), (b"no stamp", 5)]
    (verdicts,) = q.sock.sent                       # all three in one send, in order
    assert verdicts == b"".join(b"A" * 28 + struct.pack("!I", pid) for pid in (7, 8, 9))
    h = q.hold_stats()
    assert h["held_packets"] == 2                   # the unstamped one is not timed
    # microsecond stamps, and a few ms for this test to run
    assert h["held_max_s"] == pytest.approx(0.25, abs=0.02)
    assert h["held_mean_s"] == pytest.approx(0.15, abs=0.02)


def test_no_stamped_packet_gives_no_hold_time():
    q = _queue([_packet_message(1, 3, b"x", None)])
    q.process(lambda p, dev: None)
    assert q.hold_stats() == {"held_packets": 0, "held_mean_s": None, "held_max_s": None}


def test_a_held_packet_gets_its_verdict_later_and_the_handler_sees_its_input_port():
    """A lossless port's agent (switch_agent/lossless.py): ``hold`` hands the handler the
    input interface and the packet id; HOLD gives no verdict now, send_verdicts later."""
    msgs = [_packet_message(pid, 5, b"p%d" % pid, None) for pid in (7, 8, 9)]
    q = _queue([b"".join(msgs)])
    seen, kept = [], []

    def handler(payload, outdev, now, indev, pid):
        seen.append((bytes(payload), outdev, indev))
        if bytes(payload) == b"p8":
            kept.append(bytes(pid))
            return nfq.HOLD
        return None

    assert q.process(handler, clock=lambda: 1.0, hold=True) == 3
    assert seen == [(b"p7", 5, 2), (b"p8", 5, 2), (b"p9", 5, 2)]
    assert q.sock.sent == [b"A" * 28 + struct.pack("!I", 7) + b"A" * 28 + struct.pack("!I", 9)]
    assert kept == [struct.pack("!I", 8)]
    q.send_verdicts([(kept[0], b"")])
    assert q.sock.sent[1] == b"D" * 28 + struct.pack("!I", 8)


def test_with_a_clock_and_no_hold_the_handler_gets_payload_port_and_time():
    """The drop-tail agent's call (stamped packets: the hold statistics are kept too)."""
    q = _queue([_packet_message(3, 4, b"x", time.time() - 0.01)])
    seen = []
    assert q.process(lambda p, dev, now: seen.append((bytes(p), dev, now)), clock=lambda: 2.0) == 1
    assert seen == [(b"x", 4, 2.0)]
    assert q.sock.sent == [b"A" * 28 + struct.pack("!I", 3)]
