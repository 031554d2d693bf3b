"""Tests for runtime/wire.py: the RoCEv2 wire format (docs/architecture.md §2).

The struct-based hot path is checked against scapy's own ``scapy.contrib.roce``
layers, field for field and byte for byte, so a capture of our packets dissects as
RoCE without a project-specific plugin.
"""

import random
import struct

import pytest
from scapy.all import IP, IPv6, TCP, UDP, Raw, raw
from scapy.layers.inet import IPOption_Router_Alert
from scapy.contrib.roce import AETH, BTH, CNPPadding, cnp

from runtime import wire

SRC, DST = "10.0.1.2", "10.0.2.3"
SPORT = 49152


def data_packet(job=5, channel=3, step=0x1234, psn=77, opcode=wire.OP_SEND_MIDDLE,
                payload=b"abcdefgh", *, ecn=wire.ECN_ECT0, ttl=64, ackreq=False):
    """A whole IPv4/UDP/BTH/payload/ICRC data packet as a host sends it."""
    body = wire.build_data(job, channel, step, psn, opcode, payload, ackreq=ackreq)
    return wire.build_ip_packet(SRC, DST, SPORT, wire.with_icrc(SRC, DST, SPORT, body),
                                ecn=ecn, ttl=ttl)


def udp_payload_of(pkt: bytes) -> bytes:
    ihl = (pkt[0] & 0x0F) * 4
    return pkt[ihl + wire.UDP_HEADER_BYTES:]


def header_checksum_ok(pkt: bytes) -> bool:
    ihl = (pkt[0] & 0x0F) * 4
    hdr = bytearray(pkt[:ihl])
    got = struct.unpack_from("!H", hdr, 10)[0]
    hdr[10] = hdr[11] = 0
    return wire.ipv4_checksum(bytes(hdr)) == got


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
    assert wire.data_payload(udp) == payload


@pytest.mark.parametrize("opcode", [wire.OP_SEND_FIRST, wire.OP_SEND_MIDDLE,
                                    wire.OP_SEND_LAST, wire.OP_SEND_ONLY])
def test_data_packet_round_trips_through_parse_bth_and_parse_ip_roce(opcode):
    pkt = data_packet(job=0x1AB, channel=7, step=0xBEEF, psn=0xABCDEF, opcode=opcode,
                      payload=b"hello", ackreq=True)
    bth = wire.parse_bth(udp_payload_of(pkt))
    assert bth == wire.Bth(opcode, 0x8000 | 0x1AB, 7 << 16 | 0xBEEF, 0xABCDEF,
                           padcount=3, becn=False, ackreq=True)
    assert wire.data_payload(udp_payload_of(pkt)) == b"hello"
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
    assert wire.data_payload(udp_payload_of(pkt)) == b"0123456789abcdef"


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
