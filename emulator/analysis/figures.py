"""The results page (``docs/results.md``), from data alone: ``docs/data/figures/<fig>.csv``
(``emulator.launch.reproduce``: a row per run), each spec's ``[[paper]]`` tables, and the
hand-written readings beside the data (``<fig>.md``: at most :data:`READING_LINES` lines,
what holds, what does not, and the measured cause; ``questions.md``: the questions the
data settle).

Per figure and variant: each scheme's median of the spec's primary metric per backend
(the paper / the model / the simulation / the emulation, with the number of runs), then
each scheme against the baseline, paired by seed, per backend: the median of the
per-seed differences with its distribution-free 95 % interval and one word
(``emulator.analysis.stats``), beside what the paper reports. Runs flagged unfaithful
are counted, never used. The page says which code revisions its data came from and the
machine time each backend took, and draws each figure's paired differences (an SVG per
figure beside the page: every seed a dot, the median with its interval a bar, the paper's
value a diamond).

The same data give the same page, byte for byte (``tests/test_results_page.py``):
nothing on it depends on the clock, the machine or the order files are listed in.

    symphony-emu reproduce --page [--data DIR] [--to FILE]
"""

from __future__ import annotations

import glob
import os
import re
from collections import defaultdict

import numpy as np

from emulator.spec import paper
from emulator.analysis.evidence import primary_metric
from emulator.analysis.figure_rows import FigureRow, read  # noqa: F401 - figures.read
from emulator.analysis.stats import paired
from emulator.analysis.summary import BASELINE

DEFAULT_POINT = "default"      # a sweep's one point when its spec has no [[variants]]
BACKENDS = (("fluid", "model"), ("sim", "simulation"), ("emulation", "emulation"))
COLUMN = {"cct": "median_cct_s", "jct": "jct_s", "max_overlap": "max_step_overlap",
          "last_step_span": "last_step_span_s", "throughput": "together_throughput_bps"}
WORDS = {"cct": "median CCT (s, emulated scale)", "jct": "JCT (s, emulated scale)",
         "max_overlap": "max step overlap",
         "last_step_span": "last step's span (s, emulated scale; the run's longest of its jobs)",
         "throughput": "the jobs' aggregate throughput while all run (Mbit/s, emulated scale)"}
UNIT = {"throughput": 1e-6}    # a column's value -> the unit its words name
# the order a figure lists its schemes in, whatever order its CSV's rows come in (a
# backend's rows appended later must not move a row of the page): the model's schemes,
# then Symphony (only the packet backends run it); any other after these
SCHEME_ORDER = ("baseline", "ideal-priority", "pq", "symphony")
# the packet backends' fabric (the model has no buffers): docs/data/fabrics.md compares
FABRIC_WORDS = {"drop": "drop-tail", "pfc": "lossless (PFC)"}
FLOW_COLUMN = re.compile(r"fct_step(\d+)_s")    # a flow's completion time per step
READING_LINES = 10        # a figure's hand-written reading, at most
JOURNAL = "827c2ab"       # the last revision with the dated journal this page replaced
HEADER = ("# Results: the paper's figures, reproduced\n\n"
          "Generated from `docs/data/figures/` (a CSV of runs and a short reading per figure)\n"
          "and the specs' `[[paper]]` tables by `symphony-emu reproduce --page`; do not edit\n"
          "by hand (edit the readings, rerun it). Medians over faithful runs; comparisons\n"
          "paired by seed: the median of the per-seed differences, its distribution-free\n"
          "95 % interval, the verdict at 95 % and the number of pairs (`emulator/analysis/\n"
          "stats.py`). The model runs baseline, ideal-priority and pq (it has no Symphony).\n"
          "Every run: `symphony-emu reproduce [FIG] --backend fluid|sim|emulation`.\n"
          "The figures' specs run the paper's lossless fabric (PFC); each figure's first line\n"
          "says which fabric its rows ran, and [drop-tail against PFC](data/fabrics.md) on\n"
          "the main job, Figs 4 and 5 and the paper's 32-host layout says what it changes.\n"
          f"The dated journal this page replaced: `git show {JOURNAL}:docs/results.md`.\n")


