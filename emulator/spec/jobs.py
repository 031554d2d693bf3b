"""What a spec runs on its fabric, checked against its topology: ``[[jobs]]`` (collectives,
or data-parallel training workloads), or a ``[job_stream]`` that generates them
(``emulator.spec.jobstream``), or ``[[messages]]`` (single flows), exactly one of the three.
A job's hosts, ring layout, algorithm, sizes and passes, its place after another job
(``after_job``) and the hosts it shares; a message's hosts, size and wire fields.
"""

from __future__ import annotations

from emulator.spec import jobstream, rings as ring_layouts
from emulator.spec.schema import (ALGORITHM_NAMES, GRID_ALGORITHMS, MAX_BYTES_PER_RANK, MAX_PASSES,
                             JobSpec, MessageSpec, TopologySpec)
from emulator.spec.check import SpecError, need, section, show
from emulator.spec.workloads import WORKLOAD_NAMES
from hosts.collectives import ALGORITHMS
from runtime.wire import MAX_JOB


def jobs_and_messages(raw: dict, path: str, topo: TopologySpec,
                      dilation: float) -> tuple[tuple[JobSpec, ...], tuple[MessageSpec, ...]]:
    """The spec's jobs (``[[jobs]]`` or ``[job_stream]``) and messages, checked."""
    jobs_raw = raw.get("jobs", [])
    if "job_stream" in raw:
        need(not jobs_raw and isinstance(raw["job_stream"], dict), path, "job_stream",
             raw["job_stream"], "a table, instead of [[jobs]] (it generates them)")

        def stream_error(key, value, allowed):
            need(False, path, key, value, allowed)
        jobs_raw = jobstream.expand(raw["job_stream"], stream_error)
    msgs_raw = raw.get("messages", [])
    need(isinstance(msgs_raw, list), path, "messages", msgs_raw,
         "must be a list of [[messages]] tables")
    need(isinstance(jobs_raw, list) and (len(jobs_raw) > 0) != (len(msgs_raw) > 0), path,
         "jobs", jobs_raw, "give [[jobs]] (collectives) or [[messages]] (single flows), "
         "exactly one of the two")
    messages = tuple(_message(section(MessageSpec, m, f"messages[{i}]", path, dilation),
                              f"messages[{i}]", path, topo)
                     for i, m in enumerate(msgs_raw))
    keys = [(m.src, m.dst, m.job, m.channel, m.step) for m in messages]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    need(dup is None, path, "messages", dup,
         "two messages with the same (src, dst, job, channel, step)")
    jobs = []
    used_hosts: dict[str, list[int]] = {}
    follows: dict[int, set[int]] = {}          # job id -> ids it (transitively) runs after
    for i, j in enumerate(jobs_raw):
        where = f"jobs[{i}]"
        if isinstance(j, dict) and "hosts" in j and isinstance(j["hosts"], list):
            j = dict(j, hosts=tuple(j["hosts"]))
        if isinstance(j, dict) and isinstance(j.get("grid"), list):
            j = dict(j, grid=tuple(j["grid"]))
        job = section(JobSpec, j, where, path, dilation)
        job = _job(job, where, path, topo)
        follows[job.id] = set()
        if job.after_job:
            prev = next((x for x in jobs if x.id == job.after_job), None)
            need(prev is not None, path, f"{where}.after_job", job.after_job,
                 "must be the id of a job listed before this one")
            missing = set(job_hosts(job, topo)) - set(job_hosts(prev, topo))
            need(not missing, path, f"{where}.after_job", job.after_job,
                 f"each rank starts after job {prev.id}'s rank on its host, so the hosts must "
                 f"be a subset of job {prev.id}'s; not in it: {', '.join(sorted(missing))}")
            follows[job.id] = {prev.id} | follows[prev.id]
        for h in job_hosts(job, topo):
            clash = [x for x in used_hosts.get(h, []) if x not in follows[job.id]]
            need(not clash, path, f"{where}.hosts", list(job.hosts),
                 f"host {h} is already in job {clash[0] if clash else ''}; jobs need disjoint "
                 "hosts unless one runs after the other (after_job)")
            used_hosts.setdefault(h, []).append(job.id)
        need(job.id not in [x.id for x in jobs], path, f"{where}.id", job.id,
             "job ids must be unique")
        jobs.append(job)
    return tuple(jobs), messages


