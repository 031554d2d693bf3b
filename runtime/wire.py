"""The wire format: RoCEv2 framing of every packet the emulator sends (docs/architecture.md §2).

    IPv4 / UDP (dport 4791, sport = per-flow entropy) / BTH (12 B) / payload / ICRC (4 B)

The source port is a flow's ECMP entropy: :func:`flow_sport` hashes it from the flow's
(job, channel, step, sender).

This module is the one definition of the format. Hosts build packets with it, the
switch agent parses them with it, and analysis reads captures with it. The hot path
uses the precompiled ``struct.Struct`` objects below; :func:`scapy_view` dissects the
same bytes with scapy's own ``scapy.contrib.roce`` layers (a test checks the two agree).

Mapping of Symphony's metadata onto BTH fields:

* job id      -> P_Key = 0x8000 | job          (a partition is a tenant; job 1..32766:
                 the full-member bit set, 0xFFFF is InfiniBand's default partition.
                 Any other P_Key is foreign RoCE traffic, of no job: job 0)
* step index  -> DestQP = channel << 16 | (step & 0xffff)   (one QP per step flow)
* PSN         -> 24-bit, starts at 0 for every flow (position within the flow)
* LAST        -> opcode RC SEND LAST (0x02) or RC SEND ONLY (0x04)

Steps are 16-bit on the wire; compare them with :func:`step_lt` / :func:`step_diff`
(serial-number arithmetic, RFC 1982) so wrap-around is safe.
"""

from __future__ import annotations

import socket
import struct
import zlib
from typing import Final, NamedTuple, Union

# What the parsers read: a packet as the kernel hands it (bytes), as an agent rewrites it
# (bytearray) or a view into a receive buffer (memoryview). Said exactly, because the
# compiled core (runtime/compiled.py) checks argument types when it is called.
ByteView = Union[bytes, bytearray, memoryview]

ROCE_UDP_PORT: Final = 4791
SPORT_BASE: Final = 49152        # flows' source ports: the dynamic range
SPORT_SPAN: Final = 16384

# BTH opcodes (RC transport) and the RoCEv2 CNP.
OP_SEND_FIRST: Final = 0x00
OP_SEND_MIDDLE: Final = 0x01
OP_SEND_LAST: Final = 0x02
OP_SEND_ONLY: Final = 0x04
OP_ACKNOWLEDGE: Final = 0x11
OP_CNP: Final = 0x81
DATA_OPCODES: Final = frozenset((OP_SEND_FIRST, OP_SEND_MIDDLE, OP_SEND_LAST, OP_SEND_ONLY))
LAST_OPCODES: Final = frozenset((OP_SEND_LAST, OP_SEND_ONLY))

# AETH syndromes: bits 6..5 = 00 ACK (bits 4..0 credit count, 0x1f = invalid/unlimited),
# 11 NAK (bits 4..0 = 0: PSN sequence error).
AETH_ACK: Final = 0x1F
AETH_NAK_PSN_SEQ_ERR: Final = 0x60

# IP ECN codepoints (low two bits of the TOS byte).
ECN_NOT_ECT: Final = 0b00
ECN_ECT1: Final = 0b01
ECN_ECT0: Final = 0b10
ECN_CE: Final = 0b11

PSN_MASK: Final = 0xFFFFFF
STEP_MASK: Final = 0xFFFF
PKEY_JOB_FLAG: Final = 0x8000  # the P_Key's full-member bit
MAX_JOB: Final = 0x7FFE        # 0x8000 | 0x7FFF = 0xFFFF is the default partition's key
FOREIGN_JOB: Final = 0         # what job_of / parse_ip_roce give a P_Key of no job

DEFAULT_MTU_BYTES: Final = 4096   # RoCE path MTU: BTH payload bytes per packet
IPV4_HEADER_BYTES: Final = 20
UDP_HEADER_BYTES: Final = 8
BTH_BYTES: Final = 12
AETH_BYTES: Final = 4
ICRC_BYTES: Final = 4
CNP_PAD_BYTES: Final = 16
# Bytes on the IP layer that one data packet with ``n`` payload bytes occupies.
OVERHEAD_BYTES: Final = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES + ICRC_BYTES

