"""What one switch does to one forwarded packet: the agent's pure decision logic.

Per packet, in order (docs/architecture.md §5):

1. Find the egress port from the kernel's routing decision (NFQUEUE's ``outdev``).
   A packet leaving by a port the agent does not model passes untouched.
2. Parse it as RoCEv2 (``runtime.wire``). Anything else (background TCP/UDP, ICMP,
   ACKs, CNPs, malformed) passes untouched but still occupies the port's queue model;
   so does RoCE data of no job (a P_Key not ``0x8000 | job``: 0, 0xFFFF, no
   full-member bit), counted as foreign and never given Symphony state.
3. Fault injection: drop the given fraction of RoCE data packets (a lossy link).
4. Queue model: enqueue on the port (drain at the port's rate, drop-tail at the buffer;
   the kernel drops what overflows, or the agent, on a port whose classes share it).
5. Congestion point: RED probability on the queue (§5.2); on a pq port with RED per
   class (``RedParams.per_class``) on the backlog of the packet's class, which the
   scheme (6) decides first.
6. The switch scheme (``switch_agent.schemes``): Symphony's marking decision, or the
   priority-queue baseline's class (lagging flows get DSCP ``PQ_HIGH_DSCP`` written,
   which the port's qdisc, a u32 filter, serves first), or nothing (baseline).
7. Mark CE if RED **or** the scheme says so, only on ECT packets; each mark is
   attributed to its cause (RED only, Symphony only, both).

No clock and no randomness of its own: ``now_s`` is passed in and ``random`` is an
injected ``() -> float in [0, 1)``. :meth:`handle` returns what the NFQUEUE shell sends
as the verdict: ``None`` (accept unchanged), ``b""`` (drop) or the rewritten packet.
"""

from __future__ import annotations

import random
import socket
from dataclasses import asdict, dataclass, field
from typing import Callable, Final

from runtime import wire
from runtime.records import FlowPorts, Window
from switch_agent.config import RedParams
from switch_agent.queue_model import L2_HEADER_BYTES, EgressQueue, red_probability
from switch_agent.schemes import SWITCH_SCHEMES, SwitchScheme
from switch_agent.symphony import SymphonyTracker, WindowRecord

PQ_HIGH_DSCP: Final = 46    # EF: the DSCP the port qdiscs classify as high priority (pq)


@dataclass
class PortCounters:
    pkts: int = 0
    bytes: int = 0
    roce_pkts: int = 0
    other_pkts: int = 0
    foreign_pkts: int = 0          # RoCE data whose P_Key names no job (wire.FOREIGN_JOB)
    model_drops: int = 0
    fault_drops: int = 0
    marks_red: int = 0
    marks_symphony: int = 0
    marks_both: int = 0
    not_ect_unmarked: int = 0      # would have been marked, but the packet was Not-ECT
    pq_high: int = 0               # pq: packets sent to the high-priority class


@dataclass
class Port:
    name: str
    queue: EgressQueue
    counters: PortCounters = field(default_factory=PortCounters)
    window_max_q_bytes: float = 0.0   # max backlog since the last sample
    sampled_pkts: int = 0             # counters.pkts at the last sample
    # [switch] trace_arrivals: every packet the model queued, (t, frame bytes, backlog it
    # found incl. itself or -1 if dropped, RoCE data?), for replaying the port offline
    # (emulator.analysis.marking_point: marking at enqueue vs at dequeue)
    trace: list | None = None
    # The kernel gives each of the port's classes a FIFO of the buffer's size (pq: two),
    # so it would hold up to twice what a switch's port holds: the agent drops what
    # overflows the model's one buffer itself (docs/architecture.md §5.4).
    shared_buffer: bool = False


