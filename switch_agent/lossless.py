"""A switch agent's lossless ports (``topology.flow_control = "pfc"``; docs/architecture.md
§5.6): the agent holds the egress queue itself, so that a PAUSE can stop it.

On a drop-tail port the real queue is the kernel's HTB FIFO and the agent only watches it
(``switch_agent.queue_model``). A PAUSE must stop the port's data at once, but what sits
in a qdisc cannot be held back. So on a lossless port the agent keeps the packets it has
handled, their verdicts not yet given (NFQUEUE keeps them in the kernel, by id), and lets
one into the qdisc only when the queue model says it would hold no more than
``lead_bytes`` with it (two frames by default): the qdisc then holds about what a real
switch has in flight on its wire, and the queue model -- which RED and Symphony read -- stays the
switch's whole queue, held part and qdisc part. Per port:

* **Admission.** A data frame is accounted in the switch's shared buffer against its
  ingress port (``switch_agent.pfc.Mmu``, as HPCC's switch MMU); a frame the MMU cannot
  take is dropped (counted: a buffer too small for its headroom). Crossing the
  threshold sends XOFF out of the ingress port; the frame's leaving the held queue
  releases its bytes, and may send XON.
* **Release.** Held packets go in arrival order, pq's high class (``PQ_HIGH_DSCP``) first,
  while the port is not paused and the qdisc part ``backlog - held`` has room for the
  next within the lead.
* **Pause.** A PAUSE naming RoCE's priority arriving on a port stops its release until
  the quanta run out or an XON comes (``runtime.pause.PauseTimer``). What the qdisc held
  (the lead at most) still leaves -- the downstream's headroom covers it
  (``headroom_for``) -- and the queue model stops draining once that has gone
  (``EgressQueue.set_pause``).
* **Control.** With ``control_priority`` (HPCC's DCQCN runs), RoCE ACK, NAK and CNP are
  never held nor accounted: their own priority, never paused.

Pure: the agent's shell hands in times, packet ids and frames, and sends the verdicts
(:attr:`LosslessPorts.verdicts`) and PAUSE frames (:attr:`LosslessPorts.frames`) this
decides.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import replace
from typing import Final

from runtime import pause
from runtime.records import PortPause
from switch_agent.config import PfcParams
from switch_agent.pfc import Mmu, is_control
from switch_agent.pipeline import PQ_HIGH_DSCP
from switch_agent.queue_model import L2_HEADER_BYTES, EgressQueue

LEAD_FRAMES: Final = 2         # what a lossless port lets into its qdisc, in MTU frames


def headroom_for(params: PfcParams, lead_bytes: int, frame_bytes: int) -> PfcParams:
    """The emulated switch's parameters: the headroom grown by what an emulated upstream
    still sends once the PAUSE has reached it -- its qdisc's lead, and one frame its
    agent may have released while the PAUSE was on its way (the time a real switch
    needs to react is its cable's and its pipeline's delay, which ``headroom_bytes``
    already holds)."""
    return replace(params, headroom_bytes=params.headroom_bytes + lead_bytes + frame_bytes)


class _Port:
    __slots__ = ("ifindex", "name", "queue", "rate_bps", "mmu_index", "held", "held_bytes",
                 "timer", "mac")

    def __init__(self, ifindex: int, name: str, queue: EgressQueue, rate_bps: float,
                 mmu_index: int):
        self.ifindex, self.name, self.queue = ifindex, name, queue
        self.rate_bps, self.mmu_index = rate_bps, mmu_index
        self.held = (deque(), deque())     # (pid, verdict, ingress index, frame bytes)
        self.held_bytes = 0
        self.timer = pause.PauseTimer()    # RoCE's priority here, paused by the far end
        self.mac = b"\x00" * 6             # the port's MAC, the PAUSE frames' source


class LosslessPorts:
    """One switch's lossless ports, keyed like its pipeline's (by interface index), each
    with its ``EgressQueue`` (the pipeline's) and rate; ``lead_bytes``: what a port lets
    into its qdisc."""

    def __init__(self, params: PfcParams, ports: dict[int, tuple[str, EgressQueue, float]],
                 lead_bytes: int, control_priority: bool = True):
        order = sorted(ports)
        self.ports = {i: _Port(i, *ports[i], n) for n, i in enumerate(order)}
        self.by_index = [self.ports[i] for i in order]
        self.mmu = Mmu(params, [p.rate_bps for p in self.by_index])
        self.lead = lead_bytes
        self.control_priority = control_priority
        self.verdicts: list[tuple[bytes, object]] = []   # to send: (packet id, verdict)
        self.frames: list[tuple[int, bytes]] = []         # to send: (ifindex, PAUSE frame)
        self.refresh_at: list[tuple[float, int]] = []     # (time, mmu index) of XOFFs
        self.held_max = 0                                 # most packets held at once
        self._held_now = 0
        self.wake = math.inf        # when :meth:`due` must next be called (at the latest)

    # --- packets ---------------------------------------------------------------------
    def fits(self, indev: int, nbytes: int) -> bool:
        """Can the switch take a packet of ``nbytes`` (IP) that came in by ``indev``? (A
        frame from a port it does not know -- none is expected -- is not accounted.)"""
        p = self.ports.get(indev)
        if p is None:
            return True
        if self.mmu.fits(p.mmu_index, nbytes + L2_HEADER_BYTES):
            return True
        self.mmu.drop(p.mmu_index)
        return False

    def arrive(self, pid: bytes, verdict, pkt, outdev: int, indev: int, now: float) -> None:
        """The pipeline's ``verdict`` for a packet it handled (already in the port's queue
        model): held until the port may send it, or given at once."""
        out = self.ports.get(outdev)
        if out is None or verdict == b"" or (self.control_priority and is_control(pkt)):
            self.verdicts.append((pid, verdict))   # not a lossless port's data, or dropped
            return
        size = len(pkt) + L2_HEADER_BYTES
        src = self.ports.get(indev)
        ingress = -1
        if src is not None:
            ingress = src.mmu_index
            p = self.mmu.admit(ingress, size, now)
            if p is not None:
                self._pause_frame(src, p.quanta, p.refresh_at_s)
        dscp = (verdict[1] if verdict else pkt[1]) >> 2
        out.held[0 if dscp == PQ_HIGH_DSCP else 1].append((pid, verdict, ingress, size))
        out.held_bytes += size
        self._held_now += 1
        if self._held_now > self.held_max:
            self.held_max = self._held_now
        t = self._release(out, now)
        if t < self.wake:
            self.wake = t

    def on_pause_frame(self, ifindex: int, frame: bytes, now: float) -> None:
        """A PAUSE came in by port ``ifindex``: RoCE's priority waits there (or goes)."""
        port = self.ports.get(ifindex)
        f = pause.decode(frame)
        if port is None or f is None or not f.names(pause.DATA_PRIORITY):
            return
        t, q = port.timer, port.queue
        was = t.paused(now)
        t.on_pause(f.quanta[pause.DATA_PRIORITY], port.rate_bps, now)
        # what sits in the qdisc still leaves: the model stops once that has gone
        start = q.pause_from_s if was else \
            now + max(0.0, q.backlog(now) - port.held_bytes) / q.rate_Bps
        q.set_pause(start, t.until_s, now)
        w = self._release(port, now)
        if w < self.wake:
            self.wake = w

    # --- time ------------------------------------------------------------------------
    def due(self, now: float) -> float:
        """Release what may go by ``now``, send the XOFF refreshes due; when to ask again."""
        if self.refresh_at:
            due = [x for x in self.refresh_at if x[0] <= now]
            self.refresh_at = [x for x in self.refresh_at if x[0] > now]
            for _, i in due:            # stale ones (the port resumed since) answer None
                p = self.mmu.refresh(i, now)
                if p is not None:
                    self._pause_frame(self.by_index[i], p.quanta, p.refresh_at_s)
        wake = min((t for t, _ in self.refresh_at), default=math.inf)
        for port in self.by_index:
            if port.held_bytes:
                wake = min(wake, self._release(port, now))
        self.wake = wake
        return wake

    def _release(self, port: _Port, now: float) -> float:
        """Let held packets of ``port`` into its qdisc while it may send; when it may next."""
        if port.timer.paused(now):
            return port.timer.until_s if port.held_bytes else math.inf
        q = port.queue
        backlog = q.backlog(now)
        high, low = port.held
        while port.held_bytes:
            in_qdisc = backlog - port.held_bytes
            queue = high or low
            size = queue[0][3]
            if in_qdisc + size > self.lead:     # when the qdisc has room for it
                return now + (in_qdisc + size - self.lead) / q.rate_Bps + 1e-9
            pid, verdict, ingress, size = queue.popleft()
            port.held_bytes -= size
            self._held_now -= 1
            self.verdicts.append((pid, verdict))
            if ingress >= 0:
                p = self.mmu.release(ingress, size, now)
                if p is not None:
                    self._pause_frame(self.by_index[ingress], 0, math.inf)
        return math.inf

    def _pause_frame(self, port: _Port, quanta: int, refresh_at_s: float) -> None:
        self.frames.append((port.ifindex, pause.encode(port.mac, {pause.DATA_PRIORITY: quanta})))
        if quanta:
            self.refresh_at.append((refresh_at_s, port.mmu_index))
            if refresh_at_s < self.wake:
                self.wake = refresh_at_s

    # --- what the run reports --------------------------------------------------------
    def records(self, now: float) -> list[PortPause]:
        """A record per port that paused, was paused or dropped (``runtime.records``)."""
        mmu, out = self.mmu, []
        for port in self.by_index:
            i, t = port.mmu_index, port.timer
            if not (t.pauses or t.resumes or mmu.xoff_sent[i] or mmu.drops[i]):
                continue
            out.append(PortPause(
                port=port.name, priority=pause.DATA_PRIORITY, pauses_rx=t.pauses,
                resumes_rx=t.resumes, paused_s=t.paused_s(now), pauses_tx=mmu.xoff_sent[i],
                resumes_tx=mmu.xon_sent[i], max_ingress_bytes=mmu.max_bytes[i],
                drops=mmu.drops[i],
                intervals=[[round(a, 9), round(b, 9)] for a, b in t.all_intervals(now)]))
        return out

    def held_packets(self) -> int:
        return self._held_now
