"""A host running collective ranks: the schedule (``hosts.collectives``) executed over the
NIC (``hosts.nic``), every result verified.

Configuration: a ``hosts.config.HostConfig`` with ``ranks`` (one ``RankConfig`` per job this
host takes part in), written as JSON by the launcher (``emulator.launch.launcher``); times
and rates emulated. A process (``hosts.group``) serves one or several such hosts; t = 0
comes through the launcher's ready barrier.

Buffers hold float32 values that are small integers, so every sum is exact. Each rank
verifies its passes as its ``RankConfig.verify`` says: on real buffers, its result
checked against the sum it computes (once, before the start) from the other ranks'
seeded inputs (``hosts.collectives.expected``); or by checksums, each segment of its
buffer kept as the statistics of structured inputs, every received chunk checked
(``hosts.collectives.checksums``: messages generated and fitted a block at a time, so a
rank holds a few blocks, not its bytes).
Telemetry: the NIC's per-flow records plus one ``collective`` record per rank and pass
(start, end = holds the result, verified). Progress lines go to stdout.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np

from dataclasses import replace

from hosts.collectives import checksums, collective
from hosts.collectives.checksums import Checksums
from hosts.collectives.expected import Expected
from hosts.collectives.order import StepOrder, dependencies
from hosts.config import HostConfig, RankConfig
from hosts.nic import Nic
from runtime.records import CollectiveDone, RankSummary, UnexpectedMessage
from runtime.telemetry import Telemetry

DTYPE = np.float32
ITEM = np.dtype(DTYPE).itemsize
STEP_MASK = 0xFFFF


@functools.lru_cache(maxsize=32)
def rank_base(seed: int, job: int, rank: int, count: int) -> np.ndarray:
    """A rank's seeded base values: small integers (0..63) as float32, read-only. Kept:
    every member of a group needs every other's to know its result, and a process that
    runs many ranks (a host group, the simulator) would draw each one again per member;
    the ones kept are those its own ranks hold anyway."""
    rng = np.random.default_rng([seed, job, rank])
    base = rng.integers(0, 64, count).astype(DTYPE)
    base.setflags(write=False)
    return base


@functools.lru_cache(maxsize=4)
def inputs_sum(seed: int, job: int, ranks: tuple, count: int) -> np.ndarray:
    """The sum of these ranks' seeded base values, read-only. Kept: every rank of an
    all-reduce must hold the sum of all its group's inputs, and a process that runs the
    whole group (the simulator) would otherwise draw N inputs for each of N ranks -- at
    128 ranks 16,384 draws of the buffer, 150 s of a run's set-up
    (``rank_base`` keeps 32: a group past that misses every time)."""
    total = np.zeros(count, DTYPE)
    for r in ranks:
        total += rank_base(seed, job, r, count)
    total.setflags(write=False)
    return total


def forget_inputs() -> None:
    """Free what this process keeps of the ranks' seeded inputs (a run's end)."""
    rank_base.cache_clear()
    inputs_sum.cache_clear()
    checksums.forget()


def build(cfg: RankConfig):
    """The rank's schedule, its waits under the run's dependency rule
    (:mod:`hosts.collectives.order`) and what each of its passes starts from and must
    produce (computed once, from every member's seeded input: the exact sums of
    docs/architecture.md §4), as ``cfg.verify`` verifies them."""
    coll = collective(cfg.algorithm)
    schedule = coll.schedule(cfg.group, cfg.rank, cfg.nbytes, ITEM)
    verifier: Checksums | Expected
    if cfg.verify == "checksums":
        verifier = Checksums(coll, schedule, cfg.rank, cfg.group, cfg.nbytes,
                             lambda r: checksums.rank_stats(cfg.seed, cfg.job, r))
    else:
        count = cfg.nbytes // ITEM
        verifier = Expected(coll, cfg.rank, cfg.group, cfg.nbytes,
                            lambda r: rank_base(cfg.seed, cfg.job, r, count),
                            lambda ranks: inputs_sum(cfg.seed, cfg.job, ranks, count))
    return schedule, dependencies(schedule, cfg.order), verifier


def step_index(flow, spec: RankConfig, schedule, step_base: int, expects=None) -> int | None:
    """The step of a pass (its first wire step ``step_base``) that ``flow`` carries, by its
    step, channel and sender (and ``expects(i)``, if given), or None."""
    for i, st in enumerate(schedule.steps):
        if ((step_base + st.step) & STEP_MASK) == flow.step \
                and flow.channel == spec.channel + st.ring \
                and flow.peer == spec.rank_ips[schedule.rings[st.ring][st.recv_from]] \
                and (expects is None or expects(i)):
            return i
    return None


class Collective:
    """One pass of one collective on this rank (event-driven on NIC callbacks): receives
    applied and sends posted as the run's dependency rule says (``StepOrder``). Its data
    is the verifier's pass (``verifier.start``: a real buffer's or the checksums'),
    which gives the bytes of a range to send, applies a received message, and checks
    the result at the end."""

    def __init__(self, nic, spec: RankConfig, schedule, deps, pass_index: int,
                 telemetry, progress, verifier):
        self.nic, self.spec, self.sch, self.pass_index = nic, spec, schedule, pass_index
        self.tele, self.progress = telemetry, progress
        self.verifier = verifier
        self.data = verifier.start(pass_index)
        self.step_base = pass_index * spec.steps_per_collective
        self.ips = spec.rank_ips
        self.order = StepOrder(deps)
        self.received: dict[int, Any] = {}   # arrived (bytes or checksums.Fitted), waiting
                                              # for the rule to apply them
        self.step_delay_s = spec.step_delay_s               # a straggler's compute time
        self.deferred: list[tuple[float, int]] = []          # (when, step) sends to post
        self.sends_open = 0
        self.start_s = 0.0                   # set by start()
        self.end_s: float | None = None      # set when the last step has arrived

    def wire_step(self, i: int) -> int:
        return (self.step_base + self.sch.steps[i].step) & STEP_MASK

    def channel(self, i: int) -> int:
        return self.spec.channel + self.sch.steps[i].ring

    def start(self, now: float) -> None:
        self.start_s = now
        self._post_send(0)

    def _post_send(self, i: int) -> None:
        st = self.sch.steps[i]
        peer = self.ips[self.sch.rings[st.ring][st.send_to]]
        self.sends_open += 1
        self.nic.send(peer, self.spec.job, self.channel(i), self.wire_step(i),
                      self.data.send(st.send_range), on_complete=self._send_done)

    def tick(self, now: float) -> None:
        while self.deferred and now >= self.deferred[0][0]:
            _, i = self.deferred.pop(0)
            self._post_send(i)

    def _send_done(self, flow) -> None:
        self.sends_open -= 1

    def matches(self, flow) -> int | None:
        """The step index of this pass a delivered flow belongs to, or None."""
        return step_index(flow, self.spec, self.sch, self.step_base, self.order.expects)

    def stream(self, i: int):
        """What fits step ``i``'s message as it arrives (checksums), or None (bytes)."""
        v = self.verifier
        return v.stream(self.sch.steps[i].recv_range) if isinstance(v, Checksums) else None

    def deliver(self, i: int, message: Any, now: float) -> None:
        n = self.sch.steps[i].recv_range[1]
        if len(message) != n:
            raise RuntimeError(f"step {i}: got {len(message)} bytes, expected {n}")
        self.received[i] = message
        apply, due = self.order.arrive(i)
        for j in apply:
            self.data.apply(self.sch.steps[j], self.received.pop(j))
            self.progress()
        for j in due:
            if self.step_delay_s > 0:
                self.deferred.append((now + self.step_delay_s, j))
            else:
                self._post_send(j)
        if self.order.done and self.end_s is None:
            self.end_s = now
            self._finish(now)

    def _finish(self, end_s: float) -> None:
        ok = self.data.check()
        self.verified = ok
        self.tele.write(CollectiveDone(
            job=self.spec.job, rank=self.spec.rank, pass_index=self.pass_index,
            algorithm=self.spec.algorithm, nbytes=self.spec.nbytes, start_s=self.start_s,
            end_s=end_s, verified=ok, steps=len(self.sch.steps)))

    @property
    def done(self) -> bool:
        return self.end_s is not None


