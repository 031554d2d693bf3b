"""Paced RoCEv2-framed UDP streams without a transport: a traffic source and sink for
probing the fabric and the switch agents (tests, background load).

    python -m hosts.blast send --src 10.0.0.2 --dst 10.0.1.2 --job 1 --step 0 \\
        --packets 300 --rate-bps 8e6 [--flows 4] [--sport 49152] [--ecn ect0|not-ect]
    python -m hosts.blast recv --bind 10.0.1.2 [--timeout 30] [--idle 1.0]

``send`` paces packets at ``--rate-bps`` (IP bytes) round-robin over ``--flows`` flows
(consecutive UDP source ports, so ECMP may put them on different paths); each flow's
packets carry PSN 0.. and the last one is SEND LAST. ``recv`` counts, per
(job, step), packets, bytes and CE marks (read from each datagram's TOS), checks every
ICRC, and prints one JSON summary when the stream has been idle for ``--idle`` s.
This module is deliberately not the reliable transport (see docs/architecture.md §3.1): it never
retransmits, so what it reports is exactly what the fabric delivered.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

from runtime import wire

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
ECN_NAMES = {"ect0": wire.ECN_ECT0, "ect1": wire.ECN_ECT1, "not-ect": wire.ECN_NOT_ECT}


def open_sender(src_ip: str, sport: int, ecn: int = wire.ECN_ECT0) -> socket.socket:
    """An unconnected UDP socket with DF set (so Linux writes IP ID 0, which the ICRC
    assumes) and the given ECN codepoint on every datagram."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ecn)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((src_ip, sport))
    return s


def send(src_ip: str, dst_ip: str, *, job: int, step: int, packets: int, rate_bps: float,
         flows: int = 1, sport: int = 49152, channel: int = 0, payload_bytes: int = 4096,
         ecn: int = wire.ECN_ECT0, last: bool = True, start_delay_s: float = 0.0) -> dict:
    socks = [open_sender(src_ip, sport + f, ecn) for f in range(flows)]
    payload = bytes(payload_bytes)
    # Precompute each flow's packets so pacing is not disturbed by building them.
    frames = []
    for f in range(flows):
        for psn in range(packets):
            op = wire.data_opcode(psn, packets) if last else (
                wire.OP_SEND_FIRST if psn == 0 else wire.OP_SEND_MIDDLE)
            body = wire.build_data(job, channel, step, psn, op, payload)
            frames.append((psn, f, wire.with_icrc(src_ip, dst_ip, sport + f, body)))
    frames.sort(key=lambda x: (x[0], x[1]))           # round-robin over flows
    gap_s = (len(frames[0][2]) + wire.IPV4_HEADER_BYTES + wire.UDP_HEADER_BYTES) * 8 / rate_bps
    time.sleep(start_delay_s)
    t0 = time.monotonic()
    t_next = t0
    late_s = 0.0
    for _, f, frame in frames:
        now = time.monotonic()
        if t_next > now:
            time.sleep(t_next - now)
        else:
            late_s = max(late_s, now - t_next)
        socks[f].sendto(frame, (dst_ip, wire.ROCE_UDP_PORT))
        t_next += gap_s
    elapsed = time.monotonic() - t0
    for s in socks:
        s.close()
    return {"sent": len(frames), "elapsed_s": elapsed, "max_late_s": late_s,
            "rate_bps": len(frames) * (len(frames[0][2]) + 28) * 8 / elapsed if elapsed else 0.0}


def recv(bind_ip: str, *, timeout_s: float = 30.0, idle_s: float = 1.0) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    s.bind((bind_ip, wire.ROCE_UDP_PORT))
    s.settimeout(0.1)
    print(json.dumps({"ready": True}), flush=True)
    per_step: dict[str, dict] = {}
    bad_icrc = 0
    other = 0
    deadline = time.monotonic() + timeout_s
    last_rx = None
    dst = socket.inet_aton(bind_ip)
    while time.monotonic() < deadline:
        if last_rx is not None and time.monotonic() - last_rx > idle_s:
            break
        try:
            data, anc, _, (src, sport) = s.recvmsg(65536, socket.CMSG_SPACE(4))
        except socket.timeout:
            continue
        last_rx = time.monotonic()
        tos = 0
        for level, kind, value in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                tos = value[0]
        if len(data) < wire.BTH_BYTES + wire.ICRC_BYTES or data[0] not in wire.DATA_OPCODES:
            other += 1
            continue
        bth = wire.parse_bth(data)
        body = data[:-wire.ICRC_BYTES]
        crc = wire.ICRC.unpack_from(data, len(data) - wire.ICRC_BYTES)[0]
        if crc != wire.icrc(socket.inet_aton(src), dst, sport, wire.ROCE_UDP_PORT, body):
            bad_icrc += 1
        key = f"{wire.job_of(bth.pkey)}/{wire.step_of(bth.dqpn)}"
        st = per_step.setdefault(key, {"pkts": 0, "bytes": 0, "ce": 0, "last": 0, "sports": [],
                                       "t_first": last_rx, "psn_times": {}})
        st["t_last"] = last_rx
        st["psn_times"][bth.psn] = last_rx
        st["pkts"] += 1
        st["bytes"] += len(data)
        st["ce"] += (tos & 3) == wire.ECN_CE
        st["last"] += bth.opcode in wire.LAST_OPCODES
        if sport not in st["sports"]:
            st["sports"].append(sport)
    s.close()
    for st in per_step.values():            # arrival time of the PSN range's 95th percentile
        times = sorted(st.pop("psn_times").values())
        st["t_p95"] = times[int(0.95 * (len(times) - 1))]
    return {"steps": per_step, "bad_icrc": bad_icrc, "other": other}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hosts.blast", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("send", help="send paced RoCE data packets")
    a.add_argument("--src", required=True)
    a.add_argument("--dst", required=True)
    a.add_argument("--job", type=int, default=1)
    a.add_argument("--step", type=int, default=0)
    a.add_argument("--channel", type=int, default=0)
    a.add_argument("--packets", type=int, required=True, help="packets per flow")
    a.add_argument("--flows", type=int, default=1)
    a.add_argument("--rate-bps", type=float, required=True, help="total rate, IP bytes")
    a.add_argument("--sport", type=int, default=49152, help="first UDP source port")
    a.add_argument("--payload", type=int, default=wire.DEFAULT_MTU_BYTES)
    a.add_argument("--ecn", choices=sorted(ECN_NAMES), default="ect0")
    a.add_argument("--no-last", action="store_true", help="never send SEND LAST")
    a.add_argument("--delay", type=float, default=0.0, help="start after this many seconds")
    b = sub.add_parser("recv", help="count what arrives on UDP 4791")
    b.add_argument("--bind", required=True)
    b.add_argument("--timeout", type=float, default=30.0)
    b.add_argument("--idle", type=float, default=1.0)
    args = ap.parse_args(argv)
    if args.mode == "send":
        if args.packets < 1 or args.flows < 1 or args.rate_bps <= 0:
            ap.error("--packets and --flows must be >= 1 and --rate-bps > 0")
        out = send(args.src, args.dst, job=args.job, step=args.step, packets=args.packets,
                   rate_bps=args.rate_bps, flows=args.flows, sport=args.sport,
                   channel=args.channel, payload_bytes=args.payload, ecn=ECN_NAMES[args.ecn],
                   last=not args.no_last, start_delay_s=args.delay)
    else:
        out = recv(args.bind, timeout_s=args.timeout, idle_s=args.idle)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
