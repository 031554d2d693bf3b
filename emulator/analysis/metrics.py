"""The paper's metrics from a run's logs (docs/architecture.md §6). Pure functions on records.

A *flow* here is one step's transfer between two ranks, joined from the sender's
``send_flow`` and the receiver's ``recv_flow`` records: active from its first packet sent
(``t_start``) until its last packet delivered in order (``t_end``).

* CCT: collective start (earliest rank) -> the last rank holds the result; JCT: job start
  -> job end.
* Degree of step overlap at time t: max step - min step + 1 over the job's active flows
  (1 = lockstep; 0 = nothing in flight).
* Step completion rate: 1 / (T_s - T_{s-1}), T_s = the time the last flow of step s
  completed, normalized by the ideal 1 / (chunk time at link rate).
* Last-step span: completion of the slowest minus the fastest flow of the final step.
* Throughput timeline: each flow's bytes spread evenly over its active interval, binned;
  the jobs' aggregate throughput while all of them run: the same bits over that window
  (paper Fig 7a).
* algbw = bytes per rank / CCT; busbw = algbw x 2(N-1)/N (all-reduce) or (N-1)/N
  (reduce-scatter, all-gather), as nccl-tests reports them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from runtime.records import CollectiveDone, FlowReceived, FlowSent


@dataclass(frozen=True, slots=True)
class Transfer:
    """One step's flow as both ends logged it: from the sender's first packet to the
    receiver's last in order."""
    job: int
    channel: int
    step: int
    src: str
    dst: str
    bytes: int
    t_start: float
    t_end: float
    retransmits: int
    cnps: int


def join_flows(sends: list[FlowSent], recvs: list[FlowReceived]) -> list[Transfer]:
    """One transfer per flow that both ends logged (sender start, receiver end)."""
    by_key = {(r.job, r.channel, r.step, r.src, r.dst): r for r in recvs}
    flows = []
    for s in sends:
        r = by_key.get((s.job, s.channel, s.step, s.src, s.dst))
        if r is None or r.end_s is None:
            continue
        flows.append(Transfer(s.job, s.channel, s.step, s.src, s.dst, s.bytes, s.start_s,
                              r.end_s, s.retransmits, s.cnps))
    return flows


@dataclass(frozen=True, slots=True)
class CollectiveTime:
    """One pass of a job's collective over the ranks that logged it: from the earliest
    rank's start to the latest's end."""
    start_s: float
    end_s: float
    cct_s: float
    verified: bool                  # every rank's result right
    ranks: int                      # ranks that finished it


def collective_times(records: list[CollectiveDone]) -> dict[tuple, CollectiveTime]:
    """(job, pass) -> its :class:`CollectiveTime`."""
    groups = defaultdict(list)
    for r in records:
        groups[(r.job, r.pass_index)].append(r)
    out = {}
    for key, rs in sorted(groups.items()):
        start = min(r.start_s for r in rs)
        end = max(r.end_s for r in rs)
        out[key] = CollectiveTime(start, end, end - start, all(r.verified for r in rs),
                                  len(rs))
    return out


def overlap_timeline(flows: list[Transfer], job: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact step-function of the degree of step overlap: (event times, value from each
    time until the next)."""
    events = []
    for f in flows:
        if f.job == job:
            events.append((f.t_start, 1, f.step))
            events.append((f.t_end, -1, f.step))
    events.sort(key=lambda e: (e[0], -e[1]))
    active: dict[int, int] = defaultdict(int)
    ts, vs = [], []
    for t, d, step in events:
        active[step] += d
        if active[step] == 0:
            del active[step]
        v = (max(active) - min(active) + 1) if active else 0
        if ts and ts[-1] == t:
            vs[-1] = v
        else:
            ts.append(t)
            vs.append(v)
    return np.array(ts), np.array(vs)


def max_overlap(flows: list[Transfer], job: int) -> int:
    _, v = overlap_timeline(flows, job)
    return int(v.max()) if len(v) else 0


@dataclass(frozen=True)
class StepCompletion:
    """Per step of a job, in step order (:func:`step_completion`)."""
    steps: list[int]
    t_done: list[float]             # its last flow's end
    duration_s: list[float]         # since the previous step's completion
    normalized_rate: list[float]    # the ideal chunk time at link rate over the duration


def step_completion(flows: list[Transfer], job: int, rate_bps: float,
                    wire_bytes=lambda b: b) -> StepCompletion:
    """Per step: completion time, duration since the previous step's completion, and the
    normalized completion rate (1 = the ideal chunk time at link rate)."""
    by_step = defaultdict(list)
    for f in flows:
        if f.job == job:
            by_step[f.step].append(f)
    steps = sorted(by_step)
    if not steps:
        return StepCompletion([], [], [], [])
    t_prev = min(f.t_start for f in by_step[steps[0]])
    done, dur, norm = [], [], []
    for s in steps:
        t = max(f.t_end for f in by_step[s])
        d = t - t_prev
        ideal = wire_bytes(max(f.bytes for f in by_step[s])) * 8 / rate_bps
        done.append(t)
        dur.append(d)
        norm.append(ideal / d if d > 0 else float("nan"))
        t_prev = t
    return StepCompletion(steps, done, dur, norm)


def last_step_span(flows: list[Transfer], job: int) -> float:
    mine = [f for f in flows if f.job == job]
    if not mine:
        return 0.0
    last = max(f.step for f in mine)
    ends = [f.t_end for f in mine if f.step == last]
    return max(ends) - min(ends)


def throughput_timeline(flows: list[Transfer], job: int | None, bin_s: float,
                        t0: float | None = None, t1: float | None = None):
    """(bin start times, bit/s) of the delivered bytes of ``job`` (all jobs if None)."""
    mine = [f for f in flows if job is None or f.job == job]
    if not mine:
        return np.array([]), np.array([])
    t0 = min(f.t_start for f in mine) if t0 is None else t0
    t1 = max(f.t_end for f in mine) if t1 is None else t1
    n = max(1, int(np.ceil((t1 - t0) / bin_s - 1e-9)))   # 0.07 / 0.01 is 7.000000000000001
    edges = t0 + bin_s * np.arange(n + 1)
    out = np.zeros(n)
    for f in mine:
        a, b = f.t_start, f.t_end
        if b <= a:
            continue
        rate = f.bytes * 8 / (b - a)
        lo = np.clip(edges[:-1], a, b)
        hi = np.clip(edges[1:], a, b)
        out += rate * (hi - lo)
    return edges[:-1], out / bin_s


def mean_throughput(flows: list[Transfer], t0: float, t1: float) -> float | None:
    """Bit/s the flows delivered in [t0, t1], each flow's bytes spread evenly over its
    active interval (as :func:`throughput_timeline`); None for an empty window."""
    if not t1 > t0:
        return None
    bits = 0.0
    for f in flows:
        if f.t_end > f.t_start:
            seen = min(f.t_end, t1) - max(f.t_start, t0)
            if seen > 0:
                bits += f.bytes * 8 * seen / (f.t_end - f.t_start)
    return bits / (t1 - t0)


def bandwidths(nbytes: int, cct_s: float, bus_factor: float) -> tuple[float, float]:
    """(algbw, busbw) in bytes/s, nccl-tests' conventions."""
    alg = nbytes / cct_s if cct_s > 0 else 0.0
    return alg, alg * bus_factor


def cdf(values) -> tuple[np.ndarray, np.ndarray]:
    v = np.sort(np.asarray(values, dtype=float))
    return v, np.arange(1, len(v) + 1) / len(v)
