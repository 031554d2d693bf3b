"""A random stream of jobs sharing the fabric (paper §4.5, Fig 7c), expanded into ordinary
``[[jobs]]`` tables when a spec is loaded.

The paper draws Ring AllReduce jobs of 16, 32 or 64 nodes (of 128), 4, 16 or 32 MB and
16-128 passes, arriving at random while at most 3-4 run at once. Here the hosts are cut
into fixed *slots* (disjoint host sets: e.g. 8 + 4 + 2 + 2 of 16 hosts, the same
fractions of the cluster), and each slot runs a chain of jobs, one after another
(``after_job``), each after a random idle gap. So up to ``len(slots)`` jobs run at once,
and a slot's job size is its host count. Everything random comes from ``seed``
(numpy's default generator), so baseline and Symphony get the same stream.

    [job_stream]
    seed = 1
    slots = [["h0", "h1", "h4", "h5", "h8", "h9", "h12", "h13"], ["h2", "h6", "h10", "h14"],
             ["h3", "h7"], ["h11", "h15"]]
    jobs_per_slot = 3
    size_bytes = [65536, 262144, 524288]     # per rank, one drawn per job
    passes = [1, 8]                          # drawn uniformly from min..max
    gap_ms = [0.0, 4.0]                      # idle time before each job, uniform
    rings = "rail"                           # as [[jobs]].rings

Job ids are 1, 2, ... in slot order.
"""

from __future__ import annotations

import math

KEYS = {"seed", "slots", "jobs_per_slot", "size_bytes", "passes", "gap_ms", "rings"}


def expand(stream: dict, error) -> list[dict]:
    """The ``[[jobs]]`` tables of a stream. ``error(key, value, allowed)`` raises."""
    for k in stream:
        if k not in KEYS:
            error(f"job_stream.{k}", stream[k], f"unknown key; allowed: {', '.join(sorted(KEYS))}")
    seed = stream.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        error("job_stream.seed", seed, "must be an integer >= 0")
    slots = stream.get("slots")
    if not (isinstance(slots, list) and slots and all(
            isinstance(s, list) and len(s) >= 2 and all(isinstance(h, str) for h in s)
            for s in slots)):
        error("job_stream.slots", slots, "a non-empty list of host lists (>= 2 hosts each)")
    per = stream.get("jobs_per_slot", 3)
    if not isinstance(per, int) or isinstance(per, bool) or not 1 <= per <= 1000:
        error("job_stream.jobs_per_slot", per, "must be in 1..1000")
    sizes = stream.get("size_bytes", [65536, 262144, 524288])
    if not (isinstance(sizes, list) and sizes and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 4 for x in sizes)):
        error("job_stream.size_bytes", sizes, "a non-empty list of byte counts (>= 4)")
    passes = _range(stream.get("passes", [1, 8]), "job_stream.passes", error, integer=True)
    gaps = _range(stream.get("gap_ms", [0.0, 4.0]), "job_stream.gap_ms", error)
    import numpy as np      # here, not at the top: the spec (and so `mn --custom`, under
    rng = np.random.default_rng(seed)   # the system Python) loads without numpy
    jobs = []
    for slot in slots:
        prev = 0
        for _ in range(per):
            job = {"id": len(jobs) + 1, "hosts": list(slot), "algorithm": "ring_allreduce",
                   "rings": stream.get("rings", "rail"),
                   "size_bytes": int(sizes[rng.integers(len(sizes))]),
                   "passes": int(rng.integers(passes[0], passes[1] + 1)),
                   "start_ms": float(rng.uniform(gaps[0], gaps[1]))}
            if prev:
                job["after_job"] = prev
            jobs.append(job)
            prev = job["id"]
    return jobs


def _range(v, key, error, integer=False):
    kinds = (int,) if integer else (int, float)
    if not (isinstance(v, list) and len(v) == 2 and all(
            isinstance(x, kinds) and not isinstance(x, bool) and math.isfinite(x) for x in v)
            and 0 <= v[0] <= v[1]):
        error(key, v, f"[min, max] with 0 <= min <= max, finite"
                      f"{' (integers)' if integer else ''}")
    if integer and v[0] < 1:
        error(key, v, "[min, max] with 1 <= min <= max (integers)")
    return v