# opcode, SE|M|PadCnt|TVer, P_Key, FECN|BECN|resv6 <<24 | DestQP, AckReq|resv7 <<24 | PSN
BTH: Final = struct.Struct("!BBHII")
AETH: Final = struct.Struct("!I")  # syndrome << 24 | MSN
ICRC: Final = struct.Struct("<I")  # the ICRC is sent in little-endian byte order
IPV4: Final = struct.Struct("!BBHHHBBH4s4s")
UDP: Final = struct.Struct("!HHHH")
_U16: Final = struct.Struct("!H")
_PORTS: Final = struct.Struct("!HH")
# Offsets inside BTH used by the agent's parser.
_BTH_PKEY: Final = struct.Struct("!H")
_BTH_QP_PSN: Final = struct.Struct("!II")

_ICRC_LRH: Final = b"\xff" * 8    # pseudo LRH of the RoCEv2 ICRC
IP_FLAG_DF: Final = 0x4000


class Bth(NamedTuple):
    opcode: int
    pkey: int
    dqpn: int
    psn: int
    padcount: int = 0
    becn: bool = False
    ackreq: bool = False


_ROCE_HEADER_FIELDS: Final = ("ihl_bytes", "ecn", "opcode", "job", "channel", "step", "psn", "last")


class RoceHeader:
    """What the switch needs from one RoCE packet (parsed from the IP layer). A plain
    class, neither a NamedTuple nor a dataclass: compiled, it is made and read natively
    (a dataclass's generated ``__init__`` would run as Python; runtime/compiled.py)."""

    __slots__ = _ROCE_HEADER_FIELDS

    def __init__(self, ihl_bytes: int, ecn: int, opcode: int, job: int, channel: int,
                 step: int, psn: int, last: bool):
        self.ihl_bytes, self.ecn, self.opcode, self.job = ihl_bytes, ecn, opcode, job
        self.channel, self.step, self.psn, self.last = channel, step, psn, last

    def _fields(self) -> tuple:
        return (self.ihl_bytes, self.ecn, self.opcode, self.job, self.channel, self.step,
                self.psn, self.last)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RoceHeader) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "RoceHeader(" + ", ".join(
            f"{k}={v!r}" for k, v in zip(_ROCE_HEADER_FIELDS, self._fields())) + ")"


# --- field mappings ---------------------------------------------------------------

def pkey_of(job: int) -> int:
    if not 1 <= job <= MAX_JOB:
        raise ValueError(f"job id {job} out of range 1..{MAX_JOB}")
    return PKEY_JOB_FLAG | job


def job_of(pkey: int) -> int:
    """The job of a P_Key ``0x8000 | job``; FOREIGN_JOB for any other (0, no full-member
    bit, 0xFFFF): RoCE traffic that belongs to no job of the run."""
    job = pkey - PKEY_JOB_FLAG
    return job if 0 < job <= MAX_JOB else FOREIGN_JOB


def dest_qp(channel: int, step: int) -> int:
    if not 0 <= channel <= 0xFF:
        raise ValueError(f"channel {channel} out of range 0..255")
    return channel << 16 | (step & STEP_MASK)


def step_of(dqpn: int) -> int:
    return dqpn & STEP_MASK


def channel_of(dqpn: int) -> int:
    return (dqpn >> 16) & 0xFF


def data_opcode(index: int, n_packets: int) -> int:
    """Opcode of packet ``index`` (0-based) of a message of ``n_packets`` packets."""
    if n_packets == 1:
        return OP_SEND_ONLY
    if index == 0:
        return OP_SEND_FIRST
    if index == n_packets - 1:
        return OP_SEND_LAST
    return OP_SEND_MIDDLE


def flow_sport(job: int, channel: int, step: int, sender_ip: str, per_step: bool = True,
               seed: int = 0) -> int:
    """UDP source port of a flow: a hash of (job, channel, step, sender) in the dynamic
    range, or of (job, channel, sender) with ``per_step=False`` (a long-lived connection).
    ``seed`` (the run's) salts it: the kernel's ECMP hash key is fixed for the machine's
    uptime, so without it every run and seed would take the very same paths."""
    key = f"{job}/{channel}/{step if per_step else '-'}/{sender_ip}"
    salted = (key if not seed else f"{key}/{seed}").encode()
    return SPORT_BASE + zlib.crc32(salted) % SPORT_SPAN