class RankProgram:
    """All collectives of one job on this host: ``passes`` of one size with compute gaps
    between them, or a training workload's program (sizes and ready times per collective).

    A workload's collectives start in order, each once its gradients exist (its
    ``ready_s`` after its iteration began) and fewer than ``spec.in_flight`` of the job's
    are under way (0: no limit, as ASTRA-sim issues each layer's all-reduce; 1: one at a
    time, as DDP's one NCCL stream). An iteration begins once every collective of the one
    before has ended (the optimizer's step needs all gradients)."""

    def __init__(self, nic, spec, t0, telemetry, progress):
        self.nic, self.spec, self.tele, self.progress = nic, spec, telemetry, progress
        self.program = spec.program or None
        sizes = {c[0] for c in self.program} if self.program else {spec.nbytes}
        self.per_size = {}               # nbytes -> (spec, schedule, deps, verifier)
        for n in sorted(sizes):
            s = replace(spec, nbytes=n)
            self.per_size[n] = (s, *build(s))
        self.passes = len(self.program) if self.program else spec.passes
        self.limit = spec.in_flight if spec.in_flight > 0 else self.passes
        self.active: list[Collective] = []     # started, not ended (in start order)
        self.started = 0
        self.finished: list[Collective] = []   # in the order they ended
        self.early: list = []            # messages for passes not started yet
        self.after: RankProgram | None = None   # this host's rank of spec["after_job"]
        self.set_start(t0)

    def set_start(self, t0: float) -> None:
        """The run's t = 0; a program that runs after another waits for it instead."""
        self.t0 = t0
        self.next_start: float | None = None   # when pass ``started`` may start (None:
                                               # not known yet: an iteration's end)
        if not self.spec.after_job:
            self._anchor(t0)

    def _anchor(self, t: float) -> None:
        self.iteration_start = t + self.spec.start_s
        self.next_start = self.iteration_start + (self.program[0][1] if self.program else 0.0)

    def _plan(self, now: float) -> None:
        """After a pass started or ended at ``now``: when pass ``started`` may start, if
        that is known now."""
        if self.next_start is not None or self.started >= self.passes:
            return
        if not self.program:
            if not self.active:
                self.next_start = now + self.spec.compute_gap_s
            return
        _, ready_s, begins_iteration = self.program[self.started]
        if begins_iteration:
            if self.active:
                return                       # the iteration before has not ended
            self.iteration_start = now
        self.next_start = max(now, self.iteration_start + ready_s)

    def _owing(self) -> list[Collective]:
        """Passes that may still owe a straggler's delayed sends (its last steps)."""
        if self.limit == 1:
            return self.finished[-2:] + self.active
        return [c for c in self.finished if c.deferred] + self.active

    def next_event(self) -> float | None:
        """When this program needs the loop to wake up next (a deferred send, a pass)."""
        times = [c.deferred[0][0] for c in self._owing() if c.deferred]
        if self.started == 0 and self.next_start is None and self.after is not None \
                and self.after.done:
            self._anchor(self.after.end_s)
        if len(self.active) < self.limit and self.started < self.passes \
                and self.next_start is not None:
            times.append(self.next_start)
        return min(times) if times else None

    def tick(self, now: float) -> None:
        for c in self._owing():
            if c.deferred:
                c.tick(now)
        if self.started == 0 and self.next_start is None and self.after is not None \
                and self.after.done:
            self._anchor(self.after.end_s)
        while len(self.active) < self.limit and self.started < self.passes \
                and self.next_start is not None and now >= self.next_start:
            index = self.started
            nbytes = self.program[index][0] if self.program else self.spec.nbytes
            spec, schedule, deps, verifier = self.per_size[nbytes]
            c = Collective(self.nic, spec, schedule, deps, index, self.tele, self.progress,
                           verifier)
            self.active.append(c)
            self.started += 1
            self.next_start = None
            c.start(now)
            self._plan(now)
            early, self.early = self.early, []
            for flow, msg in early:
                self.on_message(flow, msg, now)

    def sink_of(self, flow):
        """What fits a new receive's bytes as they arrive, if its pass verifies by
        checksums: a pass under way's, or the next one's (a faster peer's); else None."""
        for c in self.active:
            i = c.matches(flow)
            if i is not None:
                return c.stream(i)
        index = self.started
        if index >= self.passes:
            return None
        spec, schedule, _, verifier = self.per_size[
            self.program[index][0] if self.program else self.spec.nbytes]
        if not isinstance(verifier, Checksums):
            return None
        i = step_index(flow, spec, schedule, index * spec.steps_per_collective)
        return None if i is None else verifier.stream(schedule.steps[i].recv_range)

    def on_message(self, flow, message, now) -> bool:
        if flow.job != self.spec.job:
            return False
        for c in self.active:
            i = c.matches(flow)
            if i is not None:
                c.deliver(i, message, now)
                if c.done:
                    self.active.remove(c)
                    self.finished.append(c)
                    self._plan(now)
                    self.tick(now)
                return True
        self.early.append((flow, message))   # a later pass's data, from a faster peer
        return True

    @property
    def done(self) -> bool:
        return len(self.finished) == self.passes and not any(c.deferred for c in self.finished)

    @property
    def end_s(self) -> float:
        """When its last pass so far ended (asked once it is :attr:`done`)."""
        end = max(c.end_s for c in self.finished if c.end_s is not None)
        return end


