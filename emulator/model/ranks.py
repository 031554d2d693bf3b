"""What the model's ranks do: ``hosts.rank``'s programs, on fluid flows and exact times.

A :class:`JobInput` is one job as the model needs it: what an ``emulator.plan``
``JobLayout`` holds, plus the stragglers' delays (:meth:`JobInput.from_layout` is the
adapter). A :class:`FluidRank` follows ``hosts.rank.FluidRank`` / ``Collective``
rule for rule:

* Dependency rule, the job's ``order`` (:mod:`hosts.collectives.order`, the same
  ``StepOrder`` the ranks run): a rank posts step 0's send when its collective starts;
  under ``on_arrival`` (the Symphony paper's §2.1) it posts step s's send once it has
  fully received step s-1, under ``in_order`` once steps 0..s-1 have all arrived (a
  straggler: ``step_delay_s`` later, for every step but the first); it never waits for
  its own sends. An arrival of a later pass (from a faster peer) waits for its pass.
* A collective ends when its last step is applied (its own last sends may still be in
  flight or, for a straggler, not posted yet).
* Passes run back to back, ``compute_gap_s`` after the previous one ended; a training
  ``program`` instead gives each collective's (nbytes, ready_s, begins_iteration):
  collective i starts ``ready_s`` after its iteration began (the end of the iteration
  before's last collective; the first at ``start_s``), in order, while fewer than
  ``in_flight`` of the program's are under way (1, the default: once i-1 has ended; 0: no
  limit, as ASTRA-sim issues each layer's all-reduce).
* ``after_job``: the rank starts once this host's rank of that job is done (every pass
  ended and every send posted), ``start_s`` after that job's last collective ended.

Pure: the simulation calls :meth:`FluidRank.anchor` (t = 0) and :meth:`deliver`; the
program calls back ``send(program, pass, step index, t_s)`` and ``timer(t_s, fn)`` (which
calls ``fn(t_s)`` then), and appends ``collective`` records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from hosts.collectives import collective
from hosts.collectives.order import DEFAULT_ORDER, StepOrder, check_order, dependencies
from runtime.records import CollectiveDone

ALIGN_BYTES = 4        # hosts.rank's buffers are float32: chunks are multiples of 4 bytes


@dataclass(frozen=True)
class JobInput:
    """One job: ``hosts[i]`` runs rank i; ``rings`` (tuples of ranks) or, for a grid
    algorithm, ``grid`` (rows of ranks); ``nbytes`` per rank (with a ``program``, its
    largest collective's); ``step_delay_s``: host name -> a straggler's delay before each
    step's send after the first (the ``straggler`` perturbation, emulated seconds)."""
    job: int
    algorithm: str
    hosts: tuple
    rings: tuple
    nbytes: int
    grid: tuple | None = None
    passes: int = 1
    compute_gap_s: float = 0.0
    start_s: float = 0.0
    program: tuple | None = None
    after_job: int = 0
    step_delay_s: Mapping[str, float] = field(default_factory=dict)
    order: str = DEFAULT_ORDER       # the dependency rule (hosts.collectives.order)
    in_flight: int = 1               # a program's collectives under way at once (0: any)

    def __post_init__(self):
        check_order(self.order)
        if len(set(self.hosts)) != len(self.hosts) or len(self.hosts) < 2:
            raise ValueError(f"job {self.job}: needs >= 2 distinct hosts, got {self.hosts}")
        if not self.sizes():
            raise ValueError(f"job {self.job}: no collective to run (passes or program)")

    @classmethod
    def from_layout(cls, lay, step_delay_s: Mapping[str, float] | None = None) -> "JobInput":
        """From an ``emulator.plan.layout.JobLayout`` (or anything with its fields) and the
        stragglers {host: delay_s}, as the runner gives each rank its ``step_delay_s``."""
        return cls(job=lay.job, algorithm=lay.algorithm, hosts=tuple(lay.hosts),
                   rings=tuple(tuple(r) for r in lay.rings), nbytes=lay.nbytes,
                   grid=tuple(tuple(r) for r in lay.grid) if lay.grid else None,
                   passes=lay.passes, compute_gap_s=lay.compute_gap_s, start_s=lay.start_s,
                   program=tuple(tuple(c) for c in lay.program) if lay.program else None,
                   after_job=lay.after_job, step_delay_s=dict(step_delay_s or {}),
                   order=lay.order, in_flight=getattr(lay, "in_flight", 1))

    def group(self, rank: int) -> tuple:
        """What the rank's schedule is built over: the grid, or the ring holding it."""
        if self.grid is not None:
            return self.grid
        return self.rings[self.channel_base(rank)]

    def channel_base(self, rank: int) -> int:
        """The channel of the rank's group 0: its ring's index (a grid: 0, its row ring;
        the column ring is channel 1), as ``emulator.launch.runner`` configures it."""
        if self.grid is not None:
            return 0
        for i, ring in enumerate(self.rings):
            if rank in ring:
                return i
        raise ValueError(f"job {self.job}: rank {rank} is in none of the rings {self.rings}")

    def sizes(self) -> list[int]:
        """Bytes per rank of each collective, in order."""
        return [c[0] for c in self.program] if self.program else [self.nbytes] * self.passes


class FluidRank:
    """One job's collectives on one host, as fluid flows (the emulator's and the
    simulator's: ``hosts.rank.RankProgram``)."""

    def __init__(self, job: JobInput, rank: int, send: Callable, timer: Callable,
                 records: list):
        self.job, self.rank, self.host = job, rank, job.hosts[rank]
        self.send, self.timer, self.records = send, timer, records
        self.sizes = job.sizes()
        group = job.group(rank)
        self.schedules = {n: collective(job.algorithm).schedule(group, rank, n, ALIGN_BYTES)
                          for n in set(self.sizes)}
        self.deps = {n: dependencies(s, job.order) for n, s in self.schedules.items()}
        # hosts.rank's steps_per_collective (the layout's ``steps``): the same for every size
        self.steps_per_collective = len(self.schedule(0).steps)
        self.channel = job.channel_base(rank)
        self.delay_s = job.step_delay_s.get(self.host, 0.0)
        self.active: dict[int, StepOrder] = {}   # passes under way: their receives, sends
        self.starts: dict[int, float] = {}
        self.started = 0
        self.finished = 0
        self.limit = job.in_flight if job.in_flight > 0 else len(self.sizes)
        self.pending = False                 # the next pass's start is on the timer
        self.early: list[tuple[int, int]] = []   # (pass, step index) not started yet
        self.deferred = 0                    # straggler sends not posted yet
        self.last_end_s: float | None = None
        self.iteration_start_s = 0.0
        self.waiting: list["FluidRank"] = []   # programs that run after this one
        self.done_s: float | None = None

    def schedule(self, pass_index: int):
        return self.schedules[self.sizes[pass_index]]

    # --- starting -----------------------------------------------------------------
    def anchor(self, t_s: float, now_s: float) -> None:
        """The program's t = 0 (the run's, or the end of the job it runs after, ``now_s``
        being when that one is done): its first collective starts ``start_s`` (+ the
        first ``ready_s``) later, and never before ``now_s``."""
        self.iteration_start_s = t_s + self.job.start_s
        first = self.iteration_start_s + (self.job.program[0][1] if self.job.program else 0.0)
        self.pending = True
        self.timer(max(first, now_s), self.start_at)

    def start_at(self, t_s: float) -> None:
        self.pending = False
        p = self.started
        self.started += 1
        self.active[p] = StepOrder(self.deps[self.sizes[p]])
        self.starts[p] = t_s
        self.send(self, p, 0, t_s)
        early = [e for e in self.early if e[0] == p]
        self.early = [e for e in self.early if e[0] != p]
        for _, i in early:
            self.deliver(p, i, t_s)
        self._plan(t_s)

    def _plan(self, t_s: float) -> None:
        """After a pass started or ended at ``t_s``: the next one's start on the timer,
        once it is known (``hosts.rank.RankProgram``'s rule: in order, at most
        ``in_flight`` under way, an iteration once the one before has ended)."""
        if self.pending or self.started >= len(self.sizes) or len(self.active) >= self.limit:
            return
        if not self.job.program:
            if self.active:
                return
            when = t_s + self.job.compute_gap_s
        else:
            _, ready_s, begins_iteration = self.job.program[self.started]
            if begins_iteration:
                if self.active:
                    return                   # the iteration before has not ended
                self.iteration_start_s = t_s
            when = max(t_s, self.iteration_start_s + ready_s)
        self.pending = True
        self.timer(when, self.start_at)

    # --- receiving ------------------------------------------------------------------
    def deliver(self, pass_index: int, i: int, t_s: float) -> None:
        """Step ``i`` of pass ``pass_index`` has fully arrived at ``t_s``."""
        track = self.active.get(pass_index)
        if track is None:
            self.early.append((pass_index, i))
            return
        _, due = track.arrive(i)
        for j in due:
            if self.delay_s > 0:
                self.deferred += 1
                self.timer(t_s + self.delay_s,
                           lambda t, p=pass_index, j=j: self._deferred(p, j, t))
            else:
                self.send(self, pass_index, j, t_s)
        if track.done:
            self._end(pass_index, t_s)

    def _deferred(self, pass_index: int, i: int, t_s: float) -> None:
        self.deferred -= 1
        self.send(self, pass_index, i, t_s)
        self._check_done(t_s)

    def _end(self, p: int, t_s: float) -> None:
        steps = self.schedule(p).steps
        self.records.append(CollectiveDone(
            job=self.job.job, rank=self.rank, pass_index=p, algorithm=self.job.algorithm,
            nbytes=self.sizes[p], start_s=self.starts.pop(p), end_s=t_s, verified=True,
            steps=len(steps), host=self.host))
        del self.active[p]
        self.finished += 1
        self.last_end_s = t_s
        self._plan(t_s)
        self._check_done(t_s)

    def _check_done(self, t_s: float) -> None:
        if self.done_s is None and self.finished == len(self.sizes) and not self.deferred:
            self.done_s = t_s
            for other in self.waiting:
                other.anchor(self.last_end_s, t_s)

    def wire_step(self, pass_index: int, i: int) -> int:
        """The step a flow carries (``hosts.rank``: pass x steps per collective + step,
        16 bits on the wire); unmasked here."""
        return pass_index * self.steps_per_collective + self.schedule(pass_index).steps[i].step
