"""The simulated network: a discrete-event loop on a virtual clock that moves real packets
(IPv4/UDP/RoCEv2 bytes, as the emulator's hosts send them) between the same host and
switch code the emulator runs.

* **Hosts** (:class:`SimNic`): ``hosts.nic_core.NicCore`` -- the NIC scheduler, go-back-N,
  congestion control, the notification point -- with a door to this network instead of
  sockets. What runs above it (``hosts.rank``'s programs) is unchanged.
* **Switches**: one ``switch_agent.pipeline.SwitchPipeline`` each, handed every packet
  with its egress port and the time, as the NFQUEUE shell hands it, and its verdict
  applied (drop, or the rewritten packet: CE, the pq class).
* **Ports**: each directed link is its sending node's egress port, a FIFO served at the
  link's rate (two strict-priority classes where the scheme is pq: DSCP
  ``PQ_HIGH_DSCP`` first), drop-tail at the port's buffer per class, as the emulator's
  HTB/FIFO qdiscs are. A packet occupies the port for its wire size (IP + 14 bytes of
  Ethernet, what HTB charges) and reaches the far end the moment the port starts
  sending it: the emulator's HTB-shaped veth hands a dequeued frame over at once (no
  store-and-forward delay per hop, no propagation delay), which is also what the
  lockstep bound assumes (``emulator.plan.layout.theoretical_cct_s``).
* **Routing**: per packet by the fabric's next hops; among equal-cost hops the model's
  seeded keyed hash of the 5-tuple (``emulator.routing.ecmp.ecmp_choice``, as
  ``predict`` draws paths), or a given path per flow (an emulated run's recorded paths).

* **Hosts' timing**: each datagram reaches its host's NIC an exponential delay after it
  arrived (``host_delay_s``, the spec's ``[sim] host_delay_ms``; in arrival order), drawn
  from a generator seeded by the run: the emulator's hosts read their sockets late by a
  varying amount, and that spread is part of what a seed's result scatters by.

Pure: the clock is the loop's (`emulator.sim.loop`); every random draw comes from seeds handed in.
"""

from __future__ import annotations

import math
import socket
from collections import deque
from typing import Callable, Final

from hosts.cc import CcConfig
from hosts.config import TransportParams
from hosts.flows import WIRE_EXTRA_BYTES
from hosts.nic_core import NicCore
from emulator.sim.loop import Event, Loop
from runtime import wire
from switch_agent.pipeline import PQ_HIGH_DSCP, SwitchPipeline

IP_UDP_BYTES: Final = wire.IPV4_HEADER_BYTES + wire.UDP_HEADER_BYTES
L2_BYTES: Final = WIRE_EXTRA_BYTES - IP_UDP_BYTES   # Ethernet, as HTB charges it


