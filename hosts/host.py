"""A host process without any collective: send given messages, receive and verify others.

    python -m hosts.host --config h0.json

The configuration: a ``hosts.config.HostConfig`` with ``sends`` and ``receives`` (each a
``MessageConfig``: peer IP, bytes, job, channel, step; a send's ``start_s`` after t = 0),
written by the launcher; all times and rates emulated (``hosts.scale``).

Message contents are pseudo-random bytes from a seed derived from (job, channel, step,
sender, receiver), so the receiver checks every byte without the data being shipped
around. The process prints one JSON summary and exits 0 only if every send was
acknowledged and every expected message arrived exactly once and byte-exact.
"""

from __future__ import annotations

import json
import sys
import time
import zlib

import numpy as np

from hosts.config import HostConfig
from hosts.nic import Nic
from hosts.process import config_main
from hosts.telemetry import Telemetry


def message_bytes(job: int, channel: int, step: int, src: str, dst: str, nbytes: int) -> bytes:
    """The deterministic content of one test message."""
    seed = zlib.crc32(f"{job}/{channel}/{step}/{src}/{dst}".encode())
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


def run(cfg: HostConfig, wait_start) -> dict:
    tele = Telemetry(cfg.telemetry_path)
    expected = {}
    for r in cfg.receives:
        key = (r.peer, r.job, r.channel, r.step)
        if key in expected:
            raise ValueError(f"receive {key} listed twice")
        expected[key] = r.bytes
    got: dict[tuple, str] = {}

    def on_message(flow, message: bytes) -> None:
        key = (flow.peer, flow.job, flow.channel, flow.step)
        if key not in expected:
            got[key] = "unexpected"
        elif key in got:
            got[key] = "duplicate"
        elif message != message_bytes(flow.job, flow.channel, flow.step, flow.peer, cfg.ip,
                                      expected[key]):
            got[key] = f"corrupt ({len(message)} of {expected[key]} bytes)"
        else:
            got[key] = "ok"
        progress()

    def progress(*_):
        done = len(completed) + len(got)
        print(json.dumps({"progress": done, "of": cfg.total_steps}), flush=True)

    def sent(flow):
        completed.append(flow)
        progress()

    nic = Nic(cfg.ip, cfg.line_rate_bps, cfg.cc, cfg.transport, on_message=on_message,
              telemetry=tele)
    sends = sorted(cfg.sends, key=lambda s: s.start_s)
    completed = []
    try:
        t0 = wait_start()
        deadline = t0 + cfg.timeout_s
        pending = list(sends)
        while time.monotonic() < deadline:
            now = time.monotonic()
            while pending and now >= t0 + pending[0].start_s:
                s = pending.pop(0)
                data = message_bytes(s.job, s.channel, s.step, cfg.ip, s.peer, s.bytes)
                nic.send(s.peer, s.job, s.channel, s.step, data,
                         on_complete=sent, sport=s.sport)
            if not pending and not nic.busy and len(got) >= len(expected):
                break
            wait = (t0 + pending[0].start_s - now) if pending else 0.05
            nic.poll(max(0.0, min(wait, 0.05)))
        # Linger briefly so a peer's retransmission of our last ACK's loss can be re-ACKed.
        linger = time.monotonic() + cfg.linger_s
        while time.monotonic() < linger:
            nic.poll(0.02)
    finally:
        stats = nic.stats()
        nic.close()
    missing = [list(k) for k in expected if k not in got]
    bad = {"/".join(map(str, k)): v for k, v in got.items() if v != "ok"}
    summary = {"type": "host_summary", "name": cfg.name, "ip": cfg.ip,
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
