"""The paper's figures as a page, from data alone: ``docs/data/figures/<fig>.csv``
(``emulator.launch.reproduce``: a row per run) and each spec's ``[[paper]]`` tables.

Per figure and variant: each scheme's median of the spec's primary metric per backend
(the paper / the model / the simulation / the emulation, with the number of runs), then
each scheme against the baseline, paired by seed, per backend: the median of the
per-seed differences with its distribution-free 95 % interval and one word
(``emulator.analysis.stats``), beside what the paper reports. Runs flagged unfaithful
are counted, never used. The page says which code revisions its data came from.

    symphony-emu reproduce --page [--data DIR] [--to FILE]
"""

from __future__ import annotations

import csv
import glob
import os
from collections import defaultdict

import numpy as np

from emulator import paper
from emulator.analysis.evidence import primary_metric
from emulator.analysis.stats import paired

DEFAULT_POINT = "default"      # a sweep's one point when its spec has no [[variants]]
BACKENDS = (("fluid", "model"), ("sim", "simulation"), ("emulation", "emulation"))
COLUMN = {"cct": "median_cct_s", "jct": "jct_s", "max_overlap": "max_step_overlap"}
WORDS = {"cct": "median CCT (s, emulated scale)", "jct": "JCT (s, emulated scale)",
         "max_overlap": "max step overlap"}
HEADER = ("# The paper's figures, reproduced\n\n"
          "Generated from `docs/data/figures/*.csv` and the specs' `[[paper]]` tables by\n"
          "`symphony-emu reproduce --page`; do not edit by hand (rerun it). Medians over\n"
          "faithful runs; comparisons paired by seed: the median of the per-seed\n"
          "differences, its distribution-free 95 % interval, the verdict at 95 % and the\n"
          "number of pairs. The model runs baseline, ideal-priority and pq (no Symphony).\n")


def read(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def page(data_dir: str, runs_dir: str, planned=None) -> str:
    """The whole page (markdown) from every figure CSV in ``data_dir``; ``planned(fig,
    backend)``: the seeds a backend is to run (a column of what is done)."""
    from emulator.spec import load
    figs = {os.path.splitext(os.path.basename(p))[0]: read(p)
            for p in sorted(glob.glob(os.path.join(data_dir, "*.csv")))}
    parts = [HEADER, _done_table(figs, planned)]
    for fig, rows in figs.items():
        spec = load(os.path.join(runs_dir, fig + ".toml"))
        parts.append(figure_section(fig, rows, spec.paper, primary_metric(spec.raw)))
    return "\n".join(parts)


def _done_table(figs: dict, planned) -> str:
    """Per figure and backend: the seeds run (of those planned)."""
    out = ["## What is done\n", "| figure | " + " | ".join(l for _, l in BACKENDS) + " |",
           "|---" * (1 + len(BACKENDS)) + "|"]
    for fig, rows in figs.items():
        cells = []
        for b, _ in BACKENDS:
            n = len({r["seed"] for r in rows if r["backend"] == b})
            plan = f" of {planned(fig, b)}" if planned else ""
            cells.append(f"{n}{plan} seeds" if n else ("not yet" + (f" ({planned(fig, b)})"
                                                                      if planned else "")))
        out.append(f"| {fig} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def figure_section(fig: str, rows: list[dict], claims, primary: str) -> str:
    """One figure: per variant, the spec's primary metric and every other metric the
    paper reports a number of, each scheme per backend and against the baseline."""
    out = [f"## {fig}\n"]
    revs = sorted({r["git_revision"] for r in rows if r["git_revision"]})
    flagged = sum(r["faithful"] != "True" for r in rows)
    runs = {b: sum(r["backend"] == b for r in rows) for b, _ in BACKENDS}
    out.append("Runs: " + ", ".join(f"{label} {runs[b]}" for b, label in BACKENDS)
               + f"; {flagged} flagged unfaithful (left out); code "
               + (", ".join(revs) or "unknown") + ".\n")
    metrics = list(dict.fromkeys([primary] + [c.metric for c in claims if c.metric in COLUMN]))
    for v in dict.fromkeys(r["variant"] for r in rows):
        own = "" if v == DEFAULT_POINT else v        # a claim of the spec itself
        for metric in metrics:
            out += _metric_tables(fig, own, [r for r in rows if r["variant"] == v], claims,
                                  metric)
    words = [c for c in claims if c.value is None]
    if words:
        out.append("The paper, in words: " + "; ".join(f"{c.figure}: {c.claim}" for c in words)
                   + ".\n")
    return "\n".join(out)


def _metric_tables(fig: str, variant: str, rows: list[dict], claims, metric: str) -> list[str]:
    col = COLUMN[metric]
    values = defaultdict(lambda: defaultdict(dict))      # scheme -> backend -> seed -> value
    for r in rows:
        if r["faithful"] == "True" and r.get(col) not in ("", None):
            values[r["scheme"]][r["backend"]][int(r["seed"])] = float(r[col])
    if not values:
        return []
    schemes = list(values)
    head = " | ".join(label for _, label in BACKENDS)
    out = [f"### {variant or fig}: {WORDS[metric]}\n",
           f"| scheme | paper | {head} |", "|---" * (2 + len(BACKENDS)) + "|"]
    for s in schemes:
        said = [c for c in claims if c.metric == metric and c.scheme == s
                and c.against == "" and c.variant == variant]
        cells = [_median_cell(values[s].get(b, {})) for b, _ in BACKENDS]
        out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
    out.append("")
    if "baseline" in values and len(schemes) > 1:
        out += [f"| against the baseline, paired | paper | {head} |",
                "|---" * (2 + len(BACKENDS)) + "|"]
        for s in schemes:
            if s == "baseline":
                continue
            said = paper.matching(claims, metric, s, "baseline", variant)
            cells = [_paired_cell(values["baseline"].get(b, {}), values[s].get(b, {}))
                     for b, _ in BACKENDS]
            out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _median_cell(seeds: dict) -> str:
    if not seeds:
        return "-"
    return f"{float(np.median(list(seeds.values()))):.4g} ({len(seeds)})"


def _paired_cell(base: dict, other: dict) -> str:
    common = sorted(set(base) & set(other))
    if not common:
        return "-"
    p = paired([base[k] for k in common], [other[k] for k in common])
    ci = (f" [{p.median_ci[0]:+.1%}, {p.median_ci[1]:+.1%}]" if p.median_ci else "")
    return f"{p.median:+.1%}{ci} {p.verdict} ({p.n})"


def _claim_cell(claims) -> str:
    if not claims:
        return "-"
    c = claims[0]
    return f"{c.value:+g} %" if c.unit == "%" else f"{c.value:g} {c.unit}"


def write(data_dir: str, runs_dir: str, to: str, planned=None) -> str:
    text = page(data_dir, runs_dir, planned)
    with open(to, "w") as f:
        f.write(text)
    return to
