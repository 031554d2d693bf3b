"""Tests for runtime/wire.py's parse_ip_roce on scapy-built, foreign and malformed packets."""

import struct

import pytest
from scapy.all import IP, IPv6, TCP, UDP, Raw, raw
from scapy.layers.inet import IPOption_Router_Alert
from scapy.contrib.roce import BTH

from runtime import wire
from tests.wire_util import DST, SPORT, SRC, data_packet, data_payload, udp_payload_of


# --- scapy-built packets parsed by us -----------------------------------------------

@pytest.mark.parametrize("opcode, last", [(0x00, False), (0x01, False), (0x02, True), (0x04, True)])
def test_parse_ip_roce_reads_a_scapy_built_packet(opcode, last):
    pkt = raw(IP(src=SRC, dst=DST, tos=wire.ECN_ECT0, id=0, flags="DF", ttl=9)
              / UDP(sport=4242, dport=4791)
              / BTH(opcode=opcode, pkey=0x8000 | 77, dqpn=9 << 16 | 0xFFFE, psn=0xFFFFFF)
              / Raw(b"0123456789abcdef"))
    assert wire.parse_ip_roce(pkt) == wire.RoceHeader(
        ihl_bytes=20, ecn=wire.ECN_ECT0, opcode=opcode, job=77, channel=9, step=0xFFFE,
        psn=0xFFFFFF, last=last)
    assert wire.verify_icrc(pkt)                     # scapy's ICRC == ours
    assert data_payload(udp_payload_of(pkt)) == b"0123456789abcdef"


def test_parse_ip_roce_skips_ip_options():
    pkt = raw(IP(src=SRC, dst=DST, tos=wire.ECN_ECT1, options=[IPOption_Router_Alert()])
              / UDP(sport=1, dport=4791)
              / BTH(opcode=wire.OP_SEND_MIDDLE, pkey=0x8002, dqpn=1 << 16 | 3, psn=10)
              / Raw(b"abcd"))
    assert pkt[0] == 0x46
    assert wire.parse_ip_roce(pkt) == wire.RoceHeader(24, wire.ECN_ECT1, wire.OP_SEND_MIDDLE,
                                                      2, 1, 3, 10, False)


# --- parse_ip_roce: everything else is None ------------------------------------------

def _bth_payload(opcode=wire.OP_SEND_MIDDLE):
    return BTH(opcode=opcode, pkey=0x8001, dqpn=1, psn=1) / Raw(b"abcd")


def test_parse_ip_roce_returns_none_for_ipv6():
    assert wire.parse_ip_roce(raw(IPv6(src="::1", dst="::2") / UDP(dport=4791)
                                  / _bth_payload())) is None


def test_parse_ip_roce_returns_none_for_tcp_to_4791():
    pkt = raw(IP(src=SRC, dst=DST) / TCP(sport=1, dport=4791) / Raw(b"\0" * 16))
    assert wire.parse_ip_roce(pkt) is None


def test_parse_ip_roce_returns_none_for_udp_to_another_port():
    good = bytearray(data_packet())
    assert wire.parse_ip_roce(bytes(good)) is not None
    for port in (4790, 4792, 53):
        pkt = bytearray(good)
        pkt[22:24] = struct.pack("!H", port)
        assert wire.parse_ip_roce(bytes(pkt)) is None
    # the source port being 4791 does not make it RoCE
    pkt = raw(IP(src=SRC, dst=DST) / UDP(sport=4791, dport=5000) / Raw(b"\0" * 16))
    assert wire.parse_ip_roce(pkt) is None


def test_parse_ip_roce_returns_none_for_ack_nak_and_cnp():
    for body in (wire.build_ack(0x8001, 1, 5), wire.build_ack(0x8001, 1, 5, nak=True),
                 wire.build_cnp(0x8001, 1)):
        pkt = wire.build_ip_packet(SRC, DST, SPORT, wire.with_icrc(SRC, DST, SPORT, body))
        assert wire.parse_ip_roce(pkt) is None


@pytest.mark.parametrize("opcode", [0x03, 0x05, 0x06, 0x0A, 0x0C, 0x12, 0x24, 0x64])
def test_parse_ip_roce_returns_none_for_other_opcodes(opcode):
    pkt = raw(IP(src=SRC, dst=DST) / UDP(dport=4791) / _bth_payload(opcode))
    assert wire.parse_ip_roce(pkt) is None


def test_parse_ip_roce_returns_none_for_every_truncation_below_the_bth_end():
    pkt = data_packet()
    bth_end = 20 + 8 + 12
    for n in range(bth_end):
        assert wire.parse_ip_roce(pkt[:n]) is None, n
    assert wire.parse_ip_roce(pkt[:bth_end]) is not None


def test_parse_ip_roce_returns_none_for_a_bad_ihl():
    # Destination 10.0.18.183: with IHL 4 (16 bytes) its last two bytes would be read
    # as UDP dport 4791, and the UDP length's high byte (0) as a SEND FIRST opcode.
    body = wire.build_data(1, 0, 0, 0, wire.OP_SEND_ONLY, b"abcd")
    pkt = bytearray(wire.build_ip_packet(SRC, "10.0.18.183", SPORT,
                                         wire.with_icrc(SRC, "10.0.18.183", SPORT, body)))
    assert wire.parse_ip_roce(bytes(pkt)) is not None
    pkt[0] = 0x44                                # IHL 4 words < 20 bytes
    assert wire.parse_ip_roce(bytes(pkt)) is None
    pkt[0] = 0x40                                # IHL 0
    assert wire.parse_ip_roce(bytes(pkt)) is None
    pkt[0] = 0x4F                                # IHL 60 bytes: BTH would lie past the end
    assert wire.parse_ip_roce(bytes(pkt)) is None


@pytest.mark.parametrize("flags, frag", [("MF", 0), ("MF", 185), (0, 185), ("DF", 1), (0, 0x1FFF)])
def test_parse_ip_roce_returns_none_for_ip_fragments(flags, frag):
    pkt = raw(IP(src=SRC, dst=DST, flags=flags, frag=frag) / UDP(dport=4791) / _bth_payload())
    assert wire.parse_ip_roce(pkt) is None


def test_parse_ip_roce_accepts_df_and_no_flags_when_not_fragmented():
    for flags in ("DF", 0):
        pkt = raw(IP(src=SRC, dst=DST, flags=flags) / UDP(dport=4791) / _bth_payload())
        assert wire.parse_ip_roce(pkt) is not None
