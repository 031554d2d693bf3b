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


def page(data_dir: str, runs_dir: str) -> str:
    """The whole page (markdown) from every figure CSV in ``data_dir``."""
    from emulator.spec import load
    parts = [HEADER]
    for path in sorted(glob.glob(os.path.join(data_dir, "*.csv"))):
        fig = os.path.splitext(os.path.basename(path))[0]
        spec = load(os.path.join(runs_dir, fig + ".toml"))
        parts.append(figure_section(fig, read(path), spec.paper, primary_metric(spec.raw)))
    return "\n".join(parts)


def figure_section(fig: str, rows: list[dict], claims, metric: str) -> str:
    col = COLUMN[metric]
    out = [f"## {fig}\n"]
    revs = sorted({r["git_revision"] for r in rows if r["git_revision"]})
    flagged = sum(r["faithful"] != "True" for r in rows)
    runs = {b: sum(r["backend"] == b for r in rows) for b, _ in BACKENDS}
    out.append("Runs: " + ", ".join(f"{label} {runs[b]}" for b, label in BACKENDS)
               + f"; {flagged} flagged unfaithful (left out); code "
               + (", ".join(revs) or "unknown") + ".\n")
    values = defaultdict(lambda: defaultdict(dict))      # (variant, scheme) -> backend -> seed
    for r in rows:
        if r["faithful"] == "True" and r.get(col) not in ("", None):
            values[(r["variant"], r["scheme"])][r["backend"]][int(r["seed"])] = float(r[col])
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    for v in variants:
        schemes = list(dict.fromkeys(s for (vv, s) in values if vv == v))
        own = "" if v == DEFAULT_POINT else v        # a claim of the spec itself
        out.append(f"### {own or fig}: {WORDS[metric]}\n")
        out.append("| scheme | paper | " + " | ".join(label for _, label in BACKENDS) + " |")
        out.append("|---" * (2 + len(BACKENDS)) + "|")
        for s in schemes:
            said = [c for c in claims if c.metric == metric and c.scheme == s
                    and c.against == "" and c.variant == own]
            cells = [_median_cell(values[(v, s)].get(b, {})) for b, _ in BACKENDS]
            out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
        out.append("")
        others = [s for s in schemes if s != "baseline"]
        if others and "baseline" in schemes:
            out.append("| against the baseline, paired | paper | "
                       + " | ".join(label for _, label in BACKENDS) + " |")
            out.append("|---" * (2 + len(BACKENDS)) + "|")
            for s in others:
                said = paper.matching(claims, metric, s, "baseline", own)
                cells = [_paired_cell(values[(v, "baseline")].get(b, {}),
                                      values[(v, s)].get(b, {})) for b, _ in BACKENDS]
                out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
            out.append("")
    words = [c for c in claims if c.value is None]
    if words:
        out.append("The paper, in words: " + "; ".join(f"{c.figure}: {c.claim}" for c in words)
                   + ".\n")
    return "\n".join(out)


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


def write(data_dir: str, runs_dir: str, to: str) -> str:
    text = page(data_dir, runs_dir)
    with open(to, "w") as f:
        f.write(text)
    return to