def page(data_dir: str, runs_dir: str, planned=None, plots_dir: str | None = None,
         plots_href: str = "", expected=()) -> str:
    """The whole page (markdown) from every figure CSV in ``data_dir`` and the readings
    beside them; ``planned(fig, backend)``: the seeds a backend is to run (a column of
    what is done). With ``plots_dir``, each figure's plot is written there as
    ``<fig>.svg`` and linked as ``<plots_href><fig>.svg``. ``expected``: figures listed
    as not yet run when they have no CSV."""
    from emulator.spec import load
    figs = {os.path.splitext(os.path.basename(p))[0]: read(p)
            for p in sorted(glob.glob(os.path.join(data_dir, "*.csv")))}
    # every reading first: one that cannot be printed stops the page before a plot is drawn
    readings = {fig: _reading(os.path.join(data_dir, fig + ".md")) for fig in figs}
    parts = [HEADER, _done_table({**{f: [] for f in expected}, **figs}, planned)]
    for fig, rows in figs.items():
        spec = load(os.path.join(runs_dir, fig + ".toml"))
        primary = primary_metric(spec.raw)
        parts.append(figure_section(fig, rows, spec.paper, primary))
        # drawn: what the paper gives a % of, else the primary metric, else a flow's time
        drawn = [c.metric for c in spec.paper if c.against and c.unit == "%"
                 and c.metric in COLUMN] + [primary, "fct_step0_s"]
        if plots_dir is not None and any(plot(fig, rows, spec.paper, m, os.path.join(
                plots_dir, fig + ".svg")) for m in dict.fromkeys(drawn)):
            parts.append(f"![{fig}: paired differences per seed]({plots_href}{fig}.svg)\n")
        reading = readings[fig]
        if reading:
            parts.append("**Reading.** " + reading)
    questions = os.path.join(data_dir, "questions.md")
    if os.path.exists(questions):
        with open(questions) as f:
            parts.append(f.read().rstrip("\n") + "\n")
    return "\n".join(parts)


def seeds_in_data(data_dir: str) -> dict[tuple[str, str], int]:
    """{(figure, backend): seeds with rows} of every figure CSV in ``data_dir``: what a
    page made from it shows as done (backends by their page labels: model, simulation,
    emulation)."""
    label = dict(BACKENDS)
    out = {}
    for p in sorted(glob.glob(os.path.join(data_dir, "*.csv"))):
        fig = os.path.splitext(os.path.basename(p))[0]
        seeds = defaultdict(set)
        for r in read(p):
            seeds[label.get(r.backend, r.backend)].add(r.seed)
        out.update({(fig, b): len(v) for b, v in seeds.items()})
    return out


def seeds_on_page(text: str) -> dict[tuple[str, str], int]:
    """{(figure, backend): seeds} that a page's "What is done" table shows run ("not yet"
    cells are not there)."""
    labels = [lab for _, lab in BACKENDS]
    out = {}
    lines = text.split("## What is done", 1)[-1].splitlines() if "## What is done" in text else []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| all |") or line.startswith("## "):
            break
        if len(cells) != 1 + len(labels) or cells[0] in ("figure", "") or cells[0].startswith("-"):
            continue
        for lab, cell in zip(labels, cells[1:]):
            m = re.match(r"(\d+)( of \d+)? seeds", cell)
            if m:
                out[(cells[0], lab)] = int(m.group(1))
    return out


def _reading(path: str) -> str:
    """A figure's hand-written reading: at most :data:`READING_LINES` non-empty lines."""
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        text = f.read().strip("\n")
    n = sum(1 for line in text.splitlines() if line.strip())
    if n > READING_LINES:
        raise ValueError(f"{path}: {n} lines; a figure's reading is at most "
                         f"{READING_LINES} (what holds, what does not, the measured cause)")
    return text + "\n"