class SwitchPipeline:
    """The per-switch packet logic: queue model + RED + the switch scheme + fault knob."""

    def __init__(self, ports: dict[int, Port], red: RedParams, tracker: SymphonyTracker,
                 random: Callable[[], float], *, scheme: str = "baseline",
                 tracking: str = "job", drop_fraction: float = 0.0,
                 on_window: Callable[[Window], None] | None = None,
                 mark_min_queue_bytes: int = 0):
        self.ports = ports
        self.tracker = tracker
        self.random = random
        self.tracking = tracking
        self.mark_min_queue_bytes = mark_min_queue_bytes   # SymphonyParams's (0: the paper's)
        self.scheme: SwitchScheme = SWITCH_SCHEMES[scheme](tracker, tracking)
        self.red = red                        # the property: also its fields, read per packet
        self.set_drop_fraction(drop_fraction)
        self.unknown_port_pkts = 0
        # Which egress port each RoCE flow took, from its first packet (PSN 0): (job,
        # channel, step, src and dst IP as 8 bytes) -> port name. The report replays the
        # run in the flow-level model on exactly these paths (docs/architecture.md §10).
        self.flow_ports: dict[tuple, str] = {}
        # marks per job in the tracker's current window: job -> [red, symphony]
        self._job_marks: dict[object, list[int]] = {}   # scheme's key -> [RED, Symphony]
        self._on_window = on_window
        tracker.on_window = self._window_closed

    @property
    def red(self) -> RedParams:
        return self._red

    @red.setter
    def red(self, red: RedParams) -> None:
        # its fields copied to the pipeline's own: compiled, those are read natively
        self._red = red
        self._red_on, self._kmin, self._kmax = red.enabled, red.kmin_bytes, red.kmax_bytes
        self._pmax, self._rate_ref_bps = red.pmax, red.rate_ref_bps
        self._classed_red()

    def _classed_red(self) -> None:
        """Whether RED reads the packet's class's backlog: pq's two classes, per class."""
        self._per_class = self._red.per_class and self.scheme.name == "pq"

    @classmethod
    def from_config(cls, cfg, ports: dict[int, Port], on_window=None) -> "SwitchPipeline":
        """The pipeline an ``AgentConfig`` describes, on ``ports`` (the NFQUEUE agent's,
        keyed by interface index; the simulator's, by its own index)."""
        return cls(ports, cfg.red, SymphonyTracker(cfg.symphony), random.Random(cfg.seed).random,
                   scheme=cfg.scheme, tracking=cfg.symphony.tracking,
                   drop_fraction=cfg.drop_fraction, on_window=on_window,
                   mark_min_queue_bytes=cfg.symphony.mark_min_queue_bytes)

    @property
    def symphony_enabled(self) -> bool:
        return self.scheme.name == "symphony"

    def set_drop_fraction(self, fraction: float) -> None:
        if not 0 <= fraction <= 1:
            raise ValueError(f"drop_fraction must be in [0, 1], got {fraction}")
        self.drop_fraction = fraction

    def set_scheme(self, name: str) -> None:
        """Switch to another scheme (``symphony`` on or off at run time). The tracker's
        per-job state is rebuilt from new packets when the scheme changes."""
        if name not in SWITCH_SCHEMES:
            raise ValueError(f"unknown scheme {name!r}; allowed: {', '.join(SWITCH_SCHEMES)}")
        if name != self.scheme.name:
            self.tracker.reset()
            self.scheme = SWITCH_SCHEMES[name](self.tracker, self.tracking)
            self._classed_red()

    def set_symphony(self, enabled: bool) -> None:
        """Symphony on, or back to RED only."""
        self.set_scheme("symphony" if enabled else "baseline")

    def _window_closed(self, rec: WindowRecord) -> None:
        red, symphony = self._job_marks.pop(rec.job, None) or (0, 0)
        if self._on_window is not None:
            key = rec.job                      # the job, or (job, ring) under per-ring tracking
            job, ring = key if isinstance(key, tuple) else (key, None)
            self._on_window(Window(job=job, ring=ring,
                                   window=rec.window, t_s=rec.t_start_s,
                                   step_min=rec.step_min, psn_rec=rec.psn_rec,
                                   alpha=rec.alpha, cnt_total=rec.cnt_total,
                                   cnt_op=rec.cnt_op, marks_red=red, marks_symphony=symphony))

    def flow_ports_record(self, switch: str) -> FlowPorts:
        """Where each RoCE flow left this switch, for the report's replay."""
        return FlowPorts(switch=switch, flows=[
            [job, channel, step, socket.inet_ntoa(ips[:4]), socket.inet_ntoa(ips[4:]), port]
            for (job, channel, step, ips), port in self.flow_ports.items()])

    def handle(self, pkt, outdev: int, now_s: float):
        port = self.ports.get(outdev)
        if port is None:
            self.unknown_port_pkts += 1
            return None
        c = port.counters
        nbytes = len(pkt)
        c.pkts += 1
        c.bytes += nbytes
        hdr = wire.parse_ip_roce(pkt)
        if hdr is None or hdr.job == wire.FOREIGN_JOB:
            if hdr is None:
                c.other_pkts += 1
            else:
                c.foreign_pkts += 1
            q = port.queue.enqueue(nbytes + L2_HEADER_BYTES, now_s)
            if port.trace is not None:
                port.trace.append((now_s, nbytes + L2_HEADER_BYTES, q, 0))
            if q < 0:
                c.model_drops += 1
                return b"" if port.shared_buffer else None
            if q > port.window_max_q_bytes:
                port.window_max_q_bytes = q
            return None
        c.roce_pkts += 1
        if hdr.psn == 0:
            self.flow_ports[(hdr.job, hdr.channel, hdr.step, bytes(pkt[12:20]))] = port.name
        if self.drop_fraction and self.random() < self.drop_fraction:
            c.fault_drops += 1
            return b""
        q = port.queue.enqueue(nbytes + L2_HEADER_BYTES, now_s)
        if port.trace is not None:
            port.trace.append((now_s, nbytes + L2_HEADER_BYTES, q, 1))
        if q < 0:
            c.model_drops += 1      # the kernel's FIFO will drop it too; nothing to mark
            return b"" if port.shared_buffer else None
        if q > port.window_max_q_bytes:
            port.window_max_q_bytes = q

        if self._per_class:                    # the class first: RED reads its backlog
            sym_mark, high = self.scheme.decide(hdr, now_s, self.random)
            red_mark = self._red_mark(port, port.queue.promote(nbytes + L2_HEADER_BYTES)
                                      if high else q - port.queue.q_high)
        else:
            red_mark = self._red_mark(port, q)
            sym_mark, high = self.scheme.decide(hdr, now_s, self.random)
        if sym_mark and q < self.mark_min_queue_bytes:
            sym_mark = False               # the option: no Symphony mark where nothing queues
        if high:
            c.pq_high += 1
        if not (red_mark or sym_mark):
            return self._prioritized(pkt) if high else None
        if hdr.ecn == wire.ECN_NOT_ECT:
            c.not_ect_unmarked += 1
            return self._prioritized(pkt) if high else None
        if red_mark and sym_mark:
            c.marks_both += 1
        elif red_mark:
            c.marks_red += 1
        else:
            c.marks_symphony += 1
        key = self.scheme.key(hdr)
        jm = self._job_marks.get(key)
        if jm is None:
            jm = self._job_marks[key] = [0, 0]
        jm[0] += red_mark
        jm[1] += sym_mark
        if hdr.ecn == wire.ECN_CE:
            return self._prioritized(pkt) if high else None   # already CE
        out = bytearray(pkt)
        wire.mark_ce(out)
        if high:
            wire.set_dscp(out, PQ_HIGH_DSCP)
        return out

    def _red_mark(self, port: Port, q: float) -> bool:
        """The congestion point's verdict on a backlog of ``q`` bytes (the packet's in)."""
        kmin, kmax = self._kmin, self._kmax
        if self._rate_ref_bps:                 # per port, scaled with its rate (HPCC)
            f = port.queue.rate_Bps * 8 / self._rate_ref_bps
            kmin, kmax = kmin * f, kmax * f
        if not self._red_on or q <= kmin:
            return False
        p = red_probability(q, kmin, kmax, self._pmax)
        return p >= 1.0 or self.random() < p

    def _prioritized(self, pkt) -> bytearray:
        out = bytearray(pkt)
        wire.set_dscp(out, PQ_HIGH_DSCP)
        return out

    def totals(self) -> dict:
        """Counters summed over ports, plus per-port counters."""
        total = PortCounters()
        for port in self.ports.values():
            for k, v in asdict(port.counters).items():
                setattr(total, k, getattr(total, k) + v)
        return {"total": asdict(total), "unknown_port_pkts": self.unknown_port_pkts,
                "ports": {p.name: asdict(p.counters) for p in self.ports.values()}}
