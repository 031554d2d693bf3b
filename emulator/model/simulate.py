"""The flow-level (fluid) model of a run: the emulated experiment as fluid flows whose rates
are max-min fair, recomputed at every flow start and end and every link event.

What is modelled: the ranks' programs exactly as ``hosts.rank`` runs them
(``emulator.model.ranks``: dependency rule, passes, compute gaps, training programs,
``after_job``, stragglers); every step flow carries ``wire_bytes(payload, mtu)`` (the
bytes ``theoretical_cct_s`` counts) over the fabric's links (``emulator.routing.graph``);
routing by the kernel's tables, with ECMP as a seeded uniform choice per flow and hop, or
along given paths; fixed-rate background flows; links going down and up, or changing rate.
Rates: max-min fair by progressive filling (ideal congestion control), under a scheme's
strict priorities (``emulator.model.priority``).

What is not: queues, buffers and packet loss; ECN, DCQCN or any congestion-control
dynamics (a flow is at its fair rate the instant the set of flows changes); propagation
and serialization delay; retransmissions (a black-holed flow just waits for a route);
Symphony's marking (its best case is bounded by ``ideal-priority``); 16-bit step
wrap-around (steps are compared unmasked; records carry them masked, as on the wire).

ECMP choice (``emulator.routing.ecmp``, the simulation's too): the Linux hash of a
flow's 5-tuple is modelled as a uniform ``u`` in [0, 1) per (source/destination IP, UDP
source port) and switch: a keyed hash (BLAKE2b) whose key is drawn once from ``rng``. One draw per source port: with ``per_step_sport`` (the NIC's
default) each step's flow gets its own, otherwise one per (job, channel, sender), as
``runtime.wire.flow_sport`` makes the ports. The same seed gives the same paths under every
scheme, whatever the timing (runs compare pairwise). Independent draws per switch are an
assumption: the kernel may key every namespace's hash with one shared secret, so real
switches' choices can be correlated; replay the emulator's recorded ``paths`` (those at
each flow's start) to take the real ones.
"""

from __future__ import annotations

import heapq
import random
from typing import TYPE_CHECKING, Mapping, Sequence, Union

from emulator.model import maxmin
from emulator.model.priority import Priorities
from emulator.model.ranks import JobInput, FluidRank
from emulator.model.records import (INF, BackgroundStream, Flow, FlowKey, LinkEvent,
                                    ModelResult, background_record, flow_records)
from emulator.routing.ecmp import ecmp_choice, salt_of
from emulator.routing.graph import LinkGraph
from runtime import wire

from emulator.plan.layout import JobLayout, wire_bytes
from emulator.plan.messages import Message

if TYPE_CHECKING:
    import numpy as np

Rng = Union[random.Random, "np.random.Generator", int, None]

MODEL_SCHEMES = ("baseline", "ideal-priority", "pq")
POST_STREAM = 0x5DEECE66D        # keys the post-delay stream apart from the ECMP choices
TRACKING = ("job", "ring")       # ideal-priority's lowest step: per job | per (job, ring)


def simulate(fabric: LinkGraph, jobs: Sequence[JobInput | JobLayout], *,
             scheme: str = "baseline", rng: Rng = None, mtu_bytes: int = wire.DEFAULT_MTU_BYTES,
             background: Sequence[BackgroundStream] = (),
             link_events: Sequence[LinkEvent] = (),
             paths: Mapping[FlowKey, Sequence[str]] | None = None,
             per_step_sport: bool = True, tracking: str = "job",
             messages: Sequence[Message] = (), post_delay_s: float = 0.0,
             path_seed: int | None = None) -> ModelResult:
    """Run ``jobs`` (``JobInput``, or ``JobLayout``: no stragglers) and plain ``messages``
    (each a flow of its (job, step) from its ``start_s``) on ``fabric`` under
    ``scheme`` (``baseline`` | ``ideal-priority`` | ``pq``; ``tracking`` of
    ideal-priority, as Symphony's ``[symphony] tracking``: the lowest step per ``job`` or
    per (job, ring), ``ring``). Routing is the fabric's (``ecmp`` or
    ``static``); ``rng`` (a ``random.Random``, a numpy ``Generator`` or an int seed; None:
    seed 0) keys the ECMP choices, one draw taken from it (``path_seed``, if given, keys
    them instead: a fixed draw, ``topology.paths = "fixed"``); ``paths`` overrides them per
    flow (src/dst as names or IPs) while every link of the given path is up. Times in
    seconds from the run's t = 0; ``mtu_bytes``: the RoCE MTU (``transport.mtu_bytes``).
    ``post_delay_s``: the mean of an exponential delay between a rank's cue (its start, or
    the receive it applies) and the send it posts, a host's processing time: without it
    every flow of a step starts at the same instant as its cue and the fluid model keeps
    exact ties that real hosts break, which over many passes changes its answer by tens of
    per cent (docs/architecture.md, "The flow-level model"). Drawn from a stream of its
    own, keyed by ``rng`` like the ECMP choices."""
    if scheme not in MODEL_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; allowed: {', '.join(MODEL_SCHEMES)}")
    if tracking not in TRACKING:
        raise ValueError(f"tracking must be one of {', '.join(TRACKING)}, got {tracking!r}")
    jobs = [j if isinstance(j, JobInput) else JobInput.from_layout(j) for j in jobs]
    if not post_delay_s >= 0:
        raise ValueError(f"post_delay_s must be >= 0, got {post_delay_s}")
    salt = salt_of(rng)
    run = _Run(fabric, scheme, tracking, salt, mtu_bytes, per_step_sport, paths,
               post_delay_s, salt if path_seed is None else salt_of(path_seed))
    return run.run(jobs, background, link_events, messages)


