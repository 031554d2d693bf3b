"""The switch agent process: an agent per switch, one process serving one or several
switches, on NFQUEUE (docs/architecture.md §5).

    python -m switch_agent --config leaf0.agents.json

The thin shell around :class:`switch_agent.pipeline.SwitchPipeline`: for each of its
switches (:class:`Agent`) it binds that namespace's NFQUEUE queue, hands every
forwarded packet to the switch's pipeline with the egress port and the time, sends the
verdicts, samples the port queues, answers the switch's control socket and writes its
telemetry; one loop (:func:`serve`) polls them all. SIGTERM/SIGINT end it cleanly with a
``final`` telemetry record per switch.

The configuration file: a ``switch_agent.config.AgentGroupConfig`` (each switch's
``AgentConfig`` file and a process in its namespace), written by ``topologies.fabric``;
each ``AgentConfig`` is compiled by the run plan and completed (ports, paths) by the
fabric when the switch starts::

    {"members": [{"config": "run/leaf0.agent.json", "netns_pid": 0},
                 {"config": "run/spine0.agent.json", "netns_pid": 4242}], "cpu": 0}

    {"switch": "s1", "scheme": "symphony", "seed": 1, "queue_num": 0,
     "ports": {"s1-eth1": {"rate_bps": 1e7, "buffer_bytes": 262144, "burst_bytes": 9100}},
     "red": {"enabled": true, "kmin_bytes": 50000, "kmax_bytes": 100000, "pmax": 0.2},
     "symphony": {"k": 0.01, "tau": 0.25, "t_win_s": 0.1, "n_warmup": 2, "n_sample": 8,
                  "tracking": "job"},
     "drop_fraction": 0.0, "sample_interval_s": 0.01, "kernel_sample_interval_s": 0.1,
     "telemetry_path": "run/s1.jsonl", "control_name": "symphony-emu/<run>/s1"}

All times and rates are emulated values (already scaled; see ``runtime.scale``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
from dataclasses import replace

from switch_agent.fidelity import PortFidelity
from switch_agent.kernel_queues import KernelQueues
from switch_agent.lossless import LEAD_FRAMES, LosslessPorts, headroom_for
from switch_agent.nfqueue import HOLD, NfQueue, queue_stats, want_timestamps
from switch_agent.config import AgentConfig, AgentGroupConfig
from switch_agent.control import (MAX_DATAGRAM_BYTES, SYMPHONY_KEYS, CommandError, address,
                                  parse_command)
from switch_agent.pipeline import Port, SwitchPipeline
from switch_agent.queue_model import EgressQueue
from runtime import sched
from runtime.codec import ConfigError, check, to_dict
from runtime.netns import Namespace
from runtime.records import (AgentFinal, AgentStart, Arrivals, Control, ControlError,
                             KernelQueue, PortSample)
from runtime.telemetry import Telemetry

TIMER_SLACK_S = 1e-6          # sleeps end on time (runtime.sched)
ETH_P_MAC_CONTROL = 0x8808    # 802.1Qbb PAUSE frames (runtime.pause)
SOL_PACKET = 263
PACKET_QDISC_BYPASS = 20      # a PAUSE is MAC control: it must not wait behind data
UNLIMITED_BYTES = 1 << 40     # a lossless port's queue model: the MMU decides what it takes
FLUSH_S = 0.5                 # telemetry reaches the file at least this often
MAX_LOGGED_CHARS = 200        # of a rejected datagram, in its telemetry record


def _logged(data: bytes) -> str:
    """A rejected datagram as its telemetry record keeps it: text, cut short."""
    text = data[:MAX_LOGGED_CHARS].decode("utf-8", errors="replace")
    return text + ("..." if len(data) > MAX_LOGGED_CHARS else "")


class Agent:
    """One switch's agent: its pipeline (queue model, RED, Symphony), its NFQUEUE queue,
    control socket, kernel-queue sampler and telemetry, all of its own namespace
    (``ns``: the switch's, when the process serves several switches)."""

    def __init__(self, cfg: AgentConfig, ns: Namespace | None = None):
        self.cfg = cfg
        self.ns = ns or Namespace()
        self.telemetry = Telemetry(cfg.telemetry_path)
        ports = {}
        for name, p in cfg.ports.items():
            ports[self.ns.run(socket.if_nametoindex, name)] = Port(
                name, EgressQueue(p.rate_bps, UNLIMITED_BYTES if cfg.pfc else p.buffer_bytes,
                                  p.burst_bytes),
                trace=[] if cfg.trace_arrivals else None,
                shared_buffer=p.shared_buffer and not cfg.pfc)
        self.pipeline = SwitchPipeline.from_config(cfg, ports,
                                                   on_window=self.telemetry.write)
        self.lossless: LosslessPorts | None = None
        if cfg.pfc is not None:
            lead = LEAD_FRAMES * cfg.pfc_frame_bytes
            self.lossless = LosslessPorts(
                headroom_for(cfg.pfc, lead, cfg.pfc_frame_bytes),
                {i: (p.name, p.queue, cfg.ports[p.name].rate_bps) for i, p in ports.items()},
                lead, cfg.pfc_control_priority)
        self.mac_sockets: dict[int, socket.socket] = {}    # ifindex -> its PAUSE socket
        self.fidelity = {ifindex: PortFidelity(cfg.ports[p.name].rate_bps)
                         for ifindex, p in ports.items()}
        self.kernel: KernelQueues | None = None
        self.nfq: NfQueue | None = None
        self.ctl: socket.socket | None = None
        self.control_errors = 0          # commands that hit a bug (see control())

    # --- telemetry --------------------------------------------------------------
    def _sample_ports(self, now: float) -> None:
        """One ``port`` record per port that had traffic or a queue since the last sample
        (an idle port's queue is zero and its counters unchanged: nothing to write)."""
        for port in self.pipeline.ports.values():
            q = port.queue.backlog(now)
            c = port.counters
            if c.pkts == port.sampled_pkts and q == 0.0 and port.window_max_q_bytes == 0.0:
                continue
            port.sampled_pkts = c.pkts
            self.telemetry.write(PortSample(
                t_s=now, port=port.name, q_bytes=q, max_q_bytes=max(q, port.window_max_q_bytes),
                pkts=c.pkts, bytes=c.bytes, marks=c.marks_red + c.marks_symphony + c.marks_both,
                marks_red=c.marks_red, marks_symphony=c.marks_symphony, marks_both=c.marks_both,
                model_drops=c.model_drops, fault_drops=c.fault_drops))
            port.window_max_q_bytes = q

    def _sample_kernel(self) -> None:
        """The kernel's qdiscs next to the model, for the fidelity monitor; a ``kernel_q``
        record per port with a queue in either (to see where the model departs). The
        model is read at the instant the kernel read its counters (``KernelQueues.t_s``),
        not at the loop's ``now``: a process serves several agents in turn, and one
        descheduled between the two instants found the kernel's queue drained by that gap
        (at 10 Mbit/s, 1.25 KB a ms) past the model read at the earlier one."""
        lossless = self.lossless
        samples = self.kernel.sample(self.fidelity)
        now = self.kernel.t_s
        for ifindex, k in samples.items():
            model = self.pipeline.ports[ifindex].queue.backlog(now)
            if lossless is None:
                self.fidelity[ifindex].sample(now, model, k.backlog_bytes, k.sent_bytes)
            else:
                port = lossless.ports[ifindex]
                self.fidelity[ifindex].sample(now, model, k.backlog_bytes, k.sent_bytes,
                                              port.held_bytes, port.timer.paused_s(now))
                model -= port.held_bytes        # the record compares like with like
            if model or k.backlog_bytes:
                self.telemetry.write(KernelQueue(
                    t_s=now, port=self.pipeline.ports[ifindex].name, model_bytes=model,
                    kernel_bytes=k.backlog_bytes, sent_bytes=k.sent_bytes, drops=k.drops))

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
                "nfqueue": {**queue_stats(self.cfg.queue_num,
                                          self.ns.proc_path("netfilter/nfnetlink_queue")),
                            **(self.nfq.hold_stats() if self.nfq else {}),
                            "agent_enobufs": self.nfq.enobufs if self.nfq else 0},
                "control_errors": self.control_errors}

    # --- a lossless fabric ---------------------------------------------------------
    def handle_lossless(self, pkt, outdev: int, now: float, indev: int, pid):
        """A packet on a lossless switch (``switch_agent.lossless``): dropped if the
        shared buffer cannot take it, else the pipeline's verdict, held until its port
        may send; the verdicts and PAUSE frames that became due are sent."""
        lossless = self.lossless
        if not lossless.fits(indev, len(pkt)):
            return b""
        verdict = self.pipeline.handle(pkt, outdev, now)
        lossless.arrive(bytes(pid), verdict, pkt, outdev, indev, now)
        return HOLD

    def _serve_lossless(self, _handle=None, clock=time.monotonic) -> None:
        """A burst of the queue on a lossless switch, then the verdicts and PAUSE frames
        it made due, in as few system calls as they take."""
        self.nfq.process(self.handle_lossless, clock=clock, hold=True)
        self._flush_lossless()

    def _flush_lossless(self) -> None:
        lossless = self.lossless
        if lossless.frames:
            for ifindex, frame in lossless.frames:
                try:
                    self.mac_sockets[ifindex].send(frame)
                except OSError as e:
                    self.telemetry.write(ControlError(t_s=time.monotonic(),
                                                      error=f"PAUSE send: {e!r}"))
            lossless.frames.clear()
        if lossless.verdicts:
            self.nfq.send_verdicts(lossless.verdicts)
            lossless.verdicts.clear()

    def _serve_pause(self, sock: socket.socket, ifindex: int) -> None:
        """Every PAUSE frame waiting on port ``ifindex``'s socket."""
        while True:
            try:
                frame = sock.recv(128)
            except (BlockingIOError, InterruptedError):
                break
            self.lossless.on_pause_frame(ifindex, frame, time.monotonic())
        self._flush_lossless()

    def _open_mac_sockets(self) -> None:
        """A raw socket per lossless port, for the PAUSE frames it sends (past the
        port's qdisc) and receives; each frame's source is the port's own MAC."""
        proto = socket.htons(ETH_P_MAC_CONTROL)
        for ifindex, port in self.lossless.ports.items():
            s = self.ns.socket(socket.AF_PACKET, socket.SOCK_RAW, proto)
            s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, 1)
            s.bind((port.name, ETH_P_MAC_CONTROL))
            s.setblocking(False)
            port.mac = s.getsockname()[4]
            self.mac_sockets[ifindex] = s

    # --- control ---------------------------------------------------------------
    def _command(self, kind: str, args: dict) -> dict:
        """Apply one command of ``switch_agent.control.parse_command``'s shape. Every value
        is checked by building the typed config that owns its range before anything
        changes (ConfigError names the key, the value and what is allowed)."""
        if kind == "stats":
            return {"ok": True, **self.stats()}
        if kind == "symphony":
            params = {k: args[k] for k in SYMPHONY_KEYS if k in args}
            replace(self.pipeline.tracker.params, **params)          # the checks
            enabled = args.get("enabled")
            check(enabled is None or isinstance(enabled, bool), "enabled", enabled,
                  "must be true or false")
            self.pipeline.tracker.configure(**params)
            if enabled is not None:
                self.pipeline.set_symphony(enabled)
            return {"ok": True, "enabled": self.pipeline.symphony_enabled, **params}
        if kind == "red":
            self.pipeline.red = replace(self.pipeline.red, **args)
            return {"ok": True, **to_dict(self.pipeline.red)}
        if kind == "port_rate":
            name = args["port"]
            port = next((i for i, p in self.pipeline.ports.items() if p.name == name), None)
            check(port is not None, "port", name,
                  f"must be a port of {self.cfg.switch}: "
                  f"{', '.join(self.cfg.ports) or 'it has none'}")
            rate = float(replace(self.cfg.ports[name], rate_bps=args["rate_bps"]).rate_bps)
            self.pipeline.ports[port].queue.set_rate(rate, time.monotonic())
            self.fidelity[port].rate_bps = rate
            return {"ok": True, "port": name, "rate_bps": rate}
        if kind == "drop_fraction":
            value = replace(self.cfg, drop_fraction=args["value"]).drop_fraction
            self.pipeline.set_drop_fraction(float(value))
            return {"ok": True, "drop_fraction": self.pipeline.drop_fraction}
        raise CommandError(f"{kind}: not implemented")     # COMMANDS names one more

    def control(self, data: bytes) -> tuple[object, dict]:
        """One datagram -> (what to log as the command, the reply). Never raises: this is
        the one dispatch point, and nothing a sender writes may end the agent loop."""
        kind = None
        try:
            kind, args = parse_command(data)
            return {"cmd": kind, **args}, self._command(kind, args)
        except (CommandError, ConfigError) as e:
            where = f"{kind}: " if kind and isinstance(e, ConfigError) else ""
            return _logged(data), {"ok": False, "error": where + str(e)[:500]}
        except Exception as e:       # a bug, not the sender's fault: answer, log, go on
            self.control_errors += 1
            self.telemetry.write(ControlError(
                t_s=time.monotonic(), command=_logged(data), error=repr(e)[:500],
                traceback=traceback.format_exc(limit=8)[-4000:]))
            return _logged(data), {"ok": False,
                                   "error": f"internal error {type(e).__name__}: {str(e)[:200]}"}

    def _serve_control(self) -> None:
        try:
            data, _, flags, peer = self.ctl.recvmsg(MAX_DATAGRAM_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.telemetry.write(ControlError(t_s=time.monotonic(), error=f"recv: {e!r}"))
            return
        if flags & socket.MSG_TRUNC:
            cmd, reply = _logged(data), {"ok": False, "error": "a command is at most "
                                         f"{MAX_DATAGRAM_BYTES} bytes; this one is longer"}
        else:
            cmd, reply = self.control(data)
        if not (reply.get("ok") and isinstance(cmd, dict) and cmd.get("cmd") == "stats"):
            self.telemetry.write(Control(t_s=time.monotonic(), command=cmd, reply=reply))
        if peer:
            try:
                self.ctl.sendto(json.dumps(reply).encode(), peer)
            except OSError:
                pass                 # the sender went away, or its buffer is full

    # --- main loop --------------------------------------------------------------
    def open(self) -> None:
        """Bind the switch's NFQUEUE queue and control socket and open its kernel-queue
        sampler, all in the switch's namespace."""
        cfg = self.cfg
        self.nfq = self.ns.run(NfQueue, cfg.queue_num)
        if self.lossless is not None:
            self._open_mac_sockets()
        if cfg.control_name:
            # abstract: visible only in this (the switch's) network namespace
            self.ctl = self.ns.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.ctl.bind(address(cfg.control_name))
            self.ctl.setblocking(False)
        if cfg.kernel_sample_interval_s > 0:
            self.kernel = self.ns.run(KernelQueues)
        self.telemetry.write(AgentStart(t_s=time.monotonic(), pid=os.getpid(),
                                        config=cfg.to_dict()))
        self.telemetry.flush()
        now = time.monotonic()
        self.next_sample = now + cfg.sample_interval_s
        self.next_kernel = now + cfg.kernel_sample_interval_s if self.kernel else math.inf
        self.next_flush = now + FLUSH_S

    def timers(self, now: float) -> float:
        """Port samples, kernel samples and telemetry flushes that are due; when the next is."""
        if now >= self.next_sample:
            self._sample_ports(now)
            self.next_sample = now + self.cfg.sample_interval_s
        if now >= self.next_kernel:
            self._sample_kernel()
            self.next_kernel = now + self.cfg.kernel_sample_interval_s
        if now >= self.next_flush:
            self.telemetry.flush()
            self.next_flush = now + FLUSH_S
        wake = min(self.next_sample, self.next_kernel, self.next_flush)
        if self.lossless is not None:
            wake = min(wake, self.lossless.due(now))
            self._flush_lossless()
        return wake

    def _shutdown(self, group_size: int = 1) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu = usage.ru_utime + usage.ru_stime
        # CPU and memory are the process's; a switch's share of the CPU is an even split
        final = AgentFinal(**self.stats(), max_rss_bytes=usage.ru_maxrss * 1024,
                           cpu_s=cpu / group_size,
                           process={"pid": os.getpid(), "switches": group_size, "cpu_s": cpu,
                                    "sys_s": usage.ru_stime})
        if self.lossless is not None:
            for rec in self.lossless.records(time.monotonic()):
                self.telemetry.write(rec)
            if self.nfq is not None:        # what is still held goes (nobody waits for it)
                for port in self.lossless.ports.values():
                    for q in port.held:
                        self.lossless.verdicts.extend((pid, v) for pid, v, _, _ in q)
                        q.clear()
                self._flush_lossless()
            for s in self.mac_sockets.values():
                s.close()
        if self.nfq is not None:
            self.nfq.close()
        if self.kernel is not None:
            self.kernel.close()
        if self.ctl is not None:
            self.ctl.close()
        self.telemetry.write(final)
        for port in self.pipeline.ports.values():
            if port.trace is not None:
                self.telemetry.write(self._arrivals(port))
        self.telemetry.write(self.pipeline.flow_ports_record(self.cfg.switch))
        self.telemetry.close()


    def _arrivals(self, port) -> Arrivals:
        """A port's arrival trace as one record (columns), with what a replay needs: the
        queue's parameters, the rate it ended at (a replay assumes the configured one
        throughout and says so if they differ) and the RED thresholds it used."""
        p, red = self.cfg.ports[port.name], self.cfg.red
        cols = list(zip(*port.trace)) or [(), (), (), ()]
        return Arrivals(switch=self.cfg.switch, port=port.name, rate_bps=p.rate_bps,
                        final_rate_bps=port.queue.rate_Bps * 8, buffer_bytes=p.buffer_bytes,
                        burst_bytes=p.burst_bytes, red=red.to_dict(), t_s=list(cols[0]),
                        bytes=list(cols[1]), q_bytes=[round(q, 1) for q in cols[2]],
                        roce=list(cols[3]))


def serve(agents: list[Agent], running) -> None:
    """Serve every agent's queue and control socket from one loop until ``running()`` is
    false, then shut each down (its final record). A queue that has packets is handled at
    once, in bursts (``NfQueue.process``); between packets the loop sleeps until the next
    arrival or the soonest sample or flush. One process serving several switches wakes
    once for a packet's hops through all of them: a verdict forwards the packet into the
    next switch's queue within the same system call (docs/architecture.md §5.1)."""
    opened = []
    stamps = want_timestamps()             # so the kernel stamps each packet (hold_stats)
    try:
        for a in agents:
            a.open()
            opened.append(a)
        poller = select.poll()
        work = {}
        for a in agents:
            poller.register(a.nfq.fileno(), select.POLLIN)
            if a.lossless is None:
                work[a.nfq.fileno()] = (a.nfq.process, a.pipeline.handle)
            else:
                work[a.nfq.fileno()] = (a._serve_lossless, True)
                for ifindex, s in a.mac_sockets.items():
                    poller.register(s.fileno(), select.POLLIN)
                    work[s.fileno()] = (lambda a=a, s=s, i=ifindex: a._serve_pause(s, i), None)
            if a.ctl:
                poller.register(a.ctl.fileno(), select.POLLIN)
                work[a.ctl.fileno()] = (a._serve_control, None)
        monotonic = time.monotonic
        wake = min(a.timers(monotonic()) for a in agents)
        lossless = [a.lossless for a in agents if a.lossless is not None]
        while running():
            timeout_ms = max(0, int((wake - monotonic()) * 1000) + 1)
            try:
                events = poller.poll(timeout_ms)
            except InterruptedError:
                continue
            for fd, _ in events:
                fn, handle = work[fd]
                if handle is not None:
                    fn(handle, clock=monotonic)
                else:
                    fn()
            for ll in lossless:             # a held packet's release, a PAUSE's end
                if ll.wake < wake:
                    wake = ll.wake
            now = monotonic()
            if now >= wake:
                wake = min(a.timers(now) for a in agents)
    finally:
        for a in opened:
            a._shutdown(len(agents))
        stamps.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m switch_agent", description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True,
                    help="the switches this process serves (an AgentGroupConfig, JSON)")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        group = AgentGroupConfig.from_dict(json.load(f))
    agents = []
    for m in group.members:
        with open(m.config) as f:
            agents.append(Agent(AgentConfig.from_dict(json.load(f)),
                                Namespace(m.netns_pid or None)))
    state = {"running": True}
    sched.set_timer_slack(TIMER_SLACK_S)
    if group.cpu is not None:
        sched.pin(group.cpu)

    def stop(*_):
        state["running"] = False
    signal.signal(signal.SIGTERM, stop)
    # on a server reached over ssh the agent's terminal is the ssh session's: its end
    # (the coordinator stopping it) is a hangup, answered with the same clean stop
    signal.signal(signal.SIGHUP, stop)
    signal.signal(signal.SIGINT, stop)
    serve(agents, lambda: state["running"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