# --- serial-number arithmetic on 16-bit steps (RFC 1982) ------------------------------

def step_diff(a: int, b: int) -> int:
    """Signed distance a - b of two 16-bit steps, in [-32768, 32767]."""
    return ((a - b + 0x8000) & STEP_MASK) - 0x8000


def step_lt(a: int, b: int) -> bool:
    return step_diff(a, b) < 0


# --- building -----------------------------------------------------------------------

def build_bth(opcode: int, pkey: int, dqpn: int, psn: int, *, padcount: int = 0,
              becn: bool = False, ackreq: bool = False) -> bytes:
    return BTH.pack(opcode, (padcount & 3) << 4, pkey,
                    (0x40000000 if becn else 0) | (dqpn & PSN_MASK),
                    (0x80000000 if ackreq else 0) | (psn & PSN_MASK))


def build_data(job: int, channel: int, step: int, psn: int, opcode: int,
               payload: bytes, *, ackreq: bool = False) -> bytes:
    """BTH + payload (+ pad to 4 bytes), without the ICRC (see :func:`with_icrc`)."""
    pad = -len(payload) & 3
    return (build_bth(opcode, pkey_of(job), dest_qp(channel, step), psn,
                      padcount=pad, ackreq=ackreq) + payload + b"\0" * pad)


def build_ack(pkey: int, dqpn: int, psn: int, *, nak: bool = False, msn: int = 0,
              becn: bool = False) -> bytes:
    """ACK (or NAK PSN-sequence-error) of ``psn``: BTH + AETH, without the ICRC. ``becn``:
    the acknowledged data was CE-marked (the ``ack`` notification point)."""
    syndrome = AETH_NAK_PSN_SEQ_ERR if nak else AETH_ACK
    return build_bth(OP_ACKNOWLEDGE, pkey, dqpn, psn, becn=becn) \
        + AETH.pack(syndrome << 24 | (msn & PSN_MASK))


def build_cnp(pkey: int, dqpn: int) -> bytes:
    """RoCEv2 congestion notification packet (BECN set, 16 B padding), without the ICRC."""
    return build_bth(OP_CNP, pkey, dqpn, 0, becn=True) + b"\0" * CNP_PAD_BYTES


def icrc(src_ip: bytes, dst_ip: bytes, sport: int, dport: int, bth_and_payload: ByteView,
         *, ip_id: int = 0, ip_flags_frag: int = IP_FLAG_DF, ip_options: bytes = b"") -> int:
    """RoCEv2 invariant CRC over the masked pseudo-header and the BTH onwards.

    Masked (set to all ones): 8 B pseudo LRH, IP TOS, TTL and checksum, UDP checksum and
    the BTH byte holding FECN/BECN/resv6, so a CE mark on the way keeps the ICRC valid.
    Hosts send on unconnected UDP sockets with DF set, for which Linux writes IP ID 0.
    """
    return icrc_from_seed(icrc_seed(src_ip, dst_ip, sport, dport, UDP_HEADER_BYTES
                                    + len(bth_and_payload) + ICRC_BYTES, ip_id=ip_id,
                                    ip_flags_frag=ip_flags_frag, ip_options=ip_options),
                          bth_and_payload)


def icrc_from_seed(seed: int, bth_and_payload: ByteView) -> int:
    """The ICRC from :func:`icrc_seed`'s state: the BTH (its FECN/BECN/resv6 byte masked)
    and the payload, read in place (any buffer)."""
    body = memoryview(bth_and_payload)
    crc = zlib.crc32(body[:4], seed)
    crc = zlib.crc32(b"\xff", crc)
    crc = zlib.crc32(body[5:], crc)
    return crc & 0xFFFFFFFF


