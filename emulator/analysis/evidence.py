"""Every comparison as evidence (docs/architecture.md §6): each scheme against the baseline,
paired by seed, per metric, with the statistics of ``emulator.analysis.stats``; the
primary metric a spec's comparison is about; the noise floor of ``--repeat``. Reads the
runs ``emulator.analysis.report.analyze_run`` makes (``summary.RunResult``); ``report``
prints these with the rest of a run set's tables.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict

import numpy as np

from emulator.analysis.summary import BASELINE, SYMPHONY, Evidence, Noise, Summary
from emulator.spec import paper


# What each compared metric is, per run: (name, words, the run's value from its jobs).
METRICS = (
    ("cct", "median CCT", lambda r: _median([c.cct_s for j in r.jobs
                                             for c in j.collectives if c.cct_s])),
    ("jct", "JCT", lambda r: _median([j.jct_s for j in r.jobs if j.jct_s])),
    ("max_overlap", "max step overlap", lambda r: max(
        (j.max_step_overlap for j in r.jobs if j.max_step_overlap), default=None)),
)


def _median(v):
    return float(np.median(v)) if v else None


def primary_metric(spec: dict) -> str:
    """The metric a spec's comparison is about: its ``run.primary``, or with ``auto`` CCT
    when every job runs one collective and JCT when one runs several (passes, a
    training program). ``spec``: the spec as written (a manifest's, free-form: a run
    folder's spec may be of an older schema, so it is read as TOML, not validated)."""
    chosen = (spec.get("run") or {}).get("primary", "auto")
    if chosen != "auto":
        return chosen
    many = any(j.get("passes", 1) > 1 or j.get("workload") for j in spec.get("jobs", []))
    return "jct" if many or spec.get("job_stream") else "cct"


def evidence(runs: list, primary: str = "cct",
             confidence: float = 0.95) -> dict[str, dict[str, Evidence]]:
    """Every other scheme against the baseline, paired by seed, per metric
    (``emulator.analysis.stats.paired``: the median difference with its distribution-free
    95 % interval, the mean's bootstrap interval, Wilcoxon and sign tests, a verdict),
    the primary metric first; and how the paired values correlate (pairing by seed
    narrows an interval only when they do)."""
    from emulator.analysis.stats import correlation, paired
    vals: dict = defaultdict(lambda: defaultdict(dict))   # metric -> scheme -> seed -> v
    for r in runs:
        for name, _, get in METRICS:
            v = get(r)
            if v:
                vals[name][r.scheme][r.seed] = v
    out: dict = {}
    order = [primary] + [m for m, _, _ in METRICS if m != primary]
    for name in order:
        base = vals[name].get(BASELINE, {})
        for s, seeds in vals[name].items():
            common = sorted(set(seeds) & set(base))
            if s == BASELINE or not common:
                continue
            a, b = [base[k] for k in common], [seeds[k] for k in common]
            out.setdefault(s, {})[name] = Evidence(
                **asdict(paired(a, b, confidence)), seeds=common, primary=name == primary,
                correlation=correlation(a, b))
    return out


def noise_floor(runs: list) -> dict[str, dict[str, Noise]]:
    """What the same seed does when run again (``--repeat``): per scheme and metric, each
    repeated seed's spread, (max - min) / median over its runs, and the median of that
    over seeds, beside the spread between seeds (of their first runs) -- pairing by seed
    can only help where the first is well below the second. Empty without repeats."""
    by: dict = defaultdict(lambda: defaultdict(list))     # (scheme, metric) -> seed -> vs
    for r in runs:
        for name, _, get in METRICS:
            v = get(r)
            if v:
                by[(r.scheme, name)][r.seed].append((r.repeat, v))
    out: dict = {}
    for (scheme, name), seeds in by.items():
        within = [(max(v for _, v in vs) - min(v for _, v in vs)) / float(np.median(
            [v for _, v in vs])) for vs in seeds.values() if len(vs) > 1]
        if not within:
            continue
        firsts = [v for vs in seeds.values() for k, v in vs if k == 1]
        between = ((max(firsts) - min(firsts)) / float(np.median(firsts))
                   if len(firsts) > 1 else None)
        out.setdefault(scheme, {})[name] = Noise(
            seeds=len(within), repeats=max(len(vs) for vs in seeds.values()),
            within_seed_spread=float(np.median(within)),
            within_seed_spread_max=float(max(within)), between_seeds_spread=between)
    return out


def print_noise(summary: Summary) -> None:
    if not summary.noise:
        return
    print("\nthe same seed again (--repeat): (max - min) / median of a seed's runs, median "
          "over seeds [worst], against the same between seeds' first runs")
    words = {m: w for m, w, _ in METRICS}
    for scheme, metrics in summary.noise.items():
        for m, d in metrics.items():
            between = (f"{d.between_seeds_spread:.1%}"
                       if d.between_seeds_spread is not None else "-")
            print(f"  {scheme:<10}{words[m]:<18}{d.within_seed_spread:6.1%} "
                  f"[{d.within_seed_spread_max:.1%}] over {d.seeds} seeds x "
                  f"{d.repeats} runs; between seeds {between}")


def print_evidence(summary: Summary, indent: str = "  ") -> None:
    """Each scheme against the baseline, paired by seed, one line per metric (primary
    first): what a reader may quote, with its interval and verdict; under it, what the
    paper reports for the same comparison (the spec's ``[[paper]]``)."""
    words = {m: w for m, w, _ in METRICS}
    claims = paper_claims(summary.spec)
    for s, metrics in summary.evidence.items():
        print(f"{indent}{scheme_name(s)} vs baseline, paired by seed (median of the "
              f"differences, its 95 % interval; the mean's):")
        for m, e in metrics.items():
            label = f"{words[m]}{' (primary)' if e.primary else ''}"
            lower, higher = ("fewer", "more") if m == "max_overlap" else ("faster", "slower")
            print(f"{indent}  {label:<28}{evidence_text(e, lower, higher)}")
            for c in paper.matching(claims, m, s, BASELINE):
                print(f"{indent}  {'':<28}the paper: {c.text()}")


def scheme_name(scheme: str) -> str:
    """A scheme as a sentence names it (the paper's Symphony capitalised)."""
    return "Symphony" if scheme == SYMPHONY else scheme


def paper_claims(raw_spec: dict) -> tuple:
    """The ``[[paper]]`` claims of a run set's spec (as its manifest keeps it, free-form;
    none in a folder from before they were data)."""
    names = tuple(v["name"] for v in raw_spec.get("variants", []))
    return paper.parse(raw_spec.get("paper", []), names)


def evidence_text(e: Evidence, lower: str, higher: str) -> str:
    corr = f"; paired r = {e.correlation:+.2f}" if e.correlation is not None else ""
    return e.text(lower, higher) + corr
