"""The simulated fabric made lossless (``topology.flow_control = "pfc"``; docs/
architecture.md §5.6): ports that stop and resume RoCE's priority on 802.1Qbb PAUSE
frames, per switch the shared buffer of ``switch_agent.pfc.Mmu`` deciding when an
ingress link is paused, and the hosts' NICs (``hosts.nic_core``) honouring the PAUSE
their leaf sends them.

* **Classes.** A port's frames are MAC control (the PAUSE frames: first, never paused,
  ``runtime.pause.FRAME_BYTES`` long), then, with ``control_priority``, RoCE's ACK, NAK
  and CNP (a priority of their own, never paused, outside the shared buffer: HPCC's DCQCN
  runs), then data -- RoCE data, and everything else, in the one lossless priority
  (``runtime.pause.DATA_PRIORITY``); pq's two classes are both inside it, served strictly
  between them as on a drop-tail port, and a PAUSE stops both.
* **Accounting.** A data frame is admitted by its switch's MMU against the link it came
  in by when it joins an egress port, and released when it leaves that port (HPCC:
  enqueue and dequeue). A frame the MMU cannot take is dropped (counted: a buffer too
  small for its headroom). Egress ports have no limit of their own.
* **Timing.** As every frame here, a PAUSE reaches the far end when its port starts
  sending it (``emulator.sim.network``: no propagation delay); it waits at most for the
  frame in service. The paused port finishes the frame it is sending. The pipeline's
  queue model stops draining while its port is paused (``EgressQueue.set_pause``).

Pure: the loop's clock, frames handed in.
"""

from __future__ import annotations

import math
import zlib
from collections import deque

from emulator.sim.loop import Event, Loop
from emulator.sim.network import L2_BYTES, Network, OutPort
from runtime import pause
from runtime.records import PortPause
from switch_agent.config import PfcParams
from switch_agent.pfc import Mmu, Pause, is_control
from switch_agent.pipeline import PQ_HIGH_DSCP
from switch_agent.queue_model import EgressQueue

UNLIMITED_BYTES = 1 << 40     # a lossless port's egress: the MMU decides what it takes


