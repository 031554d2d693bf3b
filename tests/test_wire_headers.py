"""Tests for runtime/wire.py's headers: layouts, fields, steps, packets built and dissected."""

import random
import struct

import pytest
from scapy.all import IP, UDP, raw
from scapy.contrib.roce import AETH, BTH, CNPPadding, cnp

from runtime import wire
from tests.wire_util import (DST, SPORT, SRC, data_packet, data_payload, header_checksum_ok,
                              udp_payload_of)


# --- struct layouts against scapy's declaration ---------------------------------------

def test_struct_sizes_match_scapy_layers():
    assert wire.BTH.size == wire.BTH_BYTES == 12
    assert len(BTH().self_build()) == 12          # scapy BTH without the trailing ICRC
    assert wire.AETH.size == wire.AETH_BYTES == len(raw(AETH())) == 4
    assert wire.IPV4.size == wire.IPV4_HEADER_BYTES == len(raw(IP())) == 20
    assert wire.UDP.size == wire.UDP_HEADER_BYTES == len(raw(UDP())) == 8
    assert wire.ICRC.size == wire.ICRC_BYTES == 4
    assert wire.CNP_PAD_BYTES == len(raw(CNPPadding())) == 16
    assert wire.OVERHEAD_BYTES == 20 + 8 + 12 + 4


def test_build_bth_is_byte_identical_to_scapy_bth_for_random_fields():
    rng = random.Random(1982)
    for _ in range(500):
        f = dict(opcode=rng.randrange(256), padcount=rng.randrange(4),
                 pkey=rng.randrange(1 << 16), dqpn=rng.randrange(1 << 24),
                 psn=rng.randrange(1 << 24), becn=rng.randrange(2), ackreq=rng.randrange(2))
        ours = wire.build_bth(f["opcode"], f["pkey"], f["dqpn"], f["psn"],
                              padcount=f["padcount"], becn=bool(f["becn"]),
                              ackreq=bool(f["ackreq"]))
        theirs = BTH(**f).self_build()
        assert ours == theirs, f
        assert wire.parse_bth(ours) == wire.Bth(f["opcode"], f["pkey"], f["dqpn"], f["psn"],
                                                f["padcount"], bool(f["becn"]),
                                                bool(f["ackreq"]))


# --- field mappings -----------------------------------------------------------------

@pytest.mark.parametrize("job", [1, 7, 0x7FFE])
def test_pkey_of_sets_the_partition_flag_and_job_of_inverts_it(job):
    assert wire.pkey_of(job) == 0x8000 | job
    assert wire.job_of(wire.pkey_of(job)) == job


@pytest.mark.parametrize("pkey", [0x0000, 0xFFFF, 0x8000, 0x0001, 0x7FFF, 0x7FFE])
def test_job_of_a_pkey_without_the_job_form_is_foreign(pkey):
    # 0: no partition; 0xFFFF: InfiniBand's default partition; 0x8000: job 0; the rest:
    # the full-member bit missing
    assert wire.job_of(pkey) == wire.FOREIGN_JOB == 0


@pytest.mark.parametrize("job", [0, 0x7FFF, 0x8000, -1, 0xFFFF])
def test_pkey_of_rejects_jobs_outside_1_to_0x7ffe(job):
    with pytest.raises(ValueError, match=str(job)):
        wire.pkey_of(job)


def test_dest_qp_packs_channel_and_16_bit_step():
    assert wire.dest_qp(3, 0x1234) == 0x031234
    assert wire.dest_qp(0xFF, 0xFFFF) == 0xFFFFFF
    assert wire.dest_qp(2, 0x10005) == 0x020005         # step masked to 16 bits
    assert wire.dest_qp(2, -1) == 0x02FFFF
    assert wire.step_of(0x031234) == 0x1234
    assert wire.channel_of(0x031234) == 3
    with pytest.raises(ValueError, match="256"):
        wire.dest_qp(256, 0)


@pytest.mark.parametrize("n_packets, expected", [
    (1, [wire.OP_SEND_ONLY]),
    (2, [wire.OP_SEND_FIRST, wire.OP_SEND_LAST]),
    (4, [wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE, wire.OP_SEND_MIDDLE, wire.OP_SEND_LAST]),
])
def test_data_opcode_sequence_of_a_message(n_packets, expected):
    assert [wire.data_opcode(i, n_packets) for i in range(n_packets)] == expected
    assert wire.data_opcode(n_packets - 1, n_packets) in wire.LAST_OPCODES


