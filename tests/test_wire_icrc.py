"""Tests for runtime/wire.py's ICRC, ECN-CE marking and IPv4 checksums."""

import random
import struct

import pytest
from scapy.all import IP, UDP, Raw, raw
from scapy.layers.inet import IPOption_Router_Alert
from scapy.contrib.roce import BTH

from runtime import wire
from tests.wire_util import DST, SPORT, SRC, data_packet, header_checksum_ok


# --- ICRC ---------------------------------------------------------------------------

def test_icrc_is_sent_little_endian_crc32_of_masked_pseudo_header():
    import zlib
    import socket
    body = wire.build_data(1, 0, 0, 0, wire.OP_SEND_ONLY, b"abcd")
    udp_len = 8 + len(body) + 4
    masked = (b"\xff" * 8
              + bytes([0x45, 0xFF]) + struct.pack("!HHH", 20 + udp_len, 0, 0x4000)
              + bytes([0xFF, 17]) + b"\xff\xff" + socket.inet_aton(SRC) + socket.inet_aton(DST)
              + struct.pack("!HHH", SPORT, 4791, udp_len) + b"\xff\xff"
              + body[:4] + b"\xff" + body[5:])
    expected = zlib.crc32(masked) & 0xFFFFFFFF
    assert wire.icrc(socket.inet_aton(SRC), socket.inet_aton(DST), SPORT, 4791, body) == expected
    assert wire.with_icrc(SRC, DST, SPORT, body)[-4:] == struct.pack("<I", expected)


def test_verify_icrc_rejects_a_corrupted_payload_or_header():
    pkt = bytearray(data_packet(payload=b"payload!"))
    assert wire.verify_icrc(bytes(pkt))
    corrupt = bytearray(pkt)
    corrupt[-6] ^= 0x01                          # a payload byte
    assert not wire.verify_icrc(bytes(corrupt))
    corrupt = bytearray(pkt)
    corrupt[28 + 11] ^= 0x01                     # the PSN's low byte
    assert not wire.verify_icrc(bytes(corrupt))
    corrupt = bytearray(pkt)
    corrupt[12] ^= 0x01                          # the source address
    assert not wire.verify_icrc(bytes(corrupt))


def test_icrc_ignores_masked_fields_tos_ttl_ip_and_udp_checksum_and_becn_byte():
    pkt = bytearray(data_packet())
    pkt[1] = 0xB8 | wire.ECN_CE                  # TOS
    pkt[8] = 3                                   # TTL
    pkt[10:12] = b"\x12\x34"                     # IP checksum
    pkt[26:28] = b"\xab\xcd"                     # UDP checksum
    pkt[28 + 4] |= 0xC0                          # FECN/BECN
    assert wire.verify_icrc(bytes(pkt))


def test_verify_icrc_uses_the_packets_ip_id_and_fragment_flags():
    # A scapy-built packet with IP ID 1234 and no DF: its ICRC (computed by scapy)
    # covers those fields, and verify_icrc reads them from the packet.
    pkt = raw(IP(src=SRC, dst=DST, tos=2, id=1234, flags=0)
              / UDP(sport=SPORT, dport=4791)
              / BTH(opcode=wire.OP_SEND_ONLY, pkey=0x8001, dqpn=5, psn=3) / Raw(b"zzzz"))
    assert wire.verify_icrc(pkt)


def test_verify_icrc_accepts_a_valid_packet_with_ip_options():
    pkt = raw(IP(src=SRC, dst=DST, tos=2, id=0, flags="DF", options=[IPOption_Router_Alert()])
              / UDP(sport=SPORT, dport=4791)
              / BTH(opcode=wire.OP_SEND_ONLY, pkey=0x8001, dqpn=5, psn=3) / Raw(b"zzzz"))
    view = wire.scapy_view(pkt)
    assert view[BTH].compute_icrc(None) == pkt[-4:]   # the packet's ICRC is valid
    assert wire.verify_icrc(pkt)


# --- CE marking ---------------------------------------------------------------------

@pytest.mark.parametrize("tos", [wire.ECN_ECT0, wire.ECN_ECT1, 0xB8 | wire.ECN_ECT0,
                                 (46 << 2) | wire.ECN_ECT1, 0xFC | wire.ECN_ECT0])
def test_mark_ce_sets_ce_keeps_dscp_and_fixes_checksum(tos):
    original = data_packet(payload=b"some payload", ecn=wire.ECN_ECT0)
    pkt = bytearray(original)
    pkt[1] = tos                                 # a DSCP and an ECT codepoint
    pkt[10] = pkt[11] = 0
    pkt[10:12] = struct.pack("!H", wire.ipv4_checksum(bytes(pkt[:20])))
    before = bytes(pkt)
    wire.mark_ce(pkt)
    marked = bytes(pkt)
    assert marked[1] & 3 == wire.ECN_CE
    assert marked[1] >> 2 == tos >> 2
    # Only the TOS byte and the header checksum changed.
    assert marked[0] == before[0]
    assert marked[2:10] == before[2:10]
    assert marked[12:] == before[12:]
    assert marked[10:12] != before[10:12]
    # Header checksum: ours, and scapy's recomputation.
    assert header_checksum_ok(marked)
    ip = IP(marked)
    stored = ip.chksum
    del ip.chksum
    assert IP(raw(ip)).chksum == stored
    # ICRC still valid, by ours and by scapy.
    assert wire.verify_icrc(marked)
    assert wire.scapy_view(marked)[BTH].compute_icrc(None) == marked[-4:]
    assert wire.parse_ip_roce(marked).ecn == wire.ECN_CE


def test_mark_ce_is_idempotent_on_an_already_marked_packet():
    pkt = bytearray(data_packet())
    wire.mark_ce(pkt)
    once = bytes(pkt)
    wire.mark_ce(pkt)
    assert bytes(pkt) == once
    assert header_checksum_ok(once)


def test_mark_ce_incremental_checksum_equals_full_recompute_for_random_headers():
    rng = random.Random(1624)
    for _ in range(3000):
        pkt = bytearray(wire.build_ip_packet(
            f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}",
            f"192.168.{rng.randrange(256)}.{rng.randrange(256)}",
            rng.randrange(65536), bytes(rng.randrange(256) for _ in range(rng.randrange(20, 60))),
            ecn=rng.randrange(4), ttl=rng.randrange(256), ip_id=rng.randrange(65536)))
        pkt[1] = rng.randrange(256)
        pkt[10] = pkt[11] = 0
        pkt[10:12] = struct.pack("!H", wire.ipv4_checksum(bytes(pkt[:20])))
        wire.mark_ce(pkt)
        assert pkt[1] & 3 == 3
        assert header_checksum_ok(bytes(pkt)), pkt[:20].hex()


def test_ipv4_checksum_matches_scapy():
    pkt = data_packet(ttl=33)
    ip = IP(pkt)
    stored = ip.chksum
    del ip.chksum
    assert IP(raw(ip)).chksum == stored
    hdr = bytearray(pkt[:20])
    hdr[10] = hdr[11] = 0
    assert wire.ipv4_checksum(bytes(hdr)) == stored


def test_set_dscp_keeps_ecn_and_fixes_checksum():
    pkt = bytearray(data_packet(ecn=wire.ECN_ECT1))
    wire.set_dscp(pkt, 46)
    assert pkt[1] == (46 << 2) | wire.ECN_ECT1
    assert header_checksum_ok(bytes(pkt))
    assert wire.verify_icrc(bytes(pkt))