class LosslessPort(OutPort):
    """An egress port of a lossless fabric (the module's docstring): node ``node``'s port
    toward ``far``."""

    def __init__(self, node: str, name: str, rate_bps: float, buffer_bytes: int, loop: Loop,
                 network: Network, far: str, classes: int, control_priority: bool):
        super().__init__(name, rate_bps, buffer_bytes, loop, network, far, classes)
        self.node = node
        self.control_priority = control_priority
        self.ingress_of: list[deque[LosslessPort | None]] = [deque() for _ in range(classes)]
        self.control: deque[bytes] = deque()
        self.mac: deque[bytes] = deque()
        self.pause = pause.PauseTimer()        # RoCE's priority, paused by the far end
        self.wake_at = math.inf                # the one event that counts (others: stale)
        self.mmu: Mmu | None = None            # its switch's; None: a host's port
        self.iface = -1                        # its number at its switch (the MMU's)
        self.mmu_index = -1                    # the far switch's number for this link
        self.reverse: LosslessPort | None = None   # the far end's port back: its PAUSEs
        self.model: EgressQueue | None = None  # the pipeline's queue model of this port
        mac = b"\x02" + zlib.crc32(name.encode()).to_bytes(4, "big") + b"\x00"
        self.xon_frame = pause.encode(mac, {pause.DATA_PRIORITY: 0})
        self.xoff_frames: dict[int, bytes] = {}
        self.src_mac = mac
        self.pauses_tx = 0                     # XOFFs sent (refreshes too), about what
        self.resumes_tx = 0                    # this port's link brings in; XONs

    # --- frames in ---------------------------------------------------------------------
    def offer(self, pkt: bytes, now: float) -> None:
        """From the host itself (its NIC, an application): not the switch's to account."""
        self._enqueue(pkt, now, None)

    def offer_from(self, pkt: bytes, now: float, ingress: OutPort) -> None:
        self._enqueue(pkt, now, ingress if isinstance(ingress, LosslessPort) else None)

    def _enqueue(self, pkt: bytes, now: float, ingress: LosslessPort | None) -> None:
        if not self.up:
            self.drops += 1
            return
        if self.control_priority and is_control(pkt):
            self.control.append(pkt)
            self._arm(now)
            return
        queued = self.queued
        c = 0 if len(queued) == 1 or pkt[1] >> 2 == PQ_HIGH_DSCP else 1
        size = len(pkt) + L2_BYTES
        mmu = self.mmu
        if mmu is not None and ingress is not None:
            i = ingress.mmu_index
            if not mmu.fits(i, size):
                mmu.drop(i)
                return
            p = mmu.admit(i, size, now)
            if p is not None and ingress.reverse is not None:
                ingress.reverse.send_pause(p, now)
        else:
            ingress = None
        self.classes[c].append(pkt)
        self.ingress_of[c].append(ingress)
        queued[c] += size
        q = queued[0] if len(queued) == 1 else sum(queued)
        if q > self.max_q_bytes:
            self.max_q_bytes = q
        self._arm(now)

    def send_pause(self, p: Pause, now: float) -> None:
        """Send the MMU's PAUSE (XOFF, or XON for quanta 0) to the far end, ahead of all
        else; an XOFF asks again at its refresh time."""
        if p.quanta:
            frame = self.xoff_frames.get(p.quanta)
            if frame is None:
                frame = self.xoff_frames[p.quanta] = pause.encode(
                    self.src_mac, {pause.DATA_PRIORITY: p.quanta})
            self.pauses_tx += 1
            if self.mmu is not None:
                self.loop.at(p.refresh_at_s, _Refresh(self.mmu, p.ingress, self))
        else:
            frame = self.xon_frame
            self.resumes_tx += 1
        self.mac.append(frame)
        self._arm(now)

    def on_pause_frame(self, frame: bytes, now: float) -> None:
        """A PAUSE from the far end: RoCE's priority waits (or goes again)."""
        p = pause.decode(frame)
        if p is None or not p.names(pause.DATA_PRIORITY):
            return
        was = self.pause.paused(now)
        self.pause.on_pause(p.quanta[pause.DATA_PRIORITY], self.rate_bps, now)
        if self.model is not None:
            self.model.set_pause(self.pause.since_s, self.pause.until_s, now)
        if was and not self.pause.paused(now):
            self._arm(now)

    # --- frames out --------------------------------------------------------------------
    def _arm(self, now: float) -> None:
        t = self.free_at if self.free_at > now else now
        if t < self.wake_at:
            self.wake_at = t
            self.loop.at(t, self)

    def _waiting(self) -> bool:
        return bool(self.mac or self.control or any(self.classes))

    def fire(self, now: float) -> None:
        if now != self.wake_at:
            return                             # an event a sooner one replaced
        self.wake_at = math.inf
        if self.mac:
            frame = self.mac.popleft()
            self._start(len(frame), now)
            deliver_pause(self.network, self, frame, now)
            return
        if self.control:
            pkt = self.control.popleft()
            self._start(len(pkt) + L2_BYTES, now)
            self.network.arrive(self.far, pkt, now, self)
            return
        classes = self.classes
        c = 0 if classes[0] else 1 if len(classes) > 1 and classes[1] else -1
        if c < 0:
            return
        if self.pause.paused(now):
            self._arm(self.pause.until_s)      # at the pause's end (or an XON's)
            return
        pkt = classes[c].popleft()
        ingress = self.ingress_of[c].popleft()
        size = len(pkt) + L2_BYTES
        self.queued[c] -= size
        self._start(size, now)
        if ingress is not None and self.mmu is not None:
            p = self.mmu.release(ingress.mmu_index, size, now)
            if p is not None and ingress.reverse is not None:
                ingress.reverse.send_pause(p, now)
        self.network.arrive(self.far, pkt, now, self)

    def _start(self, size: int, now: float) -> None:
        """A frame of ``size`` bytes leaves now; the next one's turn when it has left."""
        self.sent += 1
        self.free_at = now + size * 8 / self.rate_bps
        if self._waiting():
            self._arm(self.free_at)

    def set_up(self, up: bool) -> None:
        """A link down drops what waits (its data released from the MMU) and all that
        comes until it is up again."""
        self.up = up
        if up:
            return
        for c, q in enumerate(self.classes):
            for pkt, ingress in zip(q, self.ingress_of[c]):
                if ingress is not None and self.mmu is not None:
                    p = self.mmu.release(ingress.mmu_index, len(pkt) + L2_BYTES, self.loop.now)
                    if p is not None and ingress.reverse is not None:
                        ingress.reverse.send_pause(p, self.loop.now)
            self.drops += len(q)
            q.clear()
            self.ingress_of[c].clear()
            self.queued[c] = 0
        self.drops += len(self.control)
        self.control.clear()
        self.mac.clear()


