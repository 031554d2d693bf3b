"""Shared helpers for the wire-format tests: a data packet and views of its bytes."""

import struct

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


def data_payload(udp_payload: bytes) -> bytes:
    """The application bytes of a data packet as the wire format lays them out (BTH, pad
    and ICRC stripped; the NIC's receive path slices them so, ``hosts.nic_core``)."""
    pad = (udp_payload[1] >> 4) & 3
    return udp_payload[wire.BTH_BYTES:len(udp_payload) - wire.ICRC_BYTES - pad]
