"""A run set's results as nccl-tests reports its own, for their analysis scripts: their
text columns (``--format nccl-tests``) and their ``-J`` JSON (``nccl-tests-<scheme>.json``,
per-iteration timing as with ``-I 1``). Their columns are real-scale equivalents, as
their tool would print them on the paper's 10 Gb/s fabric; everything comes from the
set's ``summary.json`` and each run's ``collective`` records."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from emulator.analysis.summary import Summary
from emulator.rundir import RunFolder
from runtime.records import CollectiveDone
from runtime.scale import Scale


NCCL_TYPE = {"ring_allgather": "none"}          # nccl-tests' redop column for all-gather


@dataclass(frozen=True)
class NcclRow:
    """A collective as nccl-tests' result line has it (its column names), at real scale."""
    size: int                       # bytes
    count: int                      # floats
    type: str
    redop: str
    root: int
    time: float                     # µs
    alg_bw: float                   # GB/s
    bus_bw: float
    nwrong: int
    experiment_name: str            # run set/scheme/seed/job/pass
    scheme: str
    faithful: bool


def nccl_rows(summary: Summary) -> list[NcclRow]:
    """One row per completed collective of every run: nccl-tests' fields, at real scale
    (their time in µs, bandwidths in GB/s); a wrong result counts 1 in #wrong."""
    sc = Scale(summary.scale.dilation)
    rows = []
    for run in summary.runs:
        for j in run.jobs:
            for c in j.collectives:
                if c.cct_s is None:
                    continue
                rows.append(NcclRow(
                    size=c.nbytes, count=c.nbytes // 4, type="float",
                    redop=NCCL_TYPE.get(j.algorithm, "sum"), root=-1,
                    time=sc.real_time_s(c.cct_s) * 1e6,
                    alg_bw=sc.real_rate_bps(c.algbw_bps) / 8 / 1e9,
                    bus_bw=sc.real_rate_bps(c.busbw_bps) / 8 / 1e9,
                    nwrong=0 if c.verified else 1,
                    experiment_name=f"{summary.name}/{run.scheme}/seed{run.seed}"
                                    f"/job{j.job}/pass{c.pass_index}",
                    scheme=run.scheme, faithful=run.fidelity.faithful))
    return rows


def _num(value: float, width: int) -> str:
    """A number in ``width`` characters the way nccl-tests prints its columns: 2, 1 or 0
    decimals as the integer part grows, then exponent notation."""
    digits = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    if digits < width - 2:
        return f"{value:{width}.2f}"
    if digits < width - 1:
        return f"{value:{width}.1f}"
    if digits < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def nccl_tests_text(summary: Summary) -> str:
    """nccl-tests' result table and footer, one block per scheme (as if their test ran
    once per scheme; a row per collective of each faithful run). The emulator has one
    buffer mode, so the in-place columns repeat the out-of-place ones (their parsers read
    either). Unfaithful runs are left out, as everywhere (counted in a comment line)."""
    every = nccl_rows(summary)
    out = [f"# symphony-emu: {summary.name}, real-scale equivalent times "
           f"(emulated / D = {summary.scale.dilation:g})"]
    for scheme in dict.fromkeys(x.scheme for x in every):
        mine = [x for x in every if x.scheme == scheme]
        rows = [x for x in mine if x.faithful]
        out += ["#", f"# scheme: {scheme} ({len(rows)} collective(s) of faithful runs)",
                "#",
                f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place"
                f"                       in-place          ",
                f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  "
                f"{'time':>7}  {'algbw':>6}  {'busbw':>6}  {'#wrong':>6}  {'time':>7}  "
                f"{'algbw':>6}  {'busbw':>6}  {'#wrong':>6} ",
                f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  {'(us)':>7}  "
                f"{'(GB/s)':>6}  {'(GB/s)':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  "
                f"{'(GB/s)':>6}  {'':>6} "]
        for x in rows:
            body = f"  {_num(x.time, 7)}  {_num(x.alg_bw, 6)}  {_num(x.bus_bw, 6)}" \
                   f"  {x.nwrong:>6}"
            out.append(f"{x.size:>12}  {x.count:>12}  {x.type:>8}  {x.redop:>6}  "
                       f"{x.root:>6}{body}{body}")
        wrong = sum(x.nwrong for x in rows)
        avg = sum(x.bus_bw for x in rows) / len(rows) if rows else 0.0
        if len(mine) > len(rows):
            out.append(f"# {len(mine) - len(rows)} collective(s) of unfaithful runs left out")
        out += [f"# {'Out of bounds values':<20} : {wrong} {'FAILED' if wrong else 'OK'}",
                f"# {'Avg bus bandwidth':<20} : {avg:g} ", "#"]
    return "\n".join(out) + "\n"


def rank_times(rundir: str) -> dict:
    """{(job, pass): {rank: seconds}} from a run's per-rank ``collective`` records: each
    rank's end less the pass's earliest start, so that the largest is the pass's CCT (as
    nccl-tests' per-iteration time is the largest over its processes)."""
    out: dict = {}
    for c in RunFolder(rundir).host_records(CollectiveDone):
        out.setdefault((c.job, c.pass_index), []).append(c)
    return {k: {c.rank: c.end_s - min(x.start_s for x in cs) for c in cs}
            for k, cs in out.items()}


