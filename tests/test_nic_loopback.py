"""The NIC's hot path without root: frames built into a reused buffer are the wire
format's bytes, two NICs on loopback addresses move a message byte-exact at the line
rate they pace, and an idle sender sleeps until its retransmission timeout (no
polling) -- docs/architecture.md §3.1, §3.3."""

import os
import threading
import time

import pytest

from hosts.cc import CcConfig
from hosts.config import TransportParams
from hosts.flows import WIRE_EXTRA_BYTES
from hosts.nic import Nic
from runtime import wire
from runtime.scale import Scale

SCALE = Scale(500)                     # 10 Gb/s at D = 500: 20 Mb/s
CC = CcConfig.default("none", 10e9, SCALE)
RATE = CC.params.line_rate_bps
TRANSPORT = TransportParams(rto_s=0.2, nak_timeout_s=0.05)
# loopback addresses of this process's own (any 127/8 address binds without root)
_NET = f"127.{90 + (os.getpid() >> 16 & 7)}.{os.getpid() >> 8 & 255}"
A, B = f"{_NET}.{(os.getpid() % 127) * 2 + 1}", f"{_NET}.{(os.getpid() % 127) * 2 + 2}"


@pytest.mark.parametrize("nbytes", [1, 3, 4094, 4096])
@pytest.mark.parametrize("psn,ackreq", [(0, False), (77, True), (0xFFFFFF, False)])
def test_frame_built_in_place_is_with_icrc_of_build_data(nbytes, psn, ackreq):
    payload = bytes((i * 7) & 255 for i in range(nbytes))
    op = wire.OP_SEND_MIDDLE if not ackreq else wire.OP_SEND_LAST
    want = wire.with_icrc(A, B, 50000, wire.build_data(3, 2, 9, psn, op, payload, ackreq=ackreq))
    buf = bytearray(b"\xaa" * 5000)            # stale bytes from an earlier, longer frame
    seed = wire.icrc_seed(wire.socket.inet_aton(A), wire.socket.inet_aton(B), 50000,
                          wire.ROCE_UDP_PORT, wire.UDP_HEADER_BYTES + len(want))
    n = wire.data_frame_into(buf, seed, op, wire.pkey_of(3), wire.dest_qp(2, 9), psn,
                             memoryview(payload), ackreq=ackreq)
    assert bytes(buf[:n]) == want
    assert wire.verify_icrc(wire.build_ip_packet(A, B, 50000, bytes(buf[:n])))


def _pair():
    got = []
    tx = Nic(A, RATE, CC, TRANSPORT)
    rx = Nic(B, RATE, CC, TRANSPORT, on_message=lambda f, m: got.append((f, m)))
    return tx, rx, got