def _done_table(figs: dict, planned) -> str:
    """Per figure and backend: the seeds run (of those planned) and the machine time."""
    out = ["## What is done\n",
           "Seeds run per backend (of those planned) and the machine time they took (the\n"
           "sum of the runs' wall times; the model and the simulation run several at once).\n",
           "| figure | " + " | ".join(l for _, l in BACKENDS) + " |",
           "|---" * (1 + len(BACKENDS)) + "|"]
    total = defaultdict(float)
    for fig, rows in figs.items():
        cells = []
        for b, _ in BACKENDS:
            mine = [r for r in rows if r.backend == b]
            n = len({r.seed for r in mine})
            wall = sum(r.wall_s or 0.0 for r in mine)
            untimed = sum(r.wall_s is None for r in mine)
            total[b] += wall
            plan = f" of {planned(fig, b)}" if planned else ""
            took = _duration(wall) + (f" ({untimed} runs untimed)" if untimed else "")
            cells.append(f"{n}{plan} seeds, {took}" if n else
                         ("not yet" + (f" ({planned(fig, b)})" if planned else "")))
        out.append(f"| {fig} | " + " | ".join(cells) + " |")
    out.append("| all | " + " | ".join(_duration(total[b]) for b, _ in BACKENDS) + " |")
    return "\n".join(out) + "\n"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def figure_section(fig: str, rows: list[FigureRow], claims, primary: str) -> str:
    """One figure: per variant, the spec's primary metric and every other metric the
    paper reports a number of, each scheme per backend and against the baseline."""
    out = [f"## {fig}\n"]
    revs = sorted({r.git_revision for r in rows if r.git_revision})
    flagged = sum(not r.faithful for r in rows)
    runs = {b: sum(r.backend == b for r in rows) for b, _ in BACKENDS}
    fabrics = [f"{label} " + " and ".join(FABRIC_WORDS.get(f, f) for f in sorted(
        {r.fabric for r in rows if r.backend == b})) for b, label in BACKENDS[1:] if runs[b]]
    out.append("Runs: " + ", ".join(f"{label} {runs[b]}" for b, label in BACKENDS)
               + f"; {flagged} flagged unfaithful (left out); code "
               + (", ".join(revs) or "unknown")
               + (f"; fabric: {', '.join(fabrics)}" if fabrics else "") + ".\n")
    metrics = list(dict.fromkeys([primary] + [c.metric for c in claims if c.metric in COLUMN]))
    if any(c.metric == "flow_time" for c in claims):     # a table per flow (Fig 9)
        metrics += sorted({k for r in rows for k in r.values if FLOW_COLUMN.fullmatch(k)})
    for v in dict.fromkeys(r.variant for r in rows):
        own = "" if v == DEFAULT_POINT else v        # a claim of the spec itself
        for metric in metrics:
            out += _metric_tables(fig, own, [r for r in rows if r.variant == v], claims,
                                  metric)
    out += _twin_table(rows)
    words = [c for c in claims if c.value is None]
    if words:
        out.append("The paper, in words: " + "; ".join(f"{c.figure}: {c.claim}" for c in words)
                   + ".\n")
    return "\n".join(out)


