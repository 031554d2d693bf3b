"""Where a collective's time goes, phase by phase, and where a scheme marks: why Symphony
can lengthen a job on the 2D ring at 128 nodes (issues 44, 46).

A two-dimensional ring all-reduce (``hosts/collectives/ring2d.py``) runs three phases
back to back at each rank: a reduce-scatter on its row ring, an all-reduce on its column
ring, an all-gather on its row ring; a rank's steps say which (``steps.csv``'s ``ring``:
0 rows, 1 columns). A 1D ring has one phase. For each run this gives, per phase:

* ``<phase>_s``: a rank's time in the phase, summed over the job's collectives, the mean
  over ranks. A rank's phase starts when its previous phase ends (its last step's data
  arrived; the first phase: its first step's first byte) and ends when the phase's last
  step's data arrived, so the phases tile each rank's time in collectives;
* ``<channel>_marked``: the share of the channel's data packets that arrived CE-marked
  (``flows.csv``: ``ce_marks`` / ``packets``), by any cause: RED's and the scheme's;

and, paired by seed, one scheme against another (``stats.paired``): which phase grew.

Reads the run folders' ``steps.csv`` and ``flows.csv`` (``emulator.analysis.export``'s)
and the set's ``summary.json`` for which runs are faithful (the summary's ``excluded``
are left out, as everywhere).

    python -m emulator.analysis.by_phase FOLDER [--scheme symphony] [--against baseline]
        [--scheme-from FOLDER2] [--csv OUT]

FOLDER is one variant's run set (a sweep's ``<out>/<variant>``); ``--scheme-from`` takes
the scheme's runs from another set of the same seeds (the same spec run with one option
changed, e.g. ``--set symphony.tracking=ring --scheme symphony``). Pure but for
:func:`main` and :func:`read_run`.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict

from emulator.analysis import summary as summaries
from emulator.analysis.stats import paired

CHANNELS = {0: "rows", 1: "columns"}     # a 2D ring's channels; a 1D ring's one is "rows"


def phase_names(rings: list[int]) -> list[str]:
    """A rank's phases from its steps' rings in step order: runs of one ring, named
    ``rs`` (the first), ``ag`` (the last) by their channel, the rest by theirs alone:
    ring2d's [0 .. 0, 1 .. 1, 0 .. 0] is rows_rs, columns, rows_ag."""
    runs = []
    for r in rings:
        if not runs or runs[-1] != r:
            runs.append(r)
    names = [CHANNELS.get(r, f"ring{r}") for r in runs]
    if len(runs) > 1 and runs[0] == runs[-1]:
        names[0] += "_rs"
        names[-1] += "_ag"
    return names


def phase_times(steps: list[dict]) -> dict[str, float]:
    """One run's ``steps.csv`` rows (one job): ``<phase>_s`` of the module's docstring."""
    by_rank_pass = defaultdict(list)
    for s in steps:
        by_rank_pass[(int(s["rank"]), int(s["pass"]))].append(
            (int(s["step"]), int(s["ring"]), float(s["start_s"]), float(s["end_s"])))
    per_rank = defaultdict(lambda: defaultdict(float))
    for (rank, _), rows in by_rank_pass.items():
        rows.sort()
        names = phase_names([r[1] for r in rows])
        t = min(r[2] for r in rows)
        i = -1
        prev_ring = None
        for _, ring, _, end in rows:
            if ring != prev_ring:
                i += 1
                prev_ring = ring
            per_rank[rank][names[i]] += max(0.0, end - t)
            t = max(t, end)
    phases = sorted({p for d in per_rank.values() for p in d})
    return {f"{p}_s": statistics.fmean(d.get(p, 0.0) for d in per_rank.values())
            for p in phases}


def marked_shares(flows: list[dict]) -> dict[str, float]:
    """One run's ``flows.csv`` rows: ``<channel>_marked`` of the module's docstring."""
    pkts, marks = defaultdict(int), defaultdict(int)
    for f in flows:
        ch = CHANNELS.get(int(f["ring"]), f"ring{f['ring']}")
        pkts[ch] += int(f["packets"])
        marks[ch] += int(f["ce_marks"])
    return {f"{ch}_marked": marks[ch] / pkts[ch] for ch in pkts if pkts[ch]}


