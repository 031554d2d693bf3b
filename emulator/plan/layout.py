"""From a job spec to concrete ranks: which host is which rank, the rings, the buffer size,
and the perfect-lockstep (theoretical) collective time."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from emulator.spec import rings as ring_layouts, workloads
from hosts.collectives import collective, grid_of
from hosts.collectives.order import DEFAULT_ORDER
from runtime import wire

if TYPE_CHECKING:
    from emulator.spec.schema import JobSpec, TopologySpec


@dataclass(frozen=True)
class JobLayout:
    job: int
    algorithm: str
    hosts: tuple           # host name of rank i
    rings: tuple           # tuple of rings (tuples of ranks); for 2D: the grid's rows
    grid: tuple | None     # 2D: grid[row][col] of ranks
    nbytes: int            # buffer bytes per rank
    steps: int             # steps per collective
    passes: int
    compute_gap_s: float
    start_s: float
    ring_size: int         # N of nccl-tests' bus factor
    # A training workload's collectives, (nbytes, ready_s, begins_iteration) each (see
    # emulator.spec.workloads.program); None: ``passes`` collectives of ``nbytes``.
    program: tuple | None = None
    after_job: int = 0     # starts, rank by rank, after this job (see JobSpec)
    order: str = DEFAULT_ORDER   # the dependency rule (hosts.collectives.order)
    in_flight: int = 1     # a program's collectives under way at once (0: any; JobSpec)

    @property
    def bus_factor(self) -> float:
        return collective(self.algorithm).bus_factor(self.ring_size)

    def ring_of(self, rank: int) -> tuple:
        return next(r for r in self.rings if rank in r)

    def group_of(self, rank: int) -> tuple:
        """What ``rank``'s schedule is built over: its ring, or the grid."""
        return collective(self.algorithm).group_of(self.rings, self.grid, rank)

    def schedule(self, rank: int = 0, nbytes: int | None = None):
        """``rank``'s schedule of one collective (of ``nbytes``; default: the job's)."""
        return collective(self.algorithm).schedule(self.group_of(rank), rank,
                                                   self.nbytes if nbytes is None else nbytes)


def layout(job: JobSpec, topo: TopologySpec, time_s, order: str = DEFAULT_ORDER) -> JobLayout:
    """``time_s`` converts a real-scale duration in seconds to emulated seconds; ``order``
    is the run's dependency rule (the spec's ``collective.order``)."""
    hosts = topo.host_names if job.hosts == ("all",) else list(job.hosts)
    hosts = sorted(hosts, key=lambda h: int(h[1:]))
    n = len(hosts)
    algo = collective(job.algorithm)
    grid = None
    if algo.needs_grid:
        grid = rings = grid_of(*job.grid)
    else:
        rings = ring_layouts.rings(hosts, topo.per_leaf, job.rings, job.ring_size)
    group = algo.group_of(rings, grid, 0)
    x, ring_size = algo.n_chunks(group), len(algo.members(group))
    nbytes = job.chunk_bytes * x if job.chunk_bytes is not None else job.size_bytes
    program = None
    passes = job.passes
    if job.workload is not None:
        coll = workloads.program(job.workload, job.iterations, job.gradient_scale,
                                 int(job.bucket_mb * 2**20), job.compute_speedup, time_s,
                                 align_bytes=x * 4)
        program = tuple((c.nbytes, c.ready_s, c.begins_iteration) for c in coll)
        passes = len(program)
        nbytes = max(c.nbytes for c in coll)
    steps = algo.n_steps(group)
    return JobLayout(job.id, job.algorithm, tuple(hosts), rings, grid, nbytes, steps,
                     passes, time_s(job.compute_gap_us * 1e-6), time_s(job.start_ms * 1e-3),
                     ring_size, program, job.after_job, order, job.in_flight)


def collective_bytes(lay: JobLayout, index: int) -> int:
    """Bytes per rank of the ``index``-th collective of a job."""
    return lay.program[index][0] if lay.program else lay.nbytes


def wire_bytes(payload_bytes: int, mtu_bytes: int) -> int:
    """Bytes on the link (Ethernet + IP + UDP + BTH + ICRC per packet) of one message."""
    packets = max(1, math.ceil(payload_bytes / mtu_bytes))
    return payload_bytes + packets * (wire.OVERHEAD_BYTES + 14)


def theoretical_cct_s(lay: JobLayout, rate_bps: float, mtu_bytes: int,
                      step_latency_s: float = 0.0, nbytes: int | None = None) -> float:
    """Perfect lockstep: every step's flow runs at the full link rate (framing included)
    and the next step starts the moment it has fully arrived, plus ``step_latency_s`` per
    step. The emulated links add no per-hop serialization delay (a shaped veth hands a
    dequeued frame over at once; at real scale 3 hops x 3.3 µs is 0.1 % of an 8 MB
    chunk's time), so the default latency is 0 and measured / theoretical >= 1.
    ``nbytes``: of one collective of a program (default: the job's)."""
    sch = lay.schedule(0, nbytes)
    return sum(wire_bytes(st.send_range[1], mtu_bytes) * 8 / rate_bps + step_latency_s
               for st in sch.steps)
