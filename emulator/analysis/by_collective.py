"""Where a training job's time goes, collective by collective: why Symphony can shorten
the median collective of a program and lengthen its job (issue 46, Table 2).

A training program's collectives differ in size by orders of magnitude (VGG16's fc6
layer holds 74 % of its gradients), so the median CCT counts the many small ones and the
JCT follows the few large ones. For one scheme against another, paired by seed, this
splits the programs' collectives in two by bytes: the **large** ones (the fewest, largest
first, that carry at least half of a pass's bytes) and the **small** rest, and compares,
per seed:

* ``jct``: the job's completion time (what the paper's Table 2 compares);
* ``sync``: the time some all-reduce of the job is under way (the union of the
  collectives' [start, end] intervals): the "gradient synchronization phase time" of the
  paper's Table 2 caption, as we read it;
* ``median_cct``: the median collective (what the page's CCT rows report);
* ``large_cct`` / ``small_cct``: the summed CCT of each group.

Reads the ``summary.json`` of a run folder (``emulator.analysis.summary``'s: per run, per
job, per collective its pass, bytes, start and CCT); only faithful runs (the summary's
own ``excluded`` are left out, as everywhere).

    python -m emulator.analysis.by_collective FOLDER [FOLDER ...] [--against baseline]
        [--scheme symphony] [--csv OUT]

Each FOLDER is one variant's run folder (a sweep's ``<out>/<variant>``). Pure but for
:func:`main`.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys

from emulator.analysis.stats import paired

METRICS = ("jct", "sync", "median_cct", "large_cct", "small_cct")


def large_passes(sizes: dict[int, int]) -> set[int]:
    """The passes of one iteration-or-program, largest first, that together carry at least
    half of its bytes (ties by pass index)."""
    total = sum(sizes.values())
    out, acc = set(), 0
    for p, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        if acc * 2 >= total:
            break
        out.add(p)
        acc += n
    return out


def union_s(intervals) -> float:
    """The length of the union of [start, end] intervals."""
    total, end = 0.0, -float("inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def job_times(job: dict) -> dict[str, float]:
    """One run's job: the metrics of the module's docstring (seconds)."""
    colls = job["collectives"]
    sizes = {c["pass"]: c["nbytes"] for c in colls}
    large = large_passes(sizes)
    ccts = [c["cct_s"] for c in colls]
    return {"jct": job["jct_s"],
            "sync": union_s((c["start_s"], c["start_s"] + c["cct_s"]) for c in colls),
            "median_cct": statistics.median(ccts),
            "large_cct": sum(c["cct_s"] for c in colls if c["pass"] in large),
            "small_cct": sum(c["cct_s"] for c in colls if c["pass"] not in large)}


def per_seed(summary: dict, scheme: str) -> dict[int, dict[str, float]]:
    """Seed -> job 1's metrics under ``scheme``, for the summary's faithful runs."""
    excluded = {(e["scheme"], e["seed"], e.get("repeat", 1)) for e in summary.get("excluded", [])}
    out = {}
    for run in summary["runs"]:
        if run["scheme"] != scheme or (run["scheme"], run["seed"], run.get("repeat", 1)) in excluded:
            continue
        jobs = [j for j in run["jobs"] if j["job"] == 1 and j.get("jct_s")]
        if jobs:
            out[run["seed"]] = job_times(jobs[0])
    return out


def compare(summary: dict, scheme: str = "symphony", against: str = "baseline") -> dict:
    """Per metric: ``stats.paired`` of ``scheme`` against ``against`` over the seeds both
    have, and the large collectives' share of the baseline's summed CCT."""
    a, b = per_seed(summary, against), per_seed(summary, scheme)
    seeds = sorted(set(a) & set(b))
    out: dict = {"seeds": seeds}
    if not seeds:
        return out
    for m in METRICS:
        out[m] = paired([a[s][m] for s in seeds], [b[s][m] for s in seeds])
    out["large_share"] = statistics.median(
        a[s]["large_cct"] / (a[s]["large_cct"] + a[s]["small_cct"]) for s in seeds)
    return out


def _fmt(p) -> str:
    ci = f" [{p.median_ci[0]:+.1%}, {p.median_ci[1]:+.1%}]" if p.median_ci else ""
    return f"{p.median:+.1%}{ci}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", help="run folders (one variant each)")
    ap.add_argument("--scheme", default="symphony")
    ap.add_argument("--against", default="baseline")
    ap.add_argument("--csv", help="write the per-folder medians here")
    args = ap.parse_args(argv)
    rows = []
    for folder in args.folders:
        path = os.path.join(folder, "summary.json")
        try:
            with open(path) as f:
                summary = json.load(f)
        except (OSError, ValueError) as e:
            print(f"by_collective: {path}: {e}", file=sys.stderr)
            return 2
        res = compare(summary, args.scheme, args.against)
        name = os.path.basename(os.path.normpath(folder))
        if not res["seeds"]:
            print(f"{name}: no seed with both {args.scheme} and {args.against}")
            continue
        row = {"variant": name, "pairs": len(res["seeds"]),
               "large_share": round(res["large_share"], 3)}
        for m in METRICS:
            p = res[m]
            row[m] = round(p.median, 4)
            row[f"{m}_lo"] = round(p.median_ci[0], 4) if p.median_ci else ""
            row[f"{m}_hi"] = round(p.median_ci[1], 4) if p.median_ci else ""
        rows.append(row)
        print(f"{name} ({len(res['seeds'])} pairs; large collectives "
              f"{res['large_share']:.0%} of the baseline's summed CCT): "
              + "; ".join(f"{m} {_fmt(res[m])}" for m in METRICS))
    if args.csv and rows:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
