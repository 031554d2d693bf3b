"""The dependency rule's measurements (journal@827c2ab, "The dependency rule"): per-run data
as CSV in docs/data/, and the page's tables computed from those CSVs alone.

    python scripts/dependency_rule.py collect EXPERIMENT FOLDER... > docs/data/FILE.csv
    python scripts/dependency_rule.py tables docs/data/dependency-rule-*.csv

``collect`` reads run sets (folders with a ``summary.json``, as ``symphony-emu run`` and
``predict`` write them) and prints one CSV row per run: experiment, backend, rule,
scheme, seed, git revision, faithful, and the metrics (median CCT / bound over the run's
collectives, JCT, JCT / bound, max step overlap, and for emulated runs the split's
routing x and transport x). ``tables`` prints, per experiment, each rule's medians and
the paired comparisons (``emulator.analysis.stats``): on_arrival against in_order per
scheme, and Symphony (or ideal-priority) against the baseline per rule, on the seeds
both sides have and that are faithful.
"""

from __future__ import annotations

import csv
import os
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator.analysis import summary  # noqa: E402
from emulator.analysis.stats import paired  # noqa: E402
from emulator.rundir import RunFolder  # noqa: E402
from runtime.records import CollectiveDone  # noqa: E402

COLUMNS = ["experiment", "backend", "rule", "scheme", "seed", "git_revision", "faithful",
           "cct_over_bound", "jct_s", "jct_over_bound", "max_overlap", "routing_x",
           "transport_x", "twin_jct_s"]


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def collect(experiment: str, folders: list[str]) -> None:
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    for folder in folders:
        for r in summary.read(folder).runs:
            rundir = os.path.join(folder, os.path.basename(r.rundir))
            twin = _twin_spans(rundir)
            rev = RunFolder(rundir).manifest.git_revision
            (order,) = r.order
            for job in r.jobs:
                colls = job.collectives
                bound = sum(c.theoretical_cct_s for c in colls)
                split = next((j for j in (r.split.jobs if r.split else [])
                              if j.job == job.job), None)
                sc = split.collectives if split else []
                out.writerow({
                    "experiment": experiment, "backend": r.backend, "rule": order,
                    "scheme": r.scheme, "seed": r.seed, "git_revision": rev,
                    "faithful": r.fidelity.faithful,
                    "cct_over_bound": _fmt(_median(c.cct_ratio for c in colls)),
                    "jct_s": _fmt(job.jct_s),
                    "jct_over_bound": _fmt(job.jct_s / bound if job.jct_s else None),
                    "max_overlap": job.max_step_overlap,
                    "routing_x": _fmt(_median(c.routing_x for c in sc)),
                    "transport_x": _fmt(_median(c.transport_x for c in sc)),
                    "twin_jct_s": _fmt(twin.get(job.job))})


def _twin_spans(rundir: str) -> dict:
    """Each job's span in the run's simulated twin (``<run>/twin/``, made by ``report``),
    {} when there is none."""
    from emulator.analysis import metrics
    twin = RunFolder(os.path.join(rundir, "twin"))
    if not twin.done:
        return {}
    colls = metrics.collective_times(twin.host_records(CollectiveDone))
    out = {}
    for (job, _), c in colls.items():
        lo, hi = out.get(job, (c.start_s, c.end_s))
        out[job] = (min(lo, c.start_s), max(hi, c.end_s))
    return {j: hi - lo for j, (lo, hi) in out.items()}


def _fmt(x):
    return "" if x is None else f"{x:.6g}"


def _read(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            rows += list(csv.DictReader(f))
    return rows


def _q(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def tables(paths: list[str]) -> None:
    rows = [r for r in _read(paths) if r["faithful"] == "True"]
    by = defaultdict(dict)          # (experiment, backend, rule, scheme) -> seed -> row
    for r in rows:
        by[(r["experiment"], r["backend"], r["rule"], r["scheme"])][int(r["seed"])] = r
    experiments = sorted({k[:2] for k in by})
    for exp, backend in experiments:
        # JCT / bound too where it is not the one collective's CCT / bound
        metrics = ["cct_over_bound"] + (["jct_over_bound"] if any(
            r["jct_over_bound"] and r["cct_over_bound"] and abs(
                float(r["jct_over_bound"]) / float(r["cct_over_bound"]) - 1) > 1e-3
            for r in rows if r["experiment"] == exp) else [])
        schemes = sorted({k[3] for k in by if k[:2] == (exp, backend)},
                         key=lambda s: (s != "baseline", s))
        print(f"\n### {exp} ({backend})")
        twins = [r for r in rows if r["experiment"] == exp and r["backend"] == backend
                 and r.get("twin_jct_s")]
        if twins:
            metrics.append("twin_jct_s")
            print("\nemulated / its simulated twin (JCT, same code on the same paths): "
                  "P50 (P10-P90); n")
            for rule in ("in_order", "on_arrival"):
                cells = []
                for s in schemes:
                    v = [float(r["jct_s"]) / float(r["twin_jct_s"]) for r in twins
                         if r["rule"] == rule and r["scheme"] == s]
                    cells.append(f"{s} {statistics.median(v):.3f} ({_q(v, .1):.3f}-"
                                 f"{_q(v, .9):.3f}) n={len(v)}" if v else f"{s} -")
                print(f"  {rule:<11} " + " | ".join(cells))
        for metric in metrics:
            print(f"\n{metric}: P50 (P10-P90) over faithful runs; n")
            for rule in ("in_order", "on_arrival"):
                cells = []
                for s in schemes:
                    v = [float(r[metric]) for r in by.get((exp, backend, rule, s), {}).values()
                         if r[metric]]
                    cells.append(f"{s} {statistics.median(v):.3f} ({_q(v, .1):.3f}-"
                                 f"{_q(v, .9):.3f}) n={len(v)}" if v else f"{s} -")
                print(f"  {rule:<11} " + " | ".join(cells))
            for s in schemes:
                a, b = by.get((exp, backend, "in_order", s), {}), by.get(
                    (exp, backend, "on_arrival", s), {})
                _print_pair(f"on_arrival vs in_order, {s}", a, b, metric)
            for rule in ("in_order", "on_arrival"):
                base = by.get((exp, backend, rule, "baseline"), {})
                for s in schemes[1:]:
                    _print_pair(f"{s} vs baseline, {rule}", base,
                                by.get((exp, backend, rule, s), {}), metric)


def _print_pair(label, a, b, metric):
    seeds = sorted(k for k in set(a) & set(b) if a[k][metric] and b[k][metric])
    if not seeds:
        return
    p = paired([float(a[k][metric]) for k in seeds], [float(b[k][metric]) for k in seeds])
    print(f"  {label}: {p.text()}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) >= 3 and argv[0] == "collect":
        collect(argv[1], argv[2:])
    elif len(argv) >= 2 and argv[0] == "tables":
        tables(argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