class OutPort(Event):
    """One egress port: a FIFO (two strict classes for pq) served at ``rate_bps``, each
    class drop-tail at ``buffer_bytes``; ``network.arrive(far, pkt, t)`` at the far end.

    A frame leaves from an event of the port's own, never inside the call that offered it:
    a NIC that sends must not be re-entered by an ACK its own packet caused before its send
    returned (the NIC core, like a socket's caller, expects no callback). One event per
    frame: it hands the frame on and, while more wait, calls the next one for the time
    this one has left (``free_at``)."""

    __slots__ = ("name", "rate_bps", "buffer_bytes", "classes", "queued", "free_at",
                 "scheduled", "loop", "network", "far", "drops", "sent", "max_q_bytes", "up")

    def __init__(self, name: str, rate_bps: float, buffer_bytes: int, loop: Loop,
                 network: "Network", far: str, classes: int = 1):
        self.name, self.rate_bps, self.buffer_bytes = name, rate_bps, buffer_bytes
        self.classes: list[deque[bytes]] = [deque() for _ in range(classes)]
        self.queued = [0] * classes          # bytes waiting per class (not in service)
        self.free_at = 0.0                   # when the frame in service has left
        self.scheduled = False               # an event will send the next waiting frame
        self.loop, self.network, self.far = loop, network, far
        self.drops = 0
        self.sent = 0
        self.max_q_bytes = 0
        self.up = True

    def set_up(self, up: bool) -> None:
        """A link down drops what waits and all that comes until it is up again (the
        kernel's queue on a downed interface)."""
        self.up = up
        if not up:
            for c, q in enumerate(self.classes):
                self.drops += len(q)
                q.clear()
                self.queued[c] = 0

    def offer(self, pkt: bytes, now: float) -> None:
        if not self.up:
            self.drops += 1
            return
        queued = self.queued
        c = 0 if len(queued) == 1 or pkt[1] >> 2 == PQ_HIGH_DSCP else 1
        size = len(pkt) + L2_BYTES
        if queued[c] + size > self.buffer_bytes:
            self.drops += 1
            return
        self.classes[c].append(pkt)
        queued[c] += size
        q = queued[0] if len(queued) == 1 else sum(queued)
        if q > self.max_q_bytes:
            self.max_q_bytes = q
        if not self.scheduled:
            self.scheduled = True
            self.loop.at(self.free_at if self.free_at > now else now, self)

    def offer_from(self, pkt: bytes, now: float, ingress: "OutPort") -> None:
        """A packet that came in by the link ``ingress`` (a lossless port's buffer
        accounts it to that ingress: ``emulator.sim.pfc``); a drop-tail port's is one."""
        self.offer(pkt, now)

    def set_rate(self, rate_bps: float) -> None:
        """From the next packet on (the one in service keeps its time)."""
        self.rate_bps = rate_bps

    def fire(self, now: float) -> None:
        """The next waiting frame's turn: it leaves now."""
        classes = self.classes
        c = 0
        q = classes[0]
        if not q:
            if len(classes) == 1 or not classes[1]:
                self.scheduled = False       # emptied while it waited (a link went down)
                return
            c, q = 1, classes[1]
        pkt = q.popleft()
        size = len(pkt) + L2_BYTES
        self.queued[c] -= size
        self.sent += 1
        self.free_at = free = now + size * 8 / self.rate_bps
        if any(classes):
            self.loop.at(free, self)         # still scheduled: the next frame's turn
        else:
            self.scheduled = False
        self.network.arrive(self.far, pkt, now)


class SimNic(NicCore):
    """A host's NIC on the simulated network: its doors hand whole IPv4/UDP packets to
    the host's uplink port; arrivals come back through :meth:`arrive`."""

    uplink: OutPort                  # its host's port toward the leaf (Network.attach)

    def __init__(self, ip: str, line_rate_bps: float, cc: CcConfig, transport: TransportParams,
                 *, network: "Network", clock: Callable[[], float],
                 on_message: Callable | None = None, telemetry=None):
        # the arguments spelled out, not passed on as *args/**kw: the compiled core
        # (runtime/compiled.py) mis-passes those to a base class's __init__
        super().__init__(ip, line_rate_bps, cc, transport, on_message=on_message,
                         telemetry=telemetry, clock=clock)
        self.network = network
        self._src: dict[bytes, str] = {}     # a source address's 4 bytes -> its text
        self._headers: dict = {}     # (dst, sport, length, ecn) -> its IPv4 + UDP header

    def _open_port(self, sport: int) -> int:
        return sport

    def _close_port(self, port) -> None:
        pass

    def _packet(self, dst: str, sport: int, frame, ecn: int) -> bytes:
        """The IP packet the kernel would build around ``frame``: its headers made once
        per (destination, port, length, ECN) with ``wire.build_ip_packet``."""
        key = (dst, sport, len(frame), ecn)
        hdr = self._headers.get(key)
        if hdr is None:
            hdr = self._headers[key] = wire.build_ip_packet(
                self.ip, dst, sport, bytes(len(frame)), ecn=ecn)[:IP_UDP_BYTES]
        return hdr + frame

    def _tx_data(self, port: int, frame, addr: tuple) -> bool:
        self.uplink.offer(self._packet(addr[0], port, frame, wire.ECN_ECT0),
                          self.network.loop.now)
        return True

    def _tx_control(self, frame: bytes, dst: str) -> bool:
        self.uplink.offer(self._packet(dst, wire.ROCE_UDP_PORT, frame, wire.ECN_NOT_ECT),
                          self.network.loop.now)
        return True

    def arrive(self, pkt: bytes, now: float) -> None:
        sport = (pkt[20] << 8) | pkt[21]
        raw = pkt[12:16]
        src = self._src.get(raw)
        if src is None:
            src = self._src[raw] = socket.inet_ntoa(raw)
        self.on_datagram(memoryview(pkt)[IP_UDP_BYTES:], src, sport, pkt[1], now)