def test_two_nics_move_a_message_byte_exact_at_the_paced_line_rate():
    tx, rx, got = _pair()
    data = bytes((i * 31 + 5) & 255 for i in range(300_001))    # 74 packets, a short last
    try:
        flow = tx.send(B, 1, 0, 5, data)
        t_start = time.monotonic()
        deadline = t_start + 5.0
        while (not got or tx.busy) and time.monotonic() < deadline:
            tx.poll(0.0002)
            rx.poll(0.0002)
        elapsed = time.monotonic() - t_start
    finally:
        tx.close()
        rx.close()
    assert len(got) == 1 and got[0][1] == data and type(got[0][1]) is bytes
    n = -(-len(data) // TRANSPORT.mtu_bytes)
    assert tx.counters["data_tx"] == n and rx.counters["bad_icrc"] == 0
    assert flow.gbn.retransmits == 0 and rx.counters["data_rx"] == n
    # paced: the first departure is immediate, then one full frame time each
    frame_s = (TRANSPORT.mtu_bytes + wire.BTH_BYTES + wire.ICRC_BYTES + WIRE_EXTRA_BYTES) * 8 / RATE
    assert elapsed >= 0.97 * (n - 1) * frame_s, (elapsed, (n - 1) * frame_s)
    assert elapsed <= 1.5 * n * frame_s + 0.05, (elapsed, n * frame_s)


def test_a_sender_without_acks_sleeps_until_its_retransmission_timeout():
    tx, rx, got = _pair()
    rx.close()                             # nobody ACKs: the packet goes nowhere
    try:
        flow = tx.send(B, 1, 0, 0, bytes(100))
        tx.poll(0.0)                       # the one packet leaves
        assert tx.counters["data_tx"] == 1
        t = time.monotonic()
        tx.poll(10.0)                      # nothing to do until the RTO
        slept = time.monotonic() - t
        t = time.monotonic()
        tx.poll(10.0)                      # the timeout fires: rewind, resend at once
        tx.poll(0.0)
        resent_after = time.monotonic() - t
    finally:
        tx.close()
    assert TRANSPORT.rto_s * 0.95 <= slept <= TRANSPORT.rto_s + 0.1, slept
    assert flow.gbn.timeouts == 1 and tx.counters["data_tx"] == 2     # rewound and resent
    assert resent_after < 0.05, resent_after


def test_an_arrival_is_handled_within_the_poll_it_wakes():
    """The caller's loop checks its condition after each poll: a message that woke the
    poll must already be delivered then, not one (possibly long) sleep later."""
    tx, rx, got = _pair()
    try:
        tx.send(B, 1, 0, 0, bytes(100))
        sender = threading.Timer(0.1, tx.poll, (0.0,))       # the packet leaves at 0.1 s
        t = time.monotonic()
        sender.start()
        rx.poll(5.0)
        woke = time.monotonic() - t
        sender.join()
    finally:
        tx.close()
        rx.close()
    assert len(got) == 1 and 0.1 <= woke < 0.5, (len(got), woke)


def test_a_completion_waiting_at_the_start_of_a_poll_returns_without_sleeping():
    """A message (receiver) or the last ACK (sender) already in the socket when the poll
    starts: the poll returns at once, so a caller waiting for exactly that is not put to
    sleep until its timeout (a rank that hung for its whole run timeout did)."""
    tx, rx, got = _pair()
    try:
        tx.send(B, 1, 0, 0, bytes(100))
        tx.poll(0.0)                       # on loopback the packet is in rx's socket now
        t = time.monotonic()
        rx.poll(5.0)                       # delivers it and ACKs it
        rx_s = time.monotonic() - t
        t = time.monotonic()
        tx.poll(5.0)                       # the ACK completes the send
        tx_s = time.monotonic() - t
    finally:
        tx.close()
        rx.close()
    assert len(got) == 1 and not tx.busy
    assert rx_s < 0.5 and tx_s < 0.5, (rx_s, tx_s)


def test_the_receive_lag_is_the_time_a_datagram_waited_in_the_socket():
    """Each datagram's kernel arrival stamp (SO_TIMESTAMPNS) against the time the NIC read
    it: one left 0.2 s in the socket shows a 0.2 s lag; read at once, well under 0.2 s."""
    tx, rx, got = _pair()
    try:
        tx.send(B, 1, 0, 0, bytes(100))
        tx.poll(0.0)                       # in rx's socket now
        time.sleep(0.2)
        rx.poll(0.0)
        waited = dict(rx.stats()["rx_lag"])
        tx.poll(1.0)                       # the ACK, read as soon as it comes
        quick = tx.stats()["rx_lag"]
    finally:
        tx.close()
        rx.close()
    assert len(got) == 1 and waited["packets"] == 1 and quick["packets"] == 1
    assert 0.2 <= waited["mean_s"] < 0.35, waited
    assert 0 <= quick["mean_s"] < 0.1, quick


def test_a_ce_marked_packet_is_seen_and_answered_with_one_cnp():
    """The receiver reads the IP TOS of every datagram (IP_RECVTOS ancillary data): a CE
    mark on a data packet is counted and answered with a CNP to its sender."""
    import socket
    rx = Nic(B, RATE, CC, TRANSPORT)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cnp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        cnp.bind((A, wire.ROCE_UDP_PORT))          # where the sender's NIC would listen
        cnp.settimeout(2.0)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, wire.ECN_CE)
        s.bind((A, 50123))
        frame = wire.with_icrc(A, B, 50123, wire.build_data(1, 0, 4, 0, wire.OP_SEND_FIRST,
                                                            bytes(4096)))
        s.sendto(frame, (B, wire.ROCE_UDP_PORT))
        rx.poll(0.0)
        [f] = rx.receivers.values()
        reply = cnp.recv(100)
    finally:
        s.close()
        cnp.close()
        rx.close()
    assert f.ce == 1 and f.cnps == 1 and rx.counters["cnp_tx"] == 1
    assert wire.parse_bth(reply).opcode == wire.OP_CNP