def icrc_seed(src_ip: bytes, dst_ip: bytes, sport: int, dport: int, udp_len: int, *,
              ip_id: int = 0, ip_flags_frag: int = IP_FLAG_DF, ip_options: bytes = b"") -> int:
    """The ICRC's CRC-32 state after the masked pseudo LRH, IPv4 and UDP headers: the same
    for every packet of one flow and length, so a sender or receiver computes it once
    (:func:`icrc` is this plus the BTH onwards)."""
    ihl = IPV4_HEADER_BYTES + len(ip_options)
    ip = IPV4.pack(0x40 | ihl >> 2, 0xFF, ihl + udp_len, ip_id, ip_flags_frag, 0xFF,
                   socket.IPPROTO_UDP, 0xFFFF, src_ip, dst_ip) + ip_options
    udp = UDP.pack(sport, dport, udp_len, 0xFFFF)
    return zlib.crc32(udp, zlib.crc32(ip, zlib.crc32(_ICRC_LRH)))


def data_frame_into(buf: bytearray, seed: int, opcode: int, pkey: int, dqpn: int, psn: int,
                    payload, *, ackreq: bool = False) -> int:
    """The UDP payload of one data packet, :func:`with_icrc` of :func:`build_data`, written
    into ``buf`` (no allocation: the sender's hot path); returns its length. ``seed`` is
    :func:`icrc_seed` for this flow and length (``UDP_HEADER_BYTES`` + the return value)."""
    n = len(payload)
    pad = -n & 3
    end = BTH_BYTES + n + pad
    # the ICRC sees the FECN/BECN/resv6 byte as all ones (a data packet's is 0)
    BTH.pack_into(buf, 0, opcode, pad << 4, pkey, 0xFF000000 | (dqpn & PSN_MASK),
                  (0x80000000 if ackreq else 0) | (psn & PSN_MASK))
    buf[BTH_BYTES:BTH_BYTES + n] = payload
    if pad:
        buf[BTH_BYTES + n:end] = b"\0\0\0"[:pad]
    crc = zlib.crc32(memoryview(buf)[:end], seed)
    buf[4] = 0
    ICRC.pack_into(buf, end, crc & 0xFFFFFFFF)
    return end + ICRC_BYTES


def with_icrc(src_ip: str, dst_ip: str, sport: int, bth_and_payload: bytes,
              dport: int = ROCE_UDP_PORT) -> bytes:
    """The UDP payload as it goes on the wire: ``bth_and_payload`` + ICRC."""
    crc = icrc(socket.inet_aton(src_ip), socket.inet_aton(dst_ip), sport, dport, bth_and_payload)
    return bth_and_payload + ICRC.pack(crc)


def build_ip_packet(src_ip: str, dst_ip: str, sport: int, udp_payload: bytes, *,
                    dport: int = ROCE_UDP_PORT, ecn: int = ECN_ECT0, ttl: int = 64,
                    ip_id: int = 0) -> bytes:
    """A whole IPv4/UDP packet (for tests and injection), IP checksum filled in."""
    total = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + len(udp_payload)
    hdr = bytearray(IPV4.pack(0x45, ecn & 3, total, ip_id, IP_FLAG_DF, ttl, socket.IPPROTO_UDP,
                              0, socket.inet_aton(src_ip), socket.inet_aton(dst_ip)))
    hdr[10:12] = _U16.pack(ipv4_checksum(hdr))
    return bytes(hdr) + UDP.pack(sport, dport, UDP_HEADER_BYTES + len(udp_payload), 0) + udp_payload


# --- parsing ------------------------------------------------------------------------

def parse_bth(udp_payload: ByteView) -> Bth:
    opcode, flags, pkey, qp, psn = BTH.unpack_from(udp_payload)
    return Bth(opcode, pkey, qp & PSN_MASK, psn & PSN_MASK, (flags >> 4) & 3,
               bool(qp & 0x40000000), bool(psn & 0x80000000))


def parse_aeth(udp_payload: ByteView) -> tuple[int, int]:
    """(syndrome, msn) of an ACK/NAK."""
    (v,) = AETH.unpack_from(udp_payload, BTH_BYTES)
    return v >> 24, v & PSN_MASK