def _message(m: MessageSpec, where: str, path: str, topo: TopologySpec) -> MessageSpec:
    hosts = topo.host_names
    for key in ("src", "dst"):
        need(getattr(m, key) in hosts, path, f"{where}.{key}", getattr(m, key),
             f"a host of this topology: {hosts[0]}..{hosts[-1]}")
    need(m.src != m.dst, path, f"{where}.dst", m.dst, "must differ from src")
    need(isinstance(m.bytes, int) and 1 <= m.bytes <= 1 << 30, path, f"{where}.bytes", m.bytes,
         "must be in 1..2**30")
    need(1 <= m.job <= MAX_JOB, path, f"{where}.job", m.job, f"must be in 1..{MAX_JOB}")
    need(0 <= m.step <= 0xFFFF, path, f"{where}.step", m.step, "must be in 0..65535")
    need(0 <= m.channel <= 0xFF, path, f"{where}.channel", m.channel, "must be in 0..255")
    return m


def job_hosts(job: JobSpec, topo: TopologySpec) -> list[str]:
    """The host names of ``job`` (``"all"``: every host of the topology)."""
    return topo.host_names if job.hosts == ("all",) else list(job.hosts)


def _job(job: JobSpec, where: str, path: str, topo: TopologySpec) -> JobSpec:
    need(isinstance(job.id, int) and 1 <= job.id <= MAX_JOB, path, f"{where}.id", job.id,
         f"must be an integer in 1..{MAX_JOB}")
    need(isinstance(job.after_job, int) and not isinstance(job.after_job, bool)
         and job.after_job >= 0 and job.after_job != job.id, path, f"{where}.after_job",
         job.after_job, "0 (none) or the id of another job")
    if isinstance(job.hosts, str):
        job = JobSpec(**{**job.__dict__, "hosts": (job.hosts,)})
    need(isinstance(job.hosts, tuple) and all(isinstance(h, str) for h in job.hosts), path,
         f"{where}.hosts", job.hosts, '"all" or a list of host names')
    names = topo.host_names
    hosts = job_hosts(job, topo)
    for h in hosts:
        need(h in names, path, f"{where}.hosts", list(job.hosts),
             f"unknown host {h!r}; this topology has {names[0]}..{names[-1]}")
    need(len(set(hosts)) == len(hosts), path, f"{where}.hosts", list(job.hosts),
         "a host is listed twice")
    need(len(hosts) >= 2, path, f"{where}.hosts", list(job.hosts), "a job needs >= 2 hosts")
    need(job.algorithm in ALGORITHM_NAMES, path, f"{where}.algorithm", job.algorithm,
         f"allowed: {', '.join(ALGORITHM_NAMES)}")
    need(job.rings in ring_layouts.LAYOUTS, path, f"{where}.rings", job.rings,
         f"allowed: {', '.join(ring_layouts.LAYOUTS)}")
    coll = ALGORITHMS[job.algorithm]
    if coll.needs_grid:
        need(job.ring_size is None, path, f"{where}.ring_size", job.ring_size,
             "not for a grid algorithm (its rings are the grid's rows and columns)")
        g = job.grid
        err = coll.check(g if isinstance(g, tuple) and len(g) == 2
                         and all(isinstance(x, int) and not isinstance(x, bool) for x in g)
                         else None)
        need(err is None, path, f"{where}.grid", g, err)
        need(g[0] * g[1] == len(hosts), path, f"{where}.grid", list(g),
             f"rows x columns must equal the job's {len(hosts)} hosts")
    else:
        need(job.grid is None, path, f"{where}.grid", job.grid,
             f"only for {', '.join(GRID_ALGORITHMS)}")
        try:
            group_size = len(ring_layouts.rings(sorted(hosts, key=lambda h: int(h[1:])),
                                                topo.per_leaf, job.rings, job.ring_size)[0])
        except ValueError as e:
            key = "ring_size" if job.ring_size is not None or job.rings == "blocks" else "rings"
            raise SpecError(f"{path}: {where}.{key} = {show(getattr(job, key))}: {e}") from None
        err = coll.check(group_size)
        need(err is None, path, f"{where}.algorithm", job.algorithm, err)
    if job.workload is not None:
        return _workload(job, where, path)
    need(job.in_flight == 1, path, f"{where}.in_flight", job.in_flight,
         "only with a workload (passes of one size run one at a time)")
    need((job.chunk_bytes is None) != (job.size_bytes is None), path, f"{where}.chunk_bytes",
         job.chunk_bytes, "give exactly one of chunk_bytes and size_bytes (or a workload)")
    size = job.chunk_bytes if job.chunk_bytes is not None else job.size_bytes
    key = "chunk_bytes" if job.chunk_bytes is not None else "size_bytes"
    need(isinstance(size, int) and not isinstance(size, bool) and size >= 4 and size % 4 == 0,
         path, f"{where}.{key}", size, "must be a positive multiple of 4 bytes")
    need(size <= 1 << 30, path, f"{where}.{key}", size, "must be <= 1 GiB")
    why = passes_error(job, job.passes, topo)
    need(why is None, path, f"{where}.passes", job.passes, why)
    return job