def read_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_run(rundir: str, job: int = 1) -> dict[str, float]:
    """One run folder's phase times and marked shares for ``job``."""
    want = str(job)
    steps = [r for r in read_csv(os.path.join(rundir, "steps.csv")) if r["job"] == want]
    flows = [r for r in read_csv(os.path.join(rundir, "flows.csv")) if r["job"] == want]
    return phase_times(steps) | marked_shares(flows)


def faithful_runs(folder: str, scheme: str) -> dict[int, str]:
    """Seed -> run folder of ``scheme``'s faithful first runs in the set at ``folder``."""
    s = summaries.read(folder)
    excluded = {(e.scheme, e.seed, e.repeat) for e in s.excluded}
    return {r.seed: os.path.join(folder, r.rundir) for r in s.runs
            if r.scheme == scheme and r.repeat == 1
            and (r.scheme, r.seed, r.repeat) not in excluded}


def compare(a: dict[int, dict], b: dict[int, dict]) -> dict:
    """Per metric both have, over the seeds both have: B's medians and A's, and for the
    phase times ``stats.paired`` of B against A (a share is compared by its medians)."""
    seeds = sorted(set(a) & set(b))
    out: dict = {"seeds": seeds, "metrics": {}}
    if not seeds:
        return out
    metrics = sorted(set.intersection(*(set(a[s]) & set(b[s]) for s in seeds)))
    for m in metrics:
        xa, xb = [a[s][m] for s in seeds], [b[s][m] for s in seeds]
        row = {"against": statistics.median(xa), "scheme": statistics.median(xb)}
        if m.endswith("_s") and all(x > 0 for x in xa):
            row["paired"] = paired(xa, xb)
        out["metrics"][m] = row
    return out


def _fmt(m: str, row: dict) -> str:
    if "paired" in row:
        p = row["paired"]
        ci = f" [{p.median_ci[0]:+.1%}, {p.median_ci[1]:+.1%}]" if p.median_ci else ""
        return (f"{m}: {row['against']:.3f} -> {row['scheme']:.3f} s, "
                f"{p.median:+.1%}{ci}, lower in {p.lower} of {p.n}")
    return f"{m}: {row['against']:.1%} -> {row['scheme']:.1%}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="one variant's run set (holds summary.json)")
    ap.add_argument("--scheme", default="symphony")
    ap.add_argument("--against", default="baseline")
    ap.add_argument("--scheme-from", metavar="FOLDER",
                    help="take the scheme's runs from this run set instead")
    ap.add_argument("--job", type=int, default=1)
    ap.add_argument("--csv", help="write one row per metric here")
    args = ap.parse_args(argv)
    try:
        ra = faithful_runs(args.folder, args.against)
        rb = faithful_runs(args.scheme_from or args.folder, args.scheme)
        a = {s: read_run(d, args.job) for s, d in ra.items()}
        b = {s: read_run(d, args.job) for s, d in rb.items()}
    except (OSError, summaries.SummaryError, KeyError, ValueError) as e:
        print(f"by_phase: {e}", file=sys.stderr)
        return 2
    res = compare(a, b)
    if not res["seeds"]:
        print(f"by_phase: no seed with both {args.scheme} and {args.against}", file=sys.stderr)
        return 1
    print(f"{args.scheme} against {args.against}, {len(res['seeds'])} paired seeds "
          f"(medians; time in a phase summed over collectives, mean over ranks):")
    for m, row in res["metrics"].items():
        print("  " + _fmt(m, row))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["metric", "pairs", args.against, args.scheme, "change", "lo", "hi",
                        "lower_in"])
            for m, row in res["metrics"].items():
                p = row.get("paired")
                w.writerow([m, len(res["seeds"]), round(row["against"], 6),
                            round(row["scheme"], 6),
                            round(p.median, 4) if p else "",
                            round(p.median_ci[0], 4) if p and p.median_ci else "",
                            round(p.median_ci[1], 4) if p and p.median_ci else "",
                            p.lower if p else ""])
    return 0


if __name__ == "__main__":
    sys.exit(main())