def parse_ip_roce(pkt: ByteView) -> RoceHeader | None:
    """Parse an IPv4 packet as a RoCEv2 data packet; ``None`` if it is anything else.

    This is the switch agent's hot path: no allocation beyond the result tuple, and
    anything it cannot make sense of (non-IPv4, fragments, truncated, other ports or
    opcodes) returns ``None`` so the caller passes it untouched. A P_Key of no job gives
    ``job == FOREIGN_JOB`` (see :func:`job_of`).
    """
    if len(pkt) < IPV4_HEADER_BYTES or pkt[0] >> 4 != 4 or pkt[9] != 17:
        return None
    ihl = (pkt[0] & 0x0F) << 2
    if ihl < IPV4_HEADER_BYTES or len(pkt) < ihl + UDP_HEADER_BYTES + BTH_BYTES:
        return None
    if pkt[6] & 0x3F or pkt[7]:                # a fragment (MF set or offset != 0)
        return None
    if _U16.unpack_from(pkt, ihl + 2)[0] != ROCE_UDP_PORT:
        return None
    b = ihl + UDP_HEADER_BYTES
    opcode = pkt[b]
    if opcode not in DATA_OPCODES:
        return None
    job = _BTH_PKEY.unpack_from(pkt, b + 2)[0] - PKEY_JOB_FLAG    # job_of, inlined
    if not 0 < job <= MAX_JOB:
        job = FOREIGN_JOB
    qp, psn = _BTH_QP_PSN.unpack_from(pkt, b + 4)
    return RoceHeader(ihl, pkt[1] & 3, opcode, job, (qp >> 16) & 0xFF,
                      qp & STEP_MASK, psn & PSN_MASK, opcode in LAST_OPCODES)


def ipv4_checksum(header: ByteView) -> int:
    """Internet checksum of an IPv4 header whose checksum field is zero."""
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mark_ce(pkt: bytearray) -> None:
    """Set ECN CE in an IPv4 packet in place and fix the header checksum (RFC 1624)."""
    _set_tos(pkt, pkt[1] | ECN_CE)


def set_dscp(pkt: bytearray, dscp: int) -> None:
    """Rewrite the DSCP of an IPv4 packet in place, keeping ECN; checksum fixed."""
    _set_tos(pkt, (dscp << 2) | (pkt[1] & 3))


def _set_tos(pkt: bytearray, tos: int) -> None:
    """Only the first header word (version/IHL/TOS) changes, so the checksum is updated
    incrementally: HC' = ~(~HC + ~m + m')."""
    old = (pkt[0] << 8) | pkt[1]
    pkt[1] = tos
    new = (pkt[0] << 8) | pkt[1]
    hc = (pkt[10] << 8) | pkt[11]
    s = (~hc & 0xFFFF) + (~old & 0xFFFF) + new
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    hc = ~s & 0xFFFF
    pkt[10] = hc >> 8
    pkt[11] = hc & 0xFF


def verify_icrc(pkt: ByteView) -> bool:
    """Check the ICRC of a whole IPv4/UDP RoCE packet (as captured on the wire)."""
    ihl = (pkt[0] & 0x0F) << 2
    (_, _, total, ip_id, flags_frag, _, _, _, src, dst) = IPV4.unpack_from(pkt)
    sport, dport = _PORTS.unpack_from(pkt, ihl)
    body = pkt[ihl + UDP_HEADER_BYTES:total - ICRC_BYTES]
    (got,) = ICRC.unpack_from(pkt, total - ICRC_BYTES)
    return got == icrc(src, dst, sport, dport, body, ip_id=ip_id, ip_flags_frag=flags_frag,
                       ip_options=bytes(pkt[IPV4_HEADER_BYTES:ihl]))


# --- scapy view (tests, capture analysis; never on the hot path) ---------------------

def scapy_view(pkt: bytes):
    """Dissect an IPv4 packet with scapy's own RoCE layers (``scapy.contrib.roce``)."""
    from scapy.layers.inet import IP
    import scapy.contrib.roce  # noqa: F401  (binds UDP dport 4791 -> BTH)
    return IP(pkt)
