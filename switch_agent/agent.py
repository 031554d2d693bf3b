"""The switch agent process: one per switch namespace, on NFQUEUE (docs/architecture.md §5).

    python -m switch_agent --config s1.json

The thin shell around :class:`switch_agent.pipeline.SwitchPipeline`: it binds the
namespace's NFQUEUE queue, hands every forwarded packet to the pipeline with the
egress port and the time, sends the verdicts, samples the port queues, answers the
control socket and writes telemetry. SIGTERM/SIGINT end it cleanly with a ``final``
telemetry record.

The configuration file: a ``switch_agent.config.AgentConfig`` as JSON, compiled by the
run plan and completed (ports, paths) by ``topologies.fabric`` when the switch starts::

    {"switch": "s1", "scheme": "symphony", "seed": 1, "queue_num": 0,
     "ports": {"s1-eth1": {"rate_bps": 1e7, "buffer_bytes": 262144, "burst_bytes": 9100}},
     "red": {"enabled": true, "kmin_bytes": 50000, "kmax_bytes": 100000, "pmax": 0.2},
     "symphony": {"k": 0.01, "tau": 0.25, "t_win_s": 0.1, "n_warmup": 2, "n_sample": 8,
                  "tracking": "job"},
     "drop_fraction": 0.0, "sample_interval_s": 0.01, "kernel_sample_interval_s": 0.1,
     "telemetry_path": "run/s1.jsonl", "control_path": "run/s1.ctl"}

All times and rates are emulated values (already scaled; see ``hosts.scale``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import select
import signal
import socket
import sys
import time
from dataclasses import replace

from switch_agent.fidelity import PortFidelity
from switch_agent.kernel_queues import KernelQueues
from switch_agent.nfqueue import NfQueue, queue_stats
from hosts.config import to_dict
from switch_agent.config import AgentConfig
from switch_agent.pipeline import Port, SwitchPipeline
from switch_agent.queue_model import EgressQueue
from switch_agent.symphony import SymphonyTracker, WindowRecord
from hosts.telemetry import Telemetry

SYMPHONY_KEYS = ("k", "tau", "t_win_s", "n_warmup", "n_sample")   # live-reconfigurable


class Agent:
    def __init__(self, cfg: AgentConfig):
        self.cfg = cfg
        self.telemetry = Telemetry(cfg.telemetry_path)
        ports = {}
        for name, p in cfg.ports.items():
            ports[socket.if_nametoindex(name)] = Port(name, EgressQueue(p.rate_bps, p.buffer_bytes,
                                                                 p.burst_bytes))
        self.pipeline = SwitchPipeline(ports, cfg.red, SymphonyTracker(cfg.symphony),
                                       random.Random(cfg.seed).random, scheme=cfg.scheme,
                                       tracking=cfg.symphony.tracking,
                                       drop_fraction=cfg.drop_fraction, on_window=self._window)
        self.fidelity = {ifindex: PortFidelity(cfg.ports[p.name].rate_bps)
                         for ifindex, p in ports.items()}
        self.kernel: KernelQueues | None = None
        self.running = True
        self.nfq: NfQueue | None = None
        self.ctl: socket.socket | None = None

    # --- telemetry --------------------------------------------------------------
    def _window(self, rec: WindowRecord, marks_red: int, marks_symphony: int) -> None:
        r = rec._asdict()
        r["t_s"] = r.pop("t_start_s")
        self.telemetry.write({"type": "window", **r, "marks_red": marks_red,
                              "marks_symphony": marks_symphony})

    def _sample_ports(self, now: float) -> None:
        """One ``port`` record per port that had traffic or a queue since the last sample
        (an idle port's queue is zero and its counters unchanged: nothing to write)."""
        for port in self.pipeline.ports.values():
            q = port.queue.backlog(now)
            c = port.counters
            if c.pkts == port.sampled_pkts and q == 0.0 and port.window_max_q_bytes == 0.0:
                continue
            port.sampled_pkts = c.pkts
            self.telemetry.write({"type": "port", "t_s": now, "port": port.name, "q_bytes": q,
                                  "max_q_bytes": max(q, port.window_max_q_bytes),
                                  "pkts": c.pkts, "bytes": c.bytes,
                                  "marks": c.marks_red + c.marks_symphony + c.marks_both,
                                  "model_drops": c.model_drops, "fault_drops": c.fault_drops})
            port.window_max_q_bytes = q

    def _sample_kernel(self, now: float) -> None:
        """The kernel's qdiscs next to the model, for the fidelity monitor; a ``kernel_q``
        record per port with a queue in either (to see where the model departs)."""
        for ifindex, k in self.kernel.sample(self.fidelity).items():
            model = self.pipeline.ports[ifindex].queue.backlog(now)
            self.fidelity[ifindex].sample(now, model, k.backlog_bytes, k.sent_bytes)
            if model or k.backlog_bytes:
                self.telemetry.write({"type": "kernel_q", "t_s": now,
                                      "port": self.pipeline.ports[ifindex].name,
                                      "model_bytes": model, "kernel_bytes": k.backlog_bytes,
                                      "sent_bytes": k.sent_bytes, "drops": k.drops})

    def stats(self) -> dict:
        now = time.monotonic()
        tracker = self.pipeline.tracker
        return {"switch": self.cfg.switch, "t_s": now,
                "scheme": self.pipeline.scheme.name,
                "symphony": {"enabled": self.pipeline.symphony_enabled,
                             **to_dict(tracker.params)},
                "red": to_dict(self.pipeline.red), "drop_fraction": self.pipeline.drop_fraction,
                "jobs": {str(j): {"step_min": s.step_min, "psn_rec": s.psn_rec, "alpha": s.alpha,
                                  "cnt_total": s.cnt_total, "cnt_op": s.cnt_op}
                         for j, s in tracker.jobs.items()},
                "queues": {p.name: p.queue.backlog(now) for p in self.pipeline.ports.values()},
                "counters": self.pipeline.totals(),
                "fidelity": {self.pipeline.ports[i].name: f.summary()
                             for i, f in self.fidelity.items()},
                "nfqueue": {**queue_stats(self.cfg.queue_num),
                            "agent_enobufs": self.nfq.enobufs if self.nfq else 0}}

    # --- control ---------------------------------------------------------------
    def _command(self, cmd: dict) -> dict:
        kind = cmd.get("cmd")
        if kind == "stats":
            return {"ok": True, **self.stats()}
        if kind == "symphony":
            params = {k: cmd[k] for k in SYMPHONY_KEYS if k in cmd}
            unknown = set(cmd) - set(SYMPHONY_KEYS) - {"cmd", "enabled"}
            if unknown:
                raise ValueError(f"unknown symphony keys {sorted(unknown)}; "
                                 f"allowed: enabled, {', '.join(SYMPHONY_KEYS)}")
            self.pipeline.tracker.configure(**params)
            if "enabled" in cmd:
                self.pipeline.set_symphony(bool(cmd["enabled"]))
            return {"ok": True, "enabled": self.pipeline.symphony_enabled, **params}
        if kind == "red":
            changes = {k: v for k, v in cmd.items() if k != "cmd"}
            self.pipeline.red = replace(self.pipeline.red, **changes)
            return {"ok": True, **to_dict(self.pipeline.red)}
        if kind == "port_rate":
            port = next((i for i, p in self.pipeline.ports.items() if p.name == cmd.get("port")),
                        None)
            if port is None:
                raise ValueError(f"unknown port {cmd.get('port')!r}; ports: "
                                 f"{', '.join(p.name for p in self.pipeline.ports.values())}")
            rate = float(cmd["rate_bps"])
            self.pipeline.ports[port].queue.set_rate(rate, time.monotonic())
            self.fidelity[port].rate_bps = rate
            return {"ok": True, "port": cmd["port"], "rate_bps": rate}
        if kind == "drop_fraction":
            self.pipeline.set_drop_fraction(float(cmd["value"]))
            return {"ok": True, "drop_fraction": self.pipeline.drop_fraction}
        raise ValueError(f"unknown command {kind!r}; allowed: stats, symphony, red, port_rate, "
                         "drop_fraction")

    def _serve_control(self) -> None:
        try:
            data, peer = self.ctl.recvfrom(65536)
        except BlockingIOError:
            return
        try:
            cmd = json.loads(data)
            reply = self._command(cmd)
        except (ValueError, TypeError, KeyError) as e:
            cmd, reply = data.decode(errors="replace"), {"ok": False, "error": str(e)}
        if not (isinstance(cmd, dict) and cmd.get("cmd") == "stats"):
            self.telemetry.write({"type": "control", "t_s": time.monotonic(), "command": cmd,
                                  "reply": reply})
        if peer:
            try:
                self.ctl.sendto(json.dumps(reply).encode(), peer)
            except OSError:
                pass

    # --- main loop --------------------------------------------------------------
    def run(self) -> int:
        cfg = self.cfg
        self.nfq = NfQueue(cfg.queue_num)
        if cfg.control_path:
            if os.path.exists(cfg.control_path):
                os.unlink(cfg.control_path)
            self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.ctl.bind(cfg.control_path)
            self.ctl.setblocking(False)
        self.telemetry.write({"type": "start", "t_s": time.monotonic(), "pid": os.getpid(),
                              "config": cfg.to_dict()})
        self.telemetry.flush()
        poller = select.poll()
        poller.register(self.nfq.fileno(), select.POLLIN)
        if self.ctl:
            poller.register(self.ctl.fileno(), select.POLLIN)
        nfq_fd = self.nfq.fileno()
        handle = self.pipeline.handle
        monotonic = time.monotonic
        process = self.nfq.process
        interval = cfg.sample_interval_s
        next_sample = monotonic() + interval
        k_interval = cfg.kernel_sample_interval_s
        if k_interval > 0:
            self.kernel = KernelQueues()
        next_kernel = monotonic() + k_interval if self.kernel else float("inf")
        next_flush = monotonic() + 0.5

        try:
            while self.running:
                timeout_ms = max(0, int((next_sample - monotonic()) * 1000) + 1)
                try:
                    events = poller.poll(timeout_ms)
                except InterruptedError:
                    continue
                for fd, _ in events:
                    if fd == nfq_fd:
                        process(handle, clock=monotonic)
                    else:
                        self._serve_control()
                now = monotonic()
                if now >= next_sample:
                    self._sample_ports(now)
                    next_sample = now + interval
                if now >= next_kernel:
                    self._sample_kernel(now)
                    next_kernel = now + k_interval
                if now >= next_flush:
                    self.telemetry.flush()
                    next_flush = now + 0.5
        finally:
            self._shutdown()
        return 0

    def _shutdown(self) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        final = {"type": "final", "t_s": time.monotonic(), **self.stats(),
                 "max_rss_bytes": usage.ru_maxrss * 1024, "cpu_s": usage.ru_utime + usage.ru_stime}
        if self.nfq is not None:
            self.nfq.close()
        if self.kernel is not None:
            self.kernel.close()
        if self.ctl is not None:
            self.ctl.close()
            try:
                os.unlink(self.cfg.control_path)
            except FileNotFoundError:
                pass
        self.telemetry.write(final)
        self.telemetry.write({"type": "flow_ports", "switch": self.cfg.switch, "flows": [
            [job, channel, step, socket.inet_ntoa(ips[:4]), socket.inet_ntoa(ips[4:]), port]
            for (job, channel, step, ips), port in self.pipeline.flow_ports.items()]})
        self.telemetry.close()

    def stop(self, *_):
        self.running = False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m switch_agent", description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="agent configuration (JSON)")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = AgentConfig.from_dict(json.load(f))
    agent = Agent(cfg)
    signal.signal(signal.SIGTERM, agent.stop)
    signal.signal(signal.SIGINT, agent.stop)
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