class Network:
    """Hosts and switches of one ``emulator.routing.graph.LinkGraph`` on one :class:`Loop`.

    ``pipelines[switch]``: the switch's ``SwitchPipeline``, keyed by port index (its
    ``ports`` are built here: one per link, named as the emulator names interfaces by
    ``port_name(switch, neighbor)``). ``choose(src_ip, dst_ip, sport) -> pick`` gives the
    ECMP choice of a 5-tuple (``pick(switch, hops)``); ``paths[(src_ip, dst_ip, sport)]``
    a node path to follow instead, while it exists."""

    def __init__(self, fabric, loop: Loop, buffer_bytes: int, port_name: Callable,
                 choose: Callable, classes: int = 1, host_buffer_bytes: int = 1 << 30,
                 host_delay_s: float = 0.0, rng=None):
        self.fab, self.loop, self.choose = fabric, loop, choose
        # a host's processing time: each datagram reaches its NIC an exponential delay of
        # this mean after it arrived, in arrival order (a socket is a FIFO)
        self.host_delay_s, self.rng = host_delay_s, rng
        self._host_free: dict[str, float] = {}
        self.nics: dict[str, SimNic] = {}           # host name -> NIC
        self.on_arrival: dict[str, Callable] = {}   # host name -> after a packet arrived
        self.pipelines: dict[str, SwitchPipeline] = {}
        self.port_index: dict[tuple, int] = {}      # (switch, neighbor) -> pipeline's key
        self.ports: dict[tuple, OutPort] = {}       # (node, neighbor) -> port
        self.port_name = port_name
        self.paths: dict[tuple, tuple] = {}
        self.nominal_bps: dict[tuple, float] = {}    # a slowed port's rate before
        self.down: set = set()                      # cables down, frozenset({a, b})
        self.background_rx = 0                      # non-RoCE datagrams hosts received
        self.no_route = 0                           # packets a switch had no route for
        self.background: dict = {}                  # port -> a stream's state
        self._routes: dict[tuple[str, bytes], tuple[SwitchPipeline | None, int, OutPort]] = {}
                                                    # (node, 5-tuple) -> (pipeline, its
                                                    # port index, the OutPort) toward the next node
        self.ip_host = dict(fabric.ip_host)
        for (a, b), rate in fabric.capacity_bps.items():
            host_side = a in fabric.host_leaf
            self.ports[(a, b)] = OutPort(
                port_name(a, b) if not host_side else f"{a}-eth0", rate,
                host_buffer_bytes if host_side else buffer_bytes, loop, self, b,
                1 if host_side else classes)
            if not host_side:
                self.port_index[(a, b)] = len([k for k in self.port_index if k[0] == a])

    def attach(self, host: str, nic: SimNic, after: Callable[[float], None]) -> None:
        nic.uplink = self.ports[(host, self.fab.host_leaf[host])]
        self.nics[host] = nic
        self.on_arrival[host] = after

    def arrive(self, node: str, pkt: bytes, t: float, ingress: OutPort | None = None) -> None:
        """``pkt`` reached ``node`` (by the link ``ingress``, given on a lossless fabric):
        a host's NIC reads it (after the host's delay), a switch's pipeline and egress
        port take it on."""
        nic = self.nics.get(node)
        if nic is not None:
            if self.host_delay_s > 0:
                when = max(self._host_free.get(node, 0.0),
                           t + self.rng.expovariate(1 / self.host_delay_s))
                self._host_free[node] = when
                self.loop.at(when, _Datagram(self, node, pkt))
            else:
                self.read(node, pkt, t)
            return
        route = self._routes.get((node, pkt[12:22]))   # the node, src and dst IP, sport
        if route is None:
            if node in self.fab.host_leaf:
                self.background_rx += 1             # a host with no NIC of the run's
                return
            nxt = self._hop(node, pkt)
            if nxt is None:
                self.no_route += 1
                return                                # no route: black-holed
            route = self._routes[(node, pkt[12:22])] = (
                self.pipelines.get(node), self.port_index[(node, nxt)], self.ports[(node, nxt)])
        pipe, index, port = route
        if pipe is not None:
            verdict = pipe.handle(pkt, index, t)
            if verdict is not None:
                if not verdict:
                    return                            # the agent dropped it
                pkt = bytes(verdict)
        if ingress is None:
            port.offer(pkt, t)
        else:
            port.offer_from(pkt, t, ingress)

    def read(self, node: str, pkt: bytes, t: float) -> None:
        """A datagram handed to ``node``'s NIC (after the host's delay, if any)."""
        if (pkt[22] << 8 | pkt[23]) != wire.ROCE_UDP_PORT:
            self.background_rx += 1                 # another application's (iperf3's)
            return
        self.nics[node].arrive(pkt, t)
        self.on_arrival[node](t)

    def set_link(self, a: str, b: str, up: bool) -> None:
        """The cable a-b down (both directions) or up again; routes are chosen anew."""
        cable = frozenset((a, b))
        (self.down.discard if up else self.down.add)(cable)
        for key in ((a, b), (b, a)):
            self.ports[key].set_up(up)
        self._routes.clear()

    def _hop(self, node: str, pkt: bytes) -> str | None:
        """The next node of ``pkt`` at switch ``node`` (None: no live route); the caller
        keeps it per (node, 5-tuple) until a link changes."""
        src_ip, dst_ip = socket.inet_ntoa(pkt[12:16]), socket.inet_ntoa(pkt[16:20])
        dst = self.ip_host[dst_ip]
        sport = (pkt[20] << 8) | pkt[21]
        given = self.paths.get((src_ip, dst_ip, sport))
        down = self.down
        if given is not None and node in given and \
                frozenset((node, given[given.index(node) + 1])) not in down:
            nxt = given[given.index(node) + 1]
        else:
            hops = self.fab.next_hops[node].get(dst)
            if hops and down:
                hops = tuple(h for h in hops if frozenset((node, h)) not in down)
            if not hops:
                return None                    # no live route: the kernel drops it
            nxt = hops[0] if len(hops) == 1 else self.choose(src_ip, dst_ip, sport)(node, hops)
        return nxt

    def port_drops(self) -> int:
        return sum(p.drops for p in self.ports.values())


