"""A host process without any collective: send given messages, receive and verify others.

The configuration: a ``hosts.config.HostConfig`` with ``sends`` and ``receives`` (each a
``MessageConfig``: peer IP, bytes, job, channel, step; a send's ``start_s`` after t = 0),
written by the launcher; all times and rates emulated (``runtime.scale``). A process
(``hosts.group``) serves one or several such hosts.

Message contents are pseudo-random bytes from a seed derived from (job, channel, step,
sender, receiver), so the receiver checks every byte without the data being shipped
around. The host's summary is ok only if every send was acknowledged and every expected
message arrived exactly once and byte-exact.
"""

from __future__ import annotations

import math
import time
import zlib

import numpy as np

from hosts.config import HostConfig
from hosts.nic import Nic
from runtime.records import MessageSummary
from runtime.telemetry import Telemetry


def message_bytes(job: int, channel: int, step: int, src: str, dst: str, nbytes: int) -> bytes:
    """The deterministic content of one test message."""
    seed = zlib.crc32(f"{job}/{channel}/{step}/{src}/{dst}".encode())
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


class MessageHost:
    """One host's messages on its NIC, served by ``hosts.group``'s loop (the interface of
    ``hosts.rank.RankHost``)."""

    def __init__(self, cfg: HostConfig, nic_args: dict, say, clock=time.monotonic,
                 nic_class=Nic):
        self.cfg, self.say = cfg, say
        self.tele = Telemetry(cfg.telemetry_path)
        self.expected = {}
        for r in cfg.receives:
            key = (r.peer, r.job, r.channel, r.step)
            if key in self.expected:
                raise ValueError(f"receive {key} listed twice")
            self.expected[key] = r.bytes
        self.got: dict[tuple, str] = {}
        self.completed = []
        self.sends = sorted(cfg.sends, key=lambda s: s.start_s)
        self.pending = []
        self.t0 = 0.0
        self.nic = nic_class(cfg.ip, cfg.line_rate_bps, cfg.cc, cfg.transport,
                             on_message=self._on_message, telemetry=self.tele, clock=clock,
                             **nic_args)

    def _on_message(self, flow, message: bytes) -> None:
        key = (flow.peer, flow.job, flow.channel, flow.step)
        expected, got = self.expected, self.got
        if key not in expected:
            got[key] = "unexpected"
        elif key in got:
            got[key] = "duplicate"
        elif message != message_bytes(flow.job, flow.channel, flow.step, flow.peer,
                                      self.cfg.ip, expected[key]):
            got[key] = f"corrupt ({len(message)} of {expected[key]} bytes)"
        else:
            got[key] = "ok"
        self._progress()

    def _progress(self) -> None:
        self.say({"progress": len(self.completed) + len(self.got), "of": self.cfg.total_steps})

    def _sent(self, flow) -> None:
        self.completed.append(flow)
        self._progress()

    def start(self, t0: float) -> None:
        self.t0 = t0
        self.pending = list(self.sends)

    def service(self, now: float) -> float:
        pending, cfg = self.pending, self.cfg
        while pending and now >= self.t0 + pending[0].start_s:
            s = pending.pop(0)
            data = message_bytes(s.job, s.channel, s.step, cfg.ip, s.peer, s.bytes)
            self.nic.send(s.peer, s.job, s.channel, s.step, data, on_complete=self._sent,
                          sport=s.sport)
        t_next = self.t0 + pending[0].start_s if pending else math.inf
        return min(t_next, self.nic.service(now))

    @property
    def finished(self) -> bool:
        return not self.pending and not self.nic.busy and len(self.got) >= len(self.expected)

    def summary(self, timed_out: bool, udp: dict) -> MessageSummary:
        missing = [list(k) for k in self.expected if k not in self.got]
        bad = {"/".join(map(str, k)): v for k, v in self.got.items() if v != "ok"}
        return MessageSummary(
            name=self.cfg.name, ip=self.cfg.ip, timed_out=timed_out,
            ok=(not timed_out and len(self.completed) == len(self.sends) and not missing
                and not bad), udp=udp, **self.nic.stats(), sends=len(self.sends),
            sends_completed=len(self.completed), receives=len(self.expected),
            receives_ok=sum(v == "ok" for v in self.got.values()), missing=missing, bad=bad)
