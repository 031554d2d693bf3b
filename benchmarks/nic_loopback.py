"""The host NIC's own cost per data packet, without the fabric and without sleeping
(issue 15): two NICs on loopback addresses in one process, a busy loop polling both,
messages of 2000 x 4 KB at line rate far above what Python can send, so the loop never
waits. Prints process CPU per data packet (sending it, receiving it, and its share of the
ACKs), for each congestion control. No root.

    .venv/bin/python benchmarks/nic_loopback.py [--messages 3] [--packets 2000]

Against ``benchmarks/host_cpu.py`` (a host process in the emulated fabric): the
difference is what waking up and the fabric's kernel path cost the host processes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hosts.cc import ALGORITHMS, CcConfig  # noqa: E402
from hosts.config import TransportParams  # noqa: E402
from hosts.nic import Nic  # noqa: E402
from runtime.scale import Scale  # noqa: E402

_NET = f"127.{110 + (os.getpid() >> 16 & 7)}.{os.getpid() >> 8 & 255}"
A, B = f"{_NET}.{(os.getpid() % 127) * 2 + 1}", f"{_NET}.{(os.getpid() % 127) * 2 + 2}"


def measure(cc_name: str, messages: int, packets: int) -> tuple[float, dict]:
    cc = CcConfig.default(cc_name, 10e9, Scale(20))       # 500 Mb/s: never the limit
    tp = TransportParams(rto_s=0.2, nak_timeout_s=0.05)
    got = []
    tx = Nic(A, cc.params.line_rate_bps, cc, tp)
    rx = Nic(B, cc.params.line_rate_bps, cc, tp, on_message=lambda f, m: got.append(len(m)))
    data = bytes(tp.mtu_bytes * packets)
    try:
        t = time.process_time()
        for step in range(messages):
            tx.send(B, 1, 0, step, data)
            while len(got) <= step or tx.busy:
                tx.poll(0)
                rx.poll(0)
        cpu = time.process_time() - t
    finally:
        tx.close()
        rx.close()
    return cpu / tx.counters["data_tx"], dict(tx.counters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--messages", type=int, default=3)
    ap.add_argument("--packets", type=int, default=2000)
    args = ap.parse_args()
    for name in ALGORITHMS:
        per, c = measure(name, args.messages, args.packets)
        print(f"{name:<12} {per * 1e6:6.1f} µs CPU per data packet (send + receive + ACK "
              f"share; {c['data_tx']} packets, {c['ack_rx']} ACKs, "
              f"{c['data_tx'] - args.messages * args.packets} resent)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