class Wakeups:
    """When each host runs: ``wake(name, t)`` serves host ``name`` (its ``service(t)``
    returns when it wants to be served again, ``math.inf`` for not until a packet comes)
    and puts that time on the loop; a host that has ended stops the loop to let it ask
    whether all have."""

    def __init__(self, loop: Loop, hosts: dict):
        self.loop, self.hosts = loop, hosts
        self.due: dict[str, float] = {}     # host -> its one pending wake-up
        self.ended: set[str] = set()
        self._stuck: tuple[str, float] = ("", -1.0)
        self._stuck_n = 0

    def all_ended(self) -> bool:
        return len(self.ended) == len(self.hosts)

    def wake(self, name: str, t: float) -> None:
        h = self.hosts[name]
        nxt: float = h.service(t)
        if h.finished:
            self.ended.add(name)
            self.loop.stop = True
        if nxt <= t:              # asked to be woken now again: progress, or a livelock
            self._stuck_n = self._stuck_n + 1 if self._stuck == (name, t) else 1
            self._stuck = (name, t)
            if self._stuck_n > 10_000:
                raise RuntimeError(f"{name} asked to be woken at t = {t!r} s 10000 times "
                                   "without time passing (a timer that never fires?)")
        due = self.due.get(name, math.inf)
        if nxt < due or due <= t:
            if math.isfinite(nxt):
                self.due[name] = nxt
                self.loop.at(nxt, _WakeUp(self, name, nxt))

    def due_now(self, name: str, when: float, t: float) -> None:
        """The wake-up put for ``when``, unless a sooner one replaced it."""
        if self.due.get(name) == when:
            del self.due[name]
            self.wake(name, t)


class _Datagram(Event):
    """A datagram handed to its host's NIC after the host's delay."""

    def __init__(self, network: Network, node: str, pkt: bytes):
        self.network, self.node, self.pkt = network, node, pkt

    def fire(self, t: float) -> None:
        self.network.read(self.node, self.pkt, t)


class _WakeUp(Event):
    def __init__(self, wakeups: Wakeups, name: str, when: float):
        self.wakeups, self.name, self.when = wakeups, name, when

    def fire(self, t: float) -> None:
        self.wakeups.due_now(self.name, self.when, t)