def test_opcode_constants_match_scapy_names():
    from scapy.contrib.roce import _bth_opcodes, CNP_OPCODE
    assert _bth_opcodes[wire.OP_SEND_FIRST] == "RC_SEND_FIRST"
    assert _bth_opcodes[wire.OP_SEND_MIDDLE] == "RC_SEND_MIDDLE"
    assert _bth_opcodes[wire.OP_SEND_LAST] == "RC_SEND_LAST"
    assert _bth_opcodes[wire.OP_SEND_ONLY] == "RC_SEND_ONLY"
    assert _bth_opcodes[wire.OP_ACKNOWLEDGE] == "RC_ACKNOWLEDGE"
    assert wire.OP_CNP == CNP_OPCODE == 0x81


# --- serial-number step arithmetic ------------------------------------------------------

@pytest.mark.parametrize("a, b, diff", [
    (5, 3, 2), (3, 5, -2), (7, 7, 0),
    (0, 0xFFFF, 1), (0xFFFF, 0, -1),
    (2, 0xFFFE, 4), (0xFFFE, 2, -4),
    (0x7FFF, 0, 0x7FFF), (0x8001, 0, -0x7FFF),
])
def test_step_diff_is_signed_16_bit_serial_distance(a, b, diff):
    assert wire.step_diff(a, b) == diff


def test_step_lt_wraps_around():
    assert wire.step_lt(0xFFFF, 0) is True
    assert wire.step_lt(0, 0xFFFF) is False
    assert wire.step_lt(0xFFF0, 0x000F) is True
    assert wire.step_lt(0x000F, 0xFFF0) is False
    assert wire.step_lt(4, 5) is True
    assert wire.step_lt(5, 4) is False
    assert wire.step_lt(5, 5) is False


# --- data packets -------------------------------------------------------------------

@pytest.mark.parametrize("n_payload, pad", [(8, 0), (7, 1), (6, 2), (5, 3), (0, 0), (4096, 0)])
def test_data_payload_round_trips_with_0_to_3_pad_bytes(n_payload, pad):
    payload = bytes((i * 7 + 1) & 0xFF for i in range(n_payload))
    body = wire.build_data(9, 2, 40, 11, wire.OP_SEND_MIDDLE, payload)
    assert len(body) == 12 + n_payload + pad
    assert len(body) % 4 == 0
    assert body[12 + n_payload:] == b"\0" * pad
    udp = wire.with_icrc(SRC, DST, SPORT, body)
    assert len(udp) == len(body) + 4
    assert wire.parse_bth(udp).padcount == pad
    assert data_payload(udp) == payload


@pytest.mark.parametrize("opcode", [wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE,
                                    wire.OP_SEND_LAST, wire.OP_SEND_ONLY])
def test_data_packet_round_trips_through_parse_bth_and_parse_ip_roce(opcode):
    pkt = data_packet(job=0x1AB, channel=7, step=0xBEEF, psn=0xABCDEF, opcode=opcode,
                      payload=b"hello", ackreq=True)
    bth = wire.parse_bth(udp_payload_of(pkt))
    assert bth == wire.Bth(opcode, 0x8000 | 0x1AB, 7 << 16 | 0xBEEF, 0xABCDEF,
                           padcount=3, becn=False, ackreq=True)
    assert data_payload(udp_payload_of(pkt)) == b"hello"
    hdr = wire.parse_ip_roce(pkt)
    assert hdr == wire.RoceHeader(ihl_bytes=20, ecn=wire.ECN_ECT0, opcode=opcode, job=0x1AB,
                                  channel=7, step=0xBEEF, psn=0xABCDEF,
                                  last=opcode in (wire.OP_SEND_LAST, wire.OP_SEND_ONLY))


def test_build_ip_packet_header_fields():
    pkt = data_packet(payload=b"12345678", ttl=17)
    ip = IP(pkt)
    assert ip.version == 4 and ip.ihl == 5
    assert ip.tos == wire.ECN_ECT0
    assert ip.len == len(pkt) == 20 + 8 + 12 + 8 + 4
    assert ip.id == 0
    assert ip.flags == "DF" and ip.frag == 0
    assert ip.ttl == 17
    assert ip.proto == 17
    assert (ip.src, ip.dst) == (SRC, DST)
    assert ip[UDP].sport == SPORT and ip[UDP].dport == 4791
    assert ip[UDP].len == len(pkt) - 20
    assert header_checksum_ok(pkt)


# --- scapy dissecting our packets ----------------------------------------------------

@pytest.mark.parametrize("opcode", [wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE,
                                    wire.OP_SEND_LAST, wire.OP_SEND_ONLY])