def test_with_the_ack_flag_a_ce_mark_is_answered_by_a_becn_ack_at_once_not_a_cnp():
    """``congestion_flag = "ack"`` (HPCC ns-3's notification point): the CE-marked first
    packet of a long message is acknowledged at once, though ``ack_every`` would wait for
    8, and the ACK carries BECN; no CNP is sent. Unmarked packets keep ack_every."""
    import socket
    from dataclasses import replace
    rx = Nic(B, RATE, CC, replace(TRANSPORT, congestion_flag="ack"))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        back.bind((A, wire.ROCE_UDP_PORT))         # where the sender's NIC would listen
        back.settimeout(2.0)
        s.bind((A, 50124))
        for psn, tos in ((0, wire.ECN_CE), (1, wire.ECN_ECT0), (2, wire.ECN_CE)):
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            op = wire.OP_SEND_FIRST if psn == 0 else wire.OP_SEND_MIDDLE
            s.sendto(wire.with_icrc(A, B, 50124, wire.build_data(1, 0, 4, psn, op, bytes(4096))),
                     (B, wire.ROCE_UDP_PORT))
            rx.poll(0.0)
        replies = [wire.parse_bth(back.recv(100)) for _ in range(2)]
        back.settimeout(0.2)
        with pytest.raises(socket.timeout):
            back.recv(100)                         # nothing for the unmarked packet 1
    finally:
        s.close()
        back.close()
        rx.close()
    assert [(r.opcode, r.psn, r.becn) for r in replies] == \
        [(wire.OP_ACKNOWLEDGE, 0, True), (wire.OP_ACKNOWLEDGE, 2, True)]
    assert rx.counters["cnp_tx"] == 0 and rx.counters["becn_tx"] == 2


def test_a_becn_ack_reaches_the_senders_congestion_control_as_a_cnp_would():
    import socket
    dcqcn = CcConfig.default("dcqcn_mlx", 10e9, SCALE)
    tx = Nic(A, RATE, dcqcn, TRANSPORT)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.bind((B, wire.ROCE_UDP_PORT))
        rx.settimeout(2.0)
        flow = tx.send(B, 1, 0, 4, bytes(40 * 4096))
        tx.poll(0.0)
        data, (_, sport) = rx.recvfrom(9000)
        bth = wire.parse_bth(data)
        ack = wire.build_ack(bth.pkey, bth.dqpn, bth.psn, becn=True)
        rx.sendto(wire.with_icrc(B, A, wire.ROCE_UDP_PORT, ack), (A, wire.ROCE_UDP_PORT))
        rate0 = flow.cc.rate_bps
        tx.poll(0.05)
    finally:
        rx.close()
        tx.close()
    assert flow.cc.cnps == 1 and tx.counters["becn_rx"] == 1 and tx.counters["cnp_rx"] == 0
    assert flow.cc.rate_bps < rate0                # mlx's first CNP cuts at once
