"""The simulation backend against the emulation (journal@827c2ab, "The emulation beside its
twin"): per-run data as CSV in docs/data/questions/, and the page's tables from those CSVs alone.

    python scripts/agreement.py collect EXPERIMENT RUNSET [SIMSET] > docs/data/questions/agreement-EXP.csv
    python scripts/agreement.py tables docs/data/questions/agreement-*.csv

``collect`` reads one emulated run set (``symphony-emu run --repeat K`` beside the twins
``report`` makes: ``<run>/twin/``, the same code on a virtual clock on the paths the run
recorded) and prints a row per emulated run: experiment, scheme, seed, repeat, git
revision, faithful, the run's median CCT and JCT, and its twin's. A twin runs with no
host delay; ``SIMSET``, if given, is a simulated run set on the same paths *with* the
hosts' delay (``run SPEC --backend sim --paths RUNSET --repeat K``: K draws of it), and
its per-seed medians over the draws fill ``delayed_cct_s``, ``delayed_jct_s``.
``tables`` prints per experiment: emulated / twin per run (median, P10-P90) for CCT and
JCT, and emulated / delayed sim; each scheme's same-seed spread (every repeat against the
seed's first run) beside the spread between seeds; and Symphony against the baseline,
paired by seed over the first runs, in the emulation, in the twins and in the delayed
sims (``emulator.analysis.stats``).
"""

from __future__ import annotations

import csv
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator.analysis import summary  # noqa: E402
from emulator.analysis.stats import paired  # noqa: E402
from emulator.rundir import RunFolder  # noqa: E402

COLUMNS = ["experiment", "scheme", "seed", "repeat", "git_revision", "faithful",
           "cct_s", "twin_cct_s", "jct_s", "twin_jct_s", "delayed_cct_s", "delayed_jct_s"]


def _median(v):
    v = [x for x in v if x is not None]
    return float(np.median(v)) if v else None


def _delayed(folder: str | None) -> dict:
    """(scheme, seed) -> (median CCT, JCT) over the simulated draws in ``folder``."""
    if folder is None:
        return {}
    draws = defaultdict(list)
    for r in summary.read(folder).runs:
        if r.fidelity.faithful:
            draws[(r.scheme, r.seed)].append(
                (_median([c.cct_s for j in r.jobs for c in j.collectives]),
                 _median([j.jct_s for j in r.jobs])))
    return {k: (_median([c for c, _ in v]), _median([j for _, j in v]))
            for k, v in draws.items()}


def collect(experiment: str, folder: str, simset: str | None = None) -> None:
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    delayed = _delayed(simset)
    for r in summary.read(folder).runs:
        rundir = os.path.join(folder, os.path.basename(r.rundir))
        rev = RunFolder(rundir).manifest.git_revision
        jobs = r.split.jobs if r.split else []
        cs = [c for j in jobs for c in j.collectives]
        out.writerow({
            "experiment": experiment, "scheme": r.scheme, "seed": r.seed,
            "repeat": r.repeat, "git_revision": rev, "faithful": r.fidelity.faithful,
            "cct_s": _median([c.cct_s for j in r.jobs for c in j.collectives]),
            "twin_cct_s": _median([c.sim_s for c in cs]),
            "jct_s": _median([j.jct_s for j in r.jobs]),
            "twin_jct_s": _median([j.sim_jct_s for j in jobs]),
            "delayed_cct_s": delayed.get((r.scheme, r.seed), (None, None))[0],
            "delayed_jct_s": delayed.get((r.scheme, r.seed), (None, None))[1]})


def _f(x):
    return float(x) if x not in ("", None) else None


def _pct(v, q):
    return float(np.percentile(v, q))


def tables(paths: list[str]) -> None:
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows += list(csv.DictReader(f))
    by_exp = defaultdict(list)
    for r in rows:
        if r["faithful"] == "True":
            by_exp[r["experiment"]].append(r)
    for exp, rs in by_exp.items():
        left = sum(1 for r in rows if r["experiment"] == exp) - len(rs)
        print(f"\n## {exp}: {len(rs)} faithful emulated runs"
              + (f" ({left} flagged, left out)" if left else ""))
        for metric, words in (("cct", "median CCT"), ("jct", "JCT")):
            for other, said in (("twin", "twin"), ("delayed", "sim with the hosts' delay")):
                x = [_f(r[f"{metric}_s"]) / _f(r[f"{other}_{metric}_s"]) for r in rs
                     if _f(r[f"{metric}_s"]) and _f(r.get(f"{other}_{metric}_s"))]
                if x:
                    print(f"{words}: emulated / {said} per run, median {np.median(x):.3f} "
                          f"(P10-P90 {_pct(x, 10):.3f}-{_pct(x, 90):.3f}), n = {len(x)}")
        print("same seed run again (each repeat against the seed's first run), against "
              "seeds (each seed's first run against the median of first runs):")
        for scheme in sorted({r["scheme"] for r in rs}):
            for metric in ("cct", "jct"):
                first = {r["seed"]: _f(r[f"{metric}_s"]) for r in rs
                         if r["scheme"] == scheme and r["repeat"] == "1"}
                again = [abs(_f(r[f"{metric}_s"]) / first[r["seed"]] - 1) for r in rs
                         if r["scheme"] == scheme and r["repeat"] != "1"
                         and first.get(r["seed"])]
                m = np.median(list(first.values()))
                between = [abs(v / m - 1) for v in first.values()]
                if again:
                    print(f"  {scheme:<9} {metric.upper()}: |repeat / first - 1| median "
                          f"{np.median(again):.1%} (P90 {_pct(again, 90):.1%}, n = "
                          f"{len(again)}); seeds |first / median - 1| median "
                          f"{np.median(between):.1%} (n = {len(between)})")
        print("Symphony against the baseline, paired by seed (first runs):")
        for metric in ("cct", "jct"):
            for side, col in (("emulated", f"{metric}_s"), ("twin", f"twin_{metric}_s"),
                              ("delayed", f"delayed_{metric}_s")):
                first = {(r["scheme"], r["seed"]): _f(r.get(col)) for r in rs
                         if r["repeat"] == "1"}
                seeds = sorted({s for (sc, s) in first if sc == "baseline"}
                               & {s for (sc, s) in first if sc == "symphony"}, key=int)
                pairs = [(first[("baseline", s)], first[("symphony", s)]) for s in seeds
                         if first[("baseline", s)] and first[("symphony", s)]]
                if pairs:
                    a, b = zip(*pairs)
                    print(f"  {metric.upper()} {side:<9} {paired(a, b).text()}")


def main(argv: list[str]) -> int:
    if len(argv) in (3, 4) and argv[0] == "collect":
        collect(argv[1], argv[2], argv[3] if len(argv) == 4 else None)
        return 0
    if len(argv) >= 2 and argv[0] == "tables":
        tables(argv[1:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