def deliver_pause(net: Network, port: LosslessPort, frame: bytes, now: float) -> None:
    """A PAUSE ``port`` sent reached its far end: a host's NIC and its own port, woken up
    (it may send again), or a switch's port back toward ``port``'s node."""
    node = port.far
    back = net.ports[(node, port.node)]
    if isinstance(back, LosslessPort):
        back.on_pause_frame(frame, now)
    nic = net.nics.get(node)
    if nic is not None:
        nic.on_pause(frame, now)
        net.on_arrival[node](now)


class _Refresh(Event):
    """An XOFF's refresh time: sent again if its ingress link is still to be paused."""

    def __init__(self, mmu: Mmu, ingress: int, port: LosslessPort):
        self.mmu, self.ingress, self.port = mmu, ingress, port

    def fire(self, t: float) -> None:
        p = self.mmu.refresh(self.ingress, t)
        if p is not None:
            self.port.send_pause(p, t)


def make_lossless(net: Network, params: dict[str, PfcParams],
                  control_priority: bool) -> dict[str, Mmu]:
    """Every port of ``net`` a :class:`LosslessPort` and every switch an MMU over its
    ingress links (numbered as its pipeline numbers its ports); before hosts attach."""
    for (a, b), old in list(net.ports.items()):
        net.ports[(a, b)] = LosslessPort(
            a, old.name, old.rate_bps,
            old.buffer_bytes if a in net.fab.host_leaf else UNLIMITED_BYTES,
            net.loop, net, b, len(old.classes), control_priority)
    mmus = {}
    for sw, prm in params.items():
        own = sorted((i, nbr) for (s, nbr), i in net.port_index.items() if s == sw)
        mmu = mmus[sw] = Mmu(prm, [net.ports[(nbr, sw)].rate_bps for _, nbr in own])
        for i, nbr in own:
            out, link = net.ports[(sw, nbr)], net.ports[(nbr, sw)]
            assert isinstance(out, LosslessPort) and isinstance(link, LosslessPort)
            out.mmu, out.iface = mmu, i
            link.mmu_index, link.reverse = i, out
    return mmus


def watch_models(net: Network) -> None:
    """Each switch port tells its pipeline's queue model when it is paused."""
    for (sw, nbr), i in net.port_index.items():
        port = net.ports[(sw, nbr)]
        if isinstance(port, LosslessPort) and sw in net.pipelines:
            port.model = net.pipelines[sw].ports[i].queue


def records(net: Network, now: float) -> dict[str, list[PortPause]]:
    """Node -> a record per port of it that paused or was paused."""
    out: dict[str, list[PortPause]] = {}
    for (node, _), port in net.ports.items():
        if not isinstance(port, LosslessPort):
            continue
        nic = net.nics.get(node)
        timer = nic.pause if nic is not None else port.pause    # what the NIC honoured
        mmu = port.mmu
        if not (timer.pauses or timer.resumes or port.pauses_tx or
                (mmu is not None and mmu.drops[port.iface])):
            continue
        out.setdefault(node, []).append(PortPause(
            port=port.name, priority=pause.DATA_PRIORITY, pauses_rx=timer.pauses,
            resumes_rx=timer.resumes, paused_s=timer.paused_s(now), pauses_tx=port.pauses_tx,
            resumes_tx=port.resumes_tx,
            max_ingress_bytes=mmu.max_bytes[port.iface] if mmu is not None else 0,
            drops=mmu.drops[port.iface] if mmu is not None else 0,
            intervals=[[round(a, 9), round(b, 9)] for a, b in timer.all_intervals(now)]))
    return out