def _iter_stats(times: list[float]) -> dict:
    avg = sum(times) / len(times)
    std = (sum((t - avg) ** 2 for t in times) / (len(times) - 1)) ** 0.5 if len(times) > 1 \
        else 0.0
    ordered = sorted(times)
    return {"avg_us": avg, "min_us": ordered[0], "max_us": ordered[-1],
            "p99_us": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "cv_pct": std / avg * 100 if avg else 0.0}


def nccl_tests_json(summary: Summary, scheme: str, argv: list[str] | None = None,
                    ranks: dict | None = None) -> dict:
    """One scheme's results in the shape of nccl-tests' ``-J`` file with per-iteration
    timing (``-I 1``): a result per (seed, job, size), its iterations the job's passes of
    that size, its processes the job's ranks (``ranks``: each faithful run's
    :func:`rank_times`, by run folder; without them, no per-iteration data). Times in
    µs and bandwidths in GB/s at real scale; both placements carry the same numbers (the
    emulator has one buffer mode). nccl-tests' ``analyze_perf_json.py`` reads it."""
    sc = Scale(summary.scale.dilation)
    us = sc.real_time_s(1.0) * 1e6                 # emulated seconds -> real-scale µs
    results, wrong_total, nranks = [], 0, 0
    sizes, bus_bws, iterations = [], [], []
    for run in summary.runs:
        if run.scheme != scheme or not run.fidelity.faithful:
            continue
        per_rank = (ranks or {}).get(run.rundir, {})
        for j in run.jobs:
            by_size: dict = {}
            for c in j.collectives:
                if c.cct_s is not None:
                    by_size.setdefault(c.nbytes, []).append(c)
            for size, cs in by_size.items():
                avg_s = sum(c.cct_s for c in cs) / len(cs)
                alg = size / sc.real_time_s(avg_s) / 1e9
                bus = alg * (cs[0].busbw_bps / cs[0].algbw_bps)
                wrong = sum(0 if c.verified else 1 for c in cs)
                wrong_total += wrong
                placed = {"time": avg_s * us, "alg_bw": alg, "bus_bw": bus, "nwrong": wrong}
                result = {"size": size, "count": size // 4, "type": "float",
                          "redop": NCCL_TYPE.get(j.algorithm, "sum"),
                          "root": f"{-1:6d}", "out_of_place": placed, "in_place": placed,
                          "actual_iterations": len(cs),
                          "experiment_name": f"{summary.name}/{scheme}/seed{run.seed}"
                                             f"/job{j.job}"}
                rows = [per_rank.get((j.job, c.pass_index), {}) for c in cs]
                members = sorted(set().union(*rows)) if rows else []
                if members and all(set(r) == set(members) for r in rows):
                    nranks = max(nranks, len(members))
                    per_process = [[r[m] * us for r in rows] for m in members]
                    times = [max(col) for col in zip(*per_process)]
                    per_iter = {"times_us": times, "per_process_max_times_us": per_process,
                                **_iter_stats(times)}
                    result = {**result, "out_of_place_per_iter": per_iter,
                              "in_place_per_iter": per_iter}
                results.append(result)
                sizes.append(size)
                bus_bws.append(bus)
                iterations.append(len(cs))
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    avg_bus = sum(bus_bws) / len(results) if results else 0.0
    return {"version": 2, "start_time": now, "args": list(argv or []), "env": [],
            "nccl_version": 0, "symphony_emu": {"scheme": scheme, "ranks": nranks,
                                                "real_scale": True,
                                                "dilation": summary.scale.dilation},
            "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": min(sizes, default=0),
                       "maximum_bytes": max(sizes, default=0), "step_bytes": 0,
                       "warmup_iters": 0, "iterations": max(iterations, default=0),
                       "aggregated_iterations": 1, "validation": 1, "graph": 0,
                       "blocking_collectives": "false", "per_iter_timing": "true",
                       "parallel_init": "false",
                       "devices": [{"rank": k, "hostname": f"rank{k}"} for k in range(nranks)]},
            "results": results,
            "out_of_bounds": {"count": wrong_total, "okay": "true" if not wrong_total
                              else "false"},
            "average_bus_bandwidth": {"bandwidth": avg_bus, "okay": "unchecked"},
            "errors": [], "end_time": now}


def write_nccl_tests_json(out_dir: str, summary: Summary) -> list[str]:
    """``nccl-tests-<scheme>.json`` per scheme (one file mixing schemes would average their
    bandwidths together); a mixed ``nccl-tests.json`` of an older report is removed."""
    ranks = {r.rundir: rank_times(r.rundir) for r in summary.runs
             if r.fidelity.faithful and os.path.isdir(r.rundir)}
    paths = []
    for scheme in dict.fromkeys(r.scheme for r in summary.runs):
        path = os.path.join(out_dir, f"nccl-tests-{scheme}.json")
        with open(path, "w") as f:
            json.dump(nccl_tests_json(summary, scheme, ranks=ranks), f, indent=1)
        paths.append(path)
    old = os.path.join(out_dir, "nccl-tests.json")
    if os.path.exists(old):
        os.remove(old)
    return paths