def _seq_of(f: Flow) -> int:
    return f.seq


class _Run:
    def __init__(self, fabric, scheme, tracking, salt, mtu_bytes, per_step_sport, paths,
                 post_delay_s=0.0, path_salt=None):
        self.fab, self.salt, self.mtu, self.per_step = fabric, salt, mtu_bytes, per_step_sport
        self.path_salt = salt if path_salt is None else path_salt   # the ECMP choices'
        self.post_delay = post_delay_s
        self.post_rng = random.Random(salt ^ POST_STREAM)
        self.prio = Priorities(scheme, tracking)
        self.cap = [fabric.capacity_bps[ln] for ln in fabric.links]
        self.users = [set() for _ in fabric.links]
        self.down: set = set()
        self.given = {}
        for (job, ch, step, s, d), p in (paths or {}).items():
            s, d = fabric.host(s), fabric.host(d)
            self.given[(job, ch, step & wire.STEP_MASK, s, d)] = fabric.check_path(p, s, d)
        self.now = 0.0
        self.timers: list = []
        self.finishing: list = []
        self.seq = 0
        self.active: set = set()
        self.dirty: set = set()
        self.n_background = 0
        self.out = ModelResult([], [], [], [], {}, 0.0, [],
                               {"events": 0, "solves": 0, "solved_flows": 0,
                                "max_component": 0})

    # --- set-up -----------------------------------------------------------------------
    def run(self, jobs, background, link_events, messages=()) -> ModelResult:
        programs: dict = {}
        ids = [job.job for job in jobs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"job ids must be unique, got {ids}")
        for job in jobs:
            if any(h not in self.fab.host_leaf for h in job.hosts):
                raise ValueError(f"job {job.job}: hosts not in the fabric")
            for rank in range(len(job.hosts)):
                p = FluidRank(job, rank, self.send, self.at, self.out.collectives)
                if (job.job, job.hosts[rank]) in programs:
                    raise ValueError(f"job {job.job} has two ranks on {job.hosts[rank]}")
                programs[(job.job, job.hosts[rank])] = p
        self.programs = {(p.job.job, p.rank): p for p in programs.values()}
        for (job_id, host), p in programs.items():
            if p.job.after_job:
                before = programs.get((p.job.after_job, host))
                if before is None:
                    raise ValueError(f"job {job_id} runs after job {p.job.after_job}, which "
                                     f"has no rank on {host}")
                before.waiting.append(p)
            else:
                p.anchor(0.0, 0.0)
        for m in messages:
            self.at(m.start_s, lambda t, m=m: self._message_on(m))
        for i, bg in enumerate(background):
            self.at(bg.start_s, lambda t, i=i, bg=bg: self._background_on(i, bg))
        for ev in link_events:
            self.at(ev.t_s, lambda t, ev=ev: self._link_event(ev))
        self._loop()
        out = self.out
        out.end_s = self.now
        out.unfinished = sorted(f.key for f in self.active if not f.background)
        out.stats["ranks_unfinished"] = sum(p.done_s is None for p in programs.values())
        return out

    def at(self, t_s: float, fn) -> None:
        self.seq += 1
        heapq.heappush(self.timers, (max(t_s, self.now), self.seq, fn))

    # --- the event loop -----------------------------------------------------------------
    def _loop(self) -> None:
        timers, fin = self.timers, self.finishing
        while True:
            while fin and fin[0][3].version != fin[0][2]:
                heapq.heappop(fin)
            t = min(fin[0][0] if fin else INF, timers[0][0] if timers else INF)
            if t == INF:
                return
            self.now = t
            horizon = t + abs(t) * 1e-12 + 1e-15
            busy = True
            while busy:
                busy = False
                while fin and fin[0][0] <= horizon:
                    _, _, version, f = heapq.heappop(fin)
                    if f.version == version and f in self.active:
                        self._deliver(f)
                        busy = True
                while timers and timers[0][0] <= horizon:
                    heapq.heappop(timers)[2](t)
                    busy = True
            self.out.stats["events"] += 1
            self._resolve()

    def _resolve(self) -> None:
        """New rates for every flow that shares a link, transitively, with a change."""
        prio = self.prio
        seeds = self.dirty
        seeds.update(f for f in prio.groups.changed() if f in self.active)
        self.dirty = set()
        active, users = self.active, self.users
        frontier = [f for f in seeds if f.links is not None and f in active]
        if not frontier:
            return
        comp = set(frontier)
        while frontier:
            nxt = []
            for f in frontier:
                for ln in f.links:
                    for g in users[ln]:
                        if g not in comp:
                            comp.add(g)
                            nxt.append(g)
            frontier = nxt
        flows = sorted(comp, key=_seq_of)        # a fixed order: bit-identical reruns
        for f in seeds:
            if f in comp:
                f.level = prio.level(f)
        levels = [f.level for f in flows] if (prio.scheme != "baseline"
                                              or self.n_background) else None
        caps = [f.cap for f in flows] if self.n_background else None
        rates = maxmin.max_min_rates([f.links for f in flows], self.cap, caps_bps=caps,
                                     levels=levels, stats=self.out.stats)
        st = self.out.stats
        st["solves"] += 1
        st["solved_flows"] += len(flows)
        st["max_component"] = max(st["max_component"], len(flows))
        now = self.now
        for f, r in zip(flows, rates):
            if r != f.rate:
                self._set_rate(f, r, now)

    def _set_rate(self, f: Flow, rate: float, now: float) -> None:
        f.left -= f.rate * (now - f.t_ref)
        f.t_ref, f.rate = now, rate
        f.version += 1
        f.samples.append([now, rate])
        if rate > 0 and f.left < INF:
            self.seq += 1
            heapq.heappush(self.finishing,
                           (now + max(f.left, 0.0) / rate, self.seq, f.version, f))

    # --- flows ------------------------------------------------------------------------
    def send(self, prog: FluidRank, pass_index: int, i: int, t_s: float) -> None:
        """A rank posts step ``i``'s send, cued at ``t_s``: it starts a host's
        processing time later."""
        if self.post_delay:
            delay = self.post_rng.expovariate(1.0 / self.post_delay)
            self.at(t_s + delay, lambda t: self._post(prog, pass_index, i, t))
        else:
            self._post(prog, pass_index, i, t_s)

    def _post(self, prog: FluidRank, pass_index: int, i: int, t_s: float) -> None:
        st = prog.schedule(pass_index).steps[i]
        dst_rank = prog.schedule(pass_index).rings[st.ring][st.send_to]
        receiver = self.programs[(prog.job.job, dst_rank)]
        back = receiver.schedule(pass_index).steps[st.step]
        rsch = receiver.schedule(pass_index)
        if back.step != st.step or rsch.rings[back.ring][back.recv_from] != prog.rank:
            raise RuntimeError(f"job {prog.job.job}: rank {dst_rank} does not expect step "
                               f"{st.step} from rank {prog.rank}")
        src, dst = prog.host, receiver.host
        channel = prog.channel + st.ring
        gstep = prog.wire_step(pass_index, i)
        step = gstep & wire.STEP_MASK
        src_ip, dst_ip = self.fab.host_ips[src], self.fab.host_ips[dst]
        sport = wire.flow_sport(prog.job.job, channel, step, src_ip, self.per_step)
        payload = st.send_range[1]
        f = Flow(key=(prog.job.job, channel, step, src, dst), job=prog.job.job,
                 channel=channel, gstep=gstep, src=src, dst=dst, payload=payload,
                 bits=wire_bytes(payload, self.mtu) * 8, start_s=t_s, sport=sport,
                 receiver=receiver, pass_index=pass_index, step_index=st.step,
                 ecmp_key=f"{src_ip}/{dst_ip}/{sport}")
        self._start(f, t_s)
        self.out.paths[f.key] = f.path

    def _message_on(self, m: Message) -> None:
        """A plain message posted now (``hosts.host``: its own flow, its NIC's source
        port for (job, channel, step, sender), like a rank's step flow)."""
        src, dst = self.fab.host(m.src), self.fab.host(m.dst)
        src_ip, dst_ip = self.fab.host_ips[src], self.fab.host_ips[dst]
        step = m.step & wire.STEP_MASK
        sport = wire.flow_sport(m.job, m.channel, step, src_ip, self.per_step)
        f = Flow(key=(m.job, m.channel, step, src, dst), job=m.job, channel=m.channel,
                 gstep=m.step, src=src, dst=dst, payload=m.nbytes,
                 bits=wire_bytes(m.nbytes, self.mtu) * 8, start_s=self.now, sport=sport,
                 ecmp_key=f"{src_ip}/{dst_ip}/{sport}")
        self._start(f, self.now)
        self.out.paths[f.key] = f.path

    def _start(self, f: Flow, t_s: float) -> None:
        self.seq += 1
        f.left, f.t_ref, f.seq = f.bits, t_s, self.seq
        self.active.add(f)
        self._place(f, self._route(f), fresh=True)
        f.path0 = f.path

    def _route(self, f: Flow):
        given = self.given.get(f.key) if not f.background else None
        if given is not None and not any(frozenset(ln) in self.down
                                         for ln in zip(given, given[1:])):
            return given
        return self.fab.route(f.src, f.dst, ecmp_choice(self.path_salt, f.ecmp_key), self.down)

    def _place(self, f: Flow, path, fresh: bool = False) -> None:
        """Put ``f`` on ``path`` (None: black-holed), off its old one."""
        if not fresh:
            self._off_links(f)
        f.path = path
        f.links = None if path is None else [self.fab.link_id[ln] for ln in zip(path, path[1:])]
        self.prio.enter(f)
        if path is None:
            if f.rate:
                self._set_rate(f, 0.0, self.now)
            return
        for ln in f.links:
            self.users[ln].add(f)
        self.dirty.add(f)

    def _off_links(self, f: Flow) -> None:
        self.prio.leave(f)
        if f.links is not None:
            for ln in f.links:
                self.users[ln].discard(f)
                self.dirty.update(self.users[ln])

    def _remove(self, f: Flow) -> None:
        self.active.discard(f)
        self._off_links(f)
        f.version += 1

    def _deliver(self, f: Flow) -> None:
        now = self.now
        self._remove(f)
        send, recv = flow_records(f, now, self.fab.host_ips, self.mtu)
        self.out.send_flows.append(send)
        self.out.recv_flows.append(recv)
        if f.receiver is not None:
            f.receiver.deliver(f.pass_index, f.step_index, now)

    # --- background traffic and link events -------------------------------------------
    def _background_on(self, i: int, bg: BackgroundStream) -> None:
        src, dst = self.fab.host(bg.src), self.fab.host(bg.dst)
        f = Flow(key=("background", i), job=0, channel=0, gstep=0, src=src, dst=dst,
                 payload=0, bits=INF, start_s=self.now, sport=0, cap=bg.rate_bps,
                 background=True, ecmp_key=f"background{i}/{src}/{dst}")
        self.n_background += 1
        self._start(f, self.now)
        self.at(self.now + bg.duration_s, lambda t: self._background_off(f, bg))

    def _background_off(self, f: Flow, bg: BackgroundStream) -> None:
        self._remove(f)
        self.n_background -= 1
        self.out.background.append(background_record(f, bg, self.now, self.fab.host_ips))

    def _link_event(self, ev: LinkEvent) -> None:
        for ln in ((ev.a, ev.b), (ev.b, ev.a)):
            if ln not in self.fab.link_id:
                raise ValueError(f"link event on {ev.a}-{ev.b}: no such link")
        if ev.rate_bps is not None:
            i = self.fab.link_id[(ev.a, ev.b)]
            self.cap[i] = ev.rate_bps
            self.dirty.update(self.users[i])
        if ev.up is not None:
            cable = frozenset((ev.a, ev.b))
            if ev.up:
                self.down.discard(cable)
            else:
                self.down.add(cable)
            for f in sorted(self.active, key=_seq_of):
                path = self._route(f)
                if path != f.path:
                    f.reroutes.append((self.now, path))
                    self._place(f, path)