def passes_error(job: JobSpec, passes, topo: TopologySpec) -> str | None:
    """Why ``passes`` collectives of the (valid) ``job`` are not allowed, or None."""
    if isinstance(passes, bool) or not isinstance(passes, int):
        return "must be an integer"
    if not 1 <= passes <= MAX_PASSES:
        return f"must be in 1..{MAX_PASSES}"
    size = job.size_bytes if job.size_bytes is not None else job.chunk_bytes
    per_rank = size if job.size_bytes is not None else size * len(job_hosts(job, topo))
    if per_rank * passes > MAX_BYTES_PER_RANK:          # (chunks per rank <= ranks)
        return (f"passes x bytes per rank = {passes} x {per_rank} B is more than 2**36 B "
                "(64 GiB), the most one rank may move in a run")
    return None


# What a training workload's gradients may be all-reduced with: rings (one data-parallel
# group a ring) or the 2D ring (the whole job one group: ASTRA-sim's ring_ring)
ALLREDUCES = ("ring_allreduce", "ring2d_allreduce")


def _workload(job: JobSpec, where: str, path: str) -> JobSpec:
    need(job.workload in WORKLOAD_NAMES, path, f"{where}.workload", job.workload,
         f"allowed: {', '.join(WORKLOAD_NAMES)}")
    need(job.algorithm in ALLREDUCES, path, f"{where}.algorithm", job.algorithm,
         "a training workload all-reduces its gradients: " + " or ".join(ALLREDUCES))
    for key in ("chunk_bytes", "size_bytes"):
        need(getattr(job, key) is None, path, f"{where}.{key}", getattr(job, key),
             "not with a workload (its bucket sizes come from the model)")
    need(job.passes == 1 and job.compute_gap_us == 0, path, f"{where}.passes", job.passes,
         "not with a workload: give iterations (compute time comes from the model)")
    need(isinstance(job.iterations, int) and not isinstance(job.iterations, bool)
         and 1 <= job.iterations <= 1000, path, f"{where}.iterations", job.iterations,
         "must be in 1..1000")
    need(isinstance(job.in_flight, int) and not isinstance(job.in_flight, bool)
         and 0 <= job.in_flight <= 1000, path, f"{where}.in_flight", job.in_flight,
         "must be an integer in 0..1000 (0: no limit; 1: one all-reduce at a time)")
    return job           # gradient_scale, bucket_mb, compute_speedup: their Range
