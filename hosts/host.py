"""A host process without any collective: send given messages, receive and verify others.

    python -m hosts.host --config h0.json

The configuration (JSON; all times and rates emulated, see ``hosts.scale``)::

    {"name": "h0", "ip": "10.0.0.2", "line_rate_bps": 1e7,
     "dcqcn": {"variant": "paper", "line_rate_bps": 1e7, ...},   # hosts.dcqcn.DcqcnParams
     "transport": {"mtu_bytes": 4096, "ack_every": 8, ...},      # hosts.nic.TransportParams
     "start_at": 12345.6,              # time.monotonic() at which t = 0 (shared by all hosts)
     "timeout_s": 60,
     "telemetry_path": "run/h0.jsonl",
     "sends":    [{"peer": "10.0.1.2", "bytes": 1000000, "start_s": 0.0,
                   "job": 1, "channel": 0, "step": 0}],
     "receives": [{"peer": "10.0.0.2", "bytes": 1000000, "job": 1, "channel": 0, "step": 0}]}

Message contents are pseudo-random bytes from a seed derived from (job, channel, step,
sender, receiver), so the receiver checks every byte without the data being shipped
around. The process prints one JSON summary and exits 0 only if every send was
acknowledged and every expected message arrived exactly once and byte-exact.
"""

from __future__ import annotations

import sys
import time
import zlib

import numpy as np

from hosts.dcqcn import DcqcnParams
from hosts.nic import Nic, TransportParams
from hosts.process import Telemetry, config_main


def message_bytes(job: int, channel: int, step: int, src: str, dst: str, nbytes: int) -> bytes:
    """The deterministic content of one test message."""
    seed = zlib.crc32(f"{job}/{channel}/{step}/{src}/{dst}".encode())
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


def run(cfg: dict) -> dict:
    tele = Telemetry(cfg.get("telemetry_path"))
    expected = {}
    for r in cfg.get("receives", []):
        key = (r["peer"], r["job"], r["channel"], r["step"])
        if key in expected:
            raise ValueError(f"receive {key} listed twice")
        expected[key] = r["bytes"]
    got: dict[tuple, str] = {}

    def on_message(flow, message: bytes) -> None:
        key = (flow.peer, flow.job, flow.channel, flow.step)
        if key not in expected:
            got[key] = "unexpected"
        elif key in got:
            got[key] = "duplicate"
        elif message != message_bytes(flow.job, flow.channel, flow.step, flow.peer, cfg["ip"],
                                      expected[key]):
            got[key] = f"corrupt ({len(message)} of {expected[key]} bytes)"
        else:
            got[key] = "ok"

    dcqcn = DcqcnParams(**cfg["dcqcn"])
    nic = Nic(cfg["ip"], cfg["line_rate_bps"], dcqcn, TransportParams(**cfg.get("transport", {})),
              on_message=on_message, telemetry=tele)
    sends = sorted(cfg.get("sends", []), key=lambda s: s["start_s"])
    completed = []
    t0 = cfg.get("start_at", time.monotonic())
    deadline = t0 + cfg.get("timeout_s", 60)
    pending = list(sends)
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            while pending and now >= t0 + pending[0]["start_s"]:
                s = pending.pop(0)
                data = message_bytes(s["job"], s["channel"], s["step"], cfg["ip"], s["peer"],
                                     s["bytes"])
                nic.send(s["peer"], s["job"], s["channel"], s["step"], data,
                         on_complete=completed.append, sport=s.get("sport"))
            if not pending and not nic.busy and len(got) >= len(expected):
                break
            wait = (t0 + pending[0]["start_s"] - now) if pending else 0.05
            nic.poll(max(0.0, min(wait, 0.05)))
        # Linger briefly so a peer's retransmission of our last ACK's loss can be re-ACKed.
        linger = time.monotonic() + cfg.get("linger_s", 0.3)
        while time.monotonic() < linger:
            nic.poll(0.02)
    finally:
        stats = nic.stats()
        nic.close()
    missing = [list(k) for k in expected if k not in got]
    bad = {"/".join(map(str, k)): v for k, v in got.items() if v != "ok"}
    summary = {"type": "host_summary", "name": cfg.get("name"), "ip": cfg["ip"],
               "sends": len(sends), "sends_completed": len(completed),
               "receives": len(expected), "receives_ok": sum(v == "ok" for v in got.values()),
               "missing": missing, "bad": bad, **stats,
               "ok": len(completed) == len(sends) and not missing and not bad}
    tele.write(summary)
    tele.close()
    return summary


def main(argv: list[str] | None = None) -> int:
    return config_main("python -m hosts.host", __doc__, run, argv)


if __name__ == "__main__":
    sys.exit(main())