def _metric_tables(fig: str, variant: str, rows: list[FigureRow], claims,
                   metric: str) -> list[str]:
    values = _values(rows, metric)
    if not values:
        return []
    schemes = list(values)
    head = " | ".join(label for _, label in BACKENDS)
    out = [f"### {variant or fig}: {_words(metric)}\n",
           f"| scheme | paper | {head} |", "|---" * (2 + len(BACKENDS)) + "|"]
    for s in schemes:
        said = [c for c in claims if c.metric == _claimed(metric) and c.scheme == s
                and c.against == "" and c.variant == variant]
        cells = [_median_cell(values[s].get(b, {})) for b, _ in BACKENDS]
        out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
    out.append("")
    if BASELINE in values and len(schemes) > 1:
        out += [f"| against the baseline, paired | paper | {head} |",
                "|---" * (2 + len(BACKENDS)) + "|"]
        for s in schemes:
            if s == BASELINE:
                continue
            said = paper.matching(claims, _claimed(metric), s, BASELINE, variant)
            cells = [_paired_cell(values[BASELINE].get(b, {}), values[s].get(b, {}))
                     for b, _ in BACKENDS]
            out.append(f"| {s} | {_claim_cell(said)} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _twin_table(rows: list[FigureRow]) -> list[str]:
    """Each faithful emulated run over its simulated twin (the same code on the run's own
    paths), per scheme over every variant: what emulation adds to what the code does."""
    ratios = defaultdict(lambda: ([], []))          # scheme -> (CCT ratios, JCT ratios)
    for r in rows:
        if r.backend != "emulation" or not r.faithful:
            continue
        for i, (own, twin) in enumerate((("median_cct_s", "twin_median_cct_s"),
                                         ("jct_s", "twin_jct_s"))):
            mine, its = r.values.get(own), r.values.get(twin)
            if mine is not None and its is not None:
                ratios[r.scheme][i].append(mine / its)
    if not ratios:
        return []
    out = ["### The emulation beside its twin\n",
           "Each faithful emulated run over its simulated twin on the same paths: median "
           "(P10-P90), runs.\n", "| scheme | CCT emulated / twin | JCT emulated / twin |",
           "|---|---|---|"]
    for s, (cct, jct) in ratios.items():
        out.append(f"| {s} | {_spread(cct)} | {_spread(jct)} |")
    return out + [""]


def _spread(x: list) -> str:
    if not x:
        return "-"
    p10, p50, p90 = np.percentile(x, [10, 50, 90])
    return f"{p50:.3f} ({p10:.3f}-{p90:.3f}), {len(x)}"


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
    if c.value is None:
        return "in words (below)"                # a claim the paper makes in words only
    return f"{c.value:+g} %" if c.unit == "%" else f"{c.value:g} {c.unit}"


def _claimed(metric: str) -> str:
    """The paper's metric a table of ours answers: a flow's time is ``flow_time`` for the
    flow of step 0 only (the paper's flow A, the lagging step: runs/fig9.toml)."""
    if FLOW_COLUMN.fullmatch(metric):
        return "flow_time" if metric == "fct_step0_s" else ""
    return metric


def _words(metric: str) -> str:
    m = FLOW_COLUMN.fullmatch(metric)
    if m:
        return f"the flow of step {m.group(1)}: completion time (s, emulated scale)"
    return WORDS[metric]


def _values(rows: list[FigureRow], metric: str) -> dict:
    """scheme -> backend -> seed -> value of ``metric`` (a metric of :data:`COLUMN` or a
    flow's column), faithful runs only; schemes in :data:`SCHEME_ORDER`."""
    col, unit = COLUMN.get(metric, metric), UNIT.get(metric, 1.0)
    values = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if r.faithful and r.values.get(col) is not None:
            values[r.scheme][r.backend][r.seed] = r.values[col] * unit
    rank = {s: i for i, s in enumerate(SCHEME_ORDER)}
    return {s: values[s] for s in sorted(values, key=lambda s: rank.get(s, len(rank)))}


def plot(fig: str, rows: list[FigureRow], claims, primary: str, path: str) -> bool:
    """Every scheme against the baseline in ``primary``, per variant and backend: each
    seed's paired difference a dot, the median and its 95 % interval a bar, the paper's
    value a diamond; False (nothing written) when the figure has no pair."""
    lines = []            # (label, backend, diffs, Paired, paper value or None)
    for v in dict.fromkeys(r.variant for r in rows):
        values = _values([r for r in rows if r.variant == v], primary)
        own = "" if v == DEFAULT_POINT else v
        for s in values:
            if s == BASELINE or BASELINE not in values:
                continue
            said = [c for c in paper.matching(claims, _claimed(primary), s, BASELINE, own)
                    if c.unit == "%"]
            for b, _ in BACKENDS:
                base, other = values[BASELINE].get(b, {}), values[s].get(b, {})
                common = sorted(set(base) & set(other))
                if common:
                    p = paired([base[k] for k in common], [other[k] for k in common])
                    label = (f"{own} " if own else "") + s
                    lines.append((label, b, p, said[0].value if said else None))
    if not lines:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"fluid": "#7f7f7f", "sim": "#1f77b4", "emulation": "#d62728"}
    labels = list(dict.fromkeys(label for label, *_ in lines))
    offset = {b: (i - 1) * 0.25 for i, (b, _) in enumerate(BACKENDS)}
    f, ax = plt.subplots(figsize=(7.5, 0.9 + 0.55 * len(labels)))
    for label, b, p, said in lines:
        y = labels.index(label) + offset[b]
        d = np.asarray(p.diffs) * 100
        ax.plot(d, np.full(len(d), y), "|", color=colors[b], alpha=0.35, markersize=6,
                rasterized=True)          # a picture: hundreds of ticks as vectors weigh MBs
        if p.median_ci:
            ax.plot([p.median_ci[0] * 100, p.median_ci[1] * 100], [y, y], "-",
                    color=colors[b], lw=2.5)
        ax.plot([p.median * 100], [y], "o", color=colors[b], markersize=5)
        if said is not None:
            ax.plot([said], [labels.index(label)], "D", color="black", markersize=6)
    for b, label in BACKENDS:
        ax.plot([], [], "o-", color=colors[b], label=label)
    ax.plot([], [], "D", color="black", label="the paper")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(f"{_words(primary)}: % against the baseline, paired by seed")
    ax.set_title(f"{fig}: each seed a tick, the median a dot, its 95 % interval a bar",
                 fontsize=9)
    ax.legend(fontsize=7, loc="best")
    ax.grid(axis="x", alpha=0.3)
    f.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with plt.rc_context({"svg.hashsalt": fig}):    # an SVG of the data alone: no date,
        f.savefig(path, format="svg", metadata={"Date": None})   # ids fixed
    plt.close(f)
    return True


def write(data_dir: str, runs_dir: str, to: str, planned=None, expected=()) -> str:
    """The page into ``to``, its plots into ``results/`` beside it."""
    base = os.path.splitext(os.path.basename(to))[0]
    text = page(data_dir, runs_dir, planned, os.path.join(os.path.dirname(to) or ".", base),
                base + "/", expected)
    with open(to, "w") as f:
        f.write(text)
    return to