def link_after(programs: list[RankProgram]) -> None:
    """Point each program with an ``after_job`` at this host's program of that job."""
    by_job = {p.spec.job: p for p in programs}
    for p in programs:
        if p.spec.after_job:
            if p.spec.after_job not in by_job:
                raise SystemExit(f"job {p.spec.job} runs after job {p.spec.after_job}, "
                                 "which has no rank on this host")
            p.after = by_job[p.spec.after_job]


class RankHost:
    """One host's ranks on its NIC, served by ``hosts.group``'s loop: set up (schedules,
    expected results) in ``__init__``, before the ready barrier, so no rank starts late
    because its Python started slowly; then :meth:`start` at t = 0 and :meth:`service`
    whenever the host's time comes or its socket has something. ``nic_class``: the
    emulator's socket NIC, or the simulator's (``emulator.sim``), with ``nic_args``."""

    def __init__(self, cfg: HostConfig, nic_args: dict, say, clock=time.monotonic,
                 nic_class=Nic):
        self.cfg, self.say, self.clock = cfg, say, clock
        self.tele = Telemetry(cfg.telemetry_path)
        self.applied = 0
        self.programs: list[RankProgram] = []
        self.changed = True              # a delivery may have started or ended a pass
        self.t_event = 0.0               # the programs' next timed event (deferred send, pass)
        self.nic = nic_class(cfg.ip, cfg.line_rate_bps, cfg.cc, cfg.transport,
                       on_message=self._on_message, telemetry=self.tele, clock=clock,
                       **nic_args)
        self._ready = [RankProgram(self.nic, r, 0.0, self.tele, self._progress)
                       for r in cfg.ranks]
        if any(r.verify == "checksums" for r in cfg.ranks):
            self.nic.sink_of = self._sink_of     # a message fitted as it arrives

    def _sink_of(self, flow):
        for p in self.programs or self._ready:
            if p.spec.job == flow.job:
                return p.sink_of(flow)
        return None

    def _progress(self) -> None:
        self.applied += 1
        self.say({"progress": self.applied, "of": self.cfg.total_steps})

    def _on_message(self, flow, message) -> None:
        self.changed = True
        now = self.clock()
        for p in self.programs:
            if p.on_message(flow, message, now):
                return
        self.tele.write(UnexpectedMessage(job=flow.job, step=flow.step, peer=flow.peer))

    def start(self, t0: float) -> None:
        for p in self._ready:
            p.set_start(t0)
        self.programs += self._ready
        link_after(self.programs)
        self.t_event = t0

    def service(self, now: float) -> float:
        """Act on what is due now; return when this host next needs a turn. The programs
        act only when one of their times comes or a message arrived (no polling)."""
        if self.changed or now >= self.t_event:
            self.changed = False
            for p in self.programs:
                p.tick(now)
            self.t_event = min((t for t in (p.next_event() for p in self.programs)
                                if t is not None), default=math.inf)
        return min(self.t_event, self.nic.service(now))

    @property
    def finished(self) -> bool:
        return not self.nic.busy and all(p.done for p in self.programs)

    def summary(self, timed_out: bool, udp: dict) -> RankSummary:
        colls = [c for p in self.programs for c in p.finished]
        expected = sum(p.passes for p in self.programs)
        verified = sum(getattr(c, "verified", False) for c in colls)
        return RankSummary(name=self.cfg.name, ip=self.cfg.ip, timed_out=timed_out,
                           ok=not timed_out and verified == expected, udp=udp,
                           **self.nic.stats(), collectives=len(colls), expected=expected,
                           verified=verified, steps_applied=self.applied,
                           steps_total=self.cfg.total_steps)


def udp_counters(path: str = "/proc/net/snmp") -> dict:
    """A namespace's UDP error counters (``path``: the host's, ``runtime.netns``). RcvbufErrors counts datagrams the socket had no room for: the process
    fell behind reading, which a NIC would not do."""
    try:
        with open(path) as f:
            rows = [line.split() for line in f if line.startswith("Udp:")]
    except OSError:
        return {}
    if len(rows) < 2:
        return {}
    names, values = rows[0][1:], rows[1][1:]
    c = dict(zip(names, map(int, values)))
    return {k: c.get(k, 0) for k in ("InErrors", "RcvbufErrors", "SndbufErrors")}
