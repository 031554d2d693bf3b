"""``background``: iperf3 UDP (non-RoCE) traffic ``src`` -> ``dst`` at ``rate_gbps`` from
``start_ms`` for ``duration_ms``; live, at once (until undone without ``duration_ms``)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field

from emulator.perturbations.base import Context, Perturbation, Timed
from runtime import wire

BACKGROUND_PORT = 5201          # iperf3 port of the first background flow (+1 each)
PAYLOAD_BYTES = 1400            # iperf3's datagrams (-l 1400), and the simulator's


@dataclass
class Background(Perturbation):
    """iperf3 UDP (non-RoCE) traffic ``src`` -> ``dst`` at ``rate_bps``, 1400-byte
    datagrams: ``nbytes`` in all, or until undone (None). ``port``: iperf3's port."""
    src: str
    dst: str
    rate_bps: float
    nbytes: int | None
    port: int
    procs: list = field(default_factory=list, init=False)
    _log: object = field(default=None, init=False)
    _server: object = field(default=None, init=False)

    kind = "background"
    keys = frozenset({"src", "dst", "rate_gbps", "start_ms", "duration_ms"})
    required = ("src", "dst", "rate_gbps", "duration_ms")
    timing_keys = ("start_ms",)
    live = 4
    simulated = True
    processes = 2                        # iperf3's server and client

    @classmethod
    def check(cls, p, need, topo, job_hosts) -> None:
        need(p.src != p.dst, "dst", p.dst, "must differ from src")
        need(0 < p.rate_gbps <= topo.link_rate_gbps, "rate_gbps", p.rate_gbps,
             f"must be in (0, link rate {topo.link_rate_gbps}]")

    @classmethod
    def live_entry(cls, kv: dict) -> tuple[dict, bool]:
        open_ended = "duration_ms" not in kv
        entry = {"kind": cls.kind, **kv}
        if open_ended:
            entry["duration_ms"] = 1.0          # checked only: it runs until undone
        return entry, open_ended

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "Background":
        sc = ctx.scale
        bg_rate = sc.rate_bps(p.rate_gbps * 1e9)
        nbytes = int(bg_rate / 8 * sc.time_s(p.duration_ms * 1e-3)) if p.duration_ms else None
        return cls(p.src, p.dst, bg_rate, nbytes, BACKGROUND_PORT + ctx.index)

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple:
        return (Timed(ctx.scale.time_s(p.start_ms * 1e-3), cls.from_spec(p, ctx)),)

    def prepare(self, fab, rundir: str) -> None:
        self._log = open(os.path.join(rundir, f"background{self.port}.log"), "a")
        dst = fab[self.dst]
        self._server = dst.popen(["iperf3", "-s", *(["-1"] if self.nbytes else []),
                                  "-B", dst.IP(), "-p", str(self.port)],
                                 stdout=self._log, stderr=subprocess.STDOUT)
        self.procs.append(self._server)
        time.sleep(0.3)                          # the server listens before a client starts

    def apply(self, fab) -> str:
        src, dst = fab[self.src], fab[self.dst]
        amount = ["-n", str(self.nbytes)] if self.nbytes is not None else ["-t", "86400"]
        self.procs.append(src.popen(["iperf3", "-c", dst.IP(), "-B", src.IP(), "-p",
                                     str(self.port), "-u", "-b", str(int(self.rate_bps)),
                                     "-l", str(PAYLOAD_BYTES), *amount],
                                    stdout=self._log, stderr=subprocess.STDOUT))
        what = f"background {self.src}->{self.dst} {self.rate_bps / 1e6:g} Mbit/s"
        return what + (f", {self.nbytes} B" if self.nbytes is not None else "")

    def undo(self, fab) -> str:
        self.close()
        return f"background {self.src}->{self.dst} stopped"

    def close(self) -> None:
        from topologies import fabric   # emulation only: Mininet's nodes
        for p in self.procs:
            fabric.stop_process(p, 5)
        self.procs.clear()
        if self._log is not None:
            self._log.close()
            self._log = None

    def to_model(self, e, m) -> None:
        from emulator.model.records import BackgroundStream
        duration = self.nbytes * 8 / self.rate_bps if self.nbytes is not None else float("inf")
        m.background.append(BackgroundStream(self.src, self.dst, self.rate_bps, e.t_s, duration))

    def simulate(self, net, e, t: float) -> None:
        """iperf3's UDP stream as the emulator starts it: ``PAYLOAD_BYTES`` datagrams at
        ``rate_bps`` from ``src``'s interface, ``nbytes`` in all or until undone; not
        RoCE (its own port), so the agents only queue it and the far host drops it."""
        state = net.background.setdefault(self.port, {"sent": 0, "on": False})
        if e.undo:
            state["on"] = False
            return
        state["on"] = True
        src_ip, dst_ip = net.fab.host_ips[self.src], net.fab.host_ips[self.dst]
        pkt = wire.build_ip_packet(src_ip, dst_ip, self.port, bytes(PAYLOAD_BYTES),
                                   dport=self.port, ecn=wire.ECN_NOT_ECT)
        gap = (len(pkt) + 14) * 8 / self.rate_bps
        port = net.ports[(self.src, net.fab.host_leaf[self.src])]

        def send(now: float) -> None:
            if not state["on"] or (self.nbytes is not None and state["sent"] >= self.nbytes):
                return
            port.offer(pkt, now)
            state["sent"] += PAYLOAD_BYTES
            net.loop.at(now + gap, send)
        send(t)