def test_scapy_dissects_our_data_packet_field_for_field(opcode):
    job, channel, step, psn = 42, 5, 0x0102, 0x123456
    payload = b"abcdefghij"                      # 10 bytes -> 2 pad bytes
    pkt = data_packet(job=job, channel=channel, step=step, psn=psn, opcode=opcode,
                      payload=payload)
    view = wire.scapy_view(pkt)
    assert view.haslayer(BTH)
    bth = view[BTH]
    assert bth.opcode == opcode
    assert bth.pkey == 0x8000 | job
    assert bth.dqpn == channel << 16 | step
    assert bth.psn == psn
    assert bth.padcount == 2
    assert bth.becn == 0 and bth.fecn == 0
    assert bth.version == 0 and bth.solicited == 0 and bth.migreq == 0
    assert raw(bth.payload) == payload + b"\0\0"
    # scapy's ICRC over our bytes equals ours (as bytes and as its icrc field).
    assert bth.compute_icrc(None) == pkt[-4:]
    assert bth.icrc == struct.unpack("!I", pkt[-4:])[0]
    assert bth.icrc == int.from_bytes(bth.compute_icrc(None), "big")
    assert wire.verify_icrc(pkt)


def test_scapy_dissects_our_ack_and_nak_with_aeth():
    for nak, syndrome in ((False, wire.AETH_ACK), (True, wire.AETH_NAK_PSN_SEQ_ERR)):
        body = wire.build_ack(0x8003, 0x020009, 1234, nak=nak, msn=0x345678)
        pkt = wire.build_ip_packet(SRC, DST, SPORT, wire.with_icrc(SRC, DST, SPORT, body))
        view = wire.scapy_view(pkt)
        assert view[BTH].opcode == wire.OP_ACKNOWLEDGE
        assert view[BTH].pkey == 0x8003
        assert view[BTH].dqpn == 0x020009
        assert view[BTH].psn == 1234
        assert view.haslayer(AETH)
        assert view[AETH].syndrome == syndrome
        assert view[AETH].msn == 0x345678
        assert view[BTH].compute_icrc(None) == pkt[-4:]
        assert wire.verify_icrc(pkt)


def test_scapy_dissects_our_cnp_with_becn_and_padding():
    body = wire.build_cnp(0x8004, 0x010002)
    pkt = wire.build_ip_packet(SRC, DST, SPORT, wire.with_icrc(SRC, DST, SPORT, body))
    view = wire.scapy_view(pkt)
    assert view[BTH].opcode == 0x81
    assert view[BTH].becn == 1
    assert view[BTH].pkey == 0x8004
    assert view[BTH].dqpn == 0x010002
    assert view.haslayer(CNPPadding)
    assert view[CNPPadding].reserved1 == 0 and view[CNPPadding].reserved2 == 0
    assert view[BTH].compute_icrc(None) == pkt[-4:]
    assert wire.verify_icrc(pkt)


def test_our_cnp_is_byte_identical_to_scapy_cnp():
    dqpn = 0x010007
    scapy_pkt = raw(IP(src=SRC, dst=DST, tos=wire.ECN_ECT0, id=0, flags="DF")
                    / UDP(sport=SPORT, dport=4791) / cnp(dqpn))
    ours = wire.with_icrc(SRC, DST, SPORT, wire.build_cnp(0xFFFF, dqpn))
    # UDP payload (BTH + padding + ICRC) identical; scapy fills a UDP checksum, we send 0.
    assert udp_payload_of(scapy_pkt) == ours


# --- ACK / NAK / CNP round trip ------------------------------------------------------

@pytest.mark.parametrize("nak, syndrome", [(False, 0x1F), (True, 0x60)])
def test_ack_and_nak_round_trip(nak, syndrome):
    body = wire.build_ack(0x8011, 0x04ABCD, 0xFEDCBA, nak=nak, msn=77)
    assert len(body) == 16
    bth = wire.parse_bth(body)
    assert bth.opcode == wire.OP_ACKNOWLEDGE
    assert (bth.pkey, bth.dqpn, bth.psn) == (0x8011, 0x04ABCD, 0xFEDCBA)
    assert wire.parse_aeth(body) == (syndrome, 77)


def test_aeth_msn_is_24_bits():
    body = wire.build_ack(0x8001, 1, 0, msn=0x1234567)
    assert wire.parse_aeth(body) == (wire.AETH_ACK, 0x234567)


def test_cnp_round_trip():
    body = wire.build_cnp(0x8002, 0x00FF01)
    assert len(body) == 12 + 16
    assert body[12:] == b"\0" * 16
    bth = wire.parse_bth(body)
    assert bth.opcode == 0x81
    assert bth.becn is True
    assert (bth.pkey, bth.dqpn, bth.psn) == (0x8002, 0x00FF01, 0)
