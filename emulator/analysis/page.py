"""``index.html`` for a run, a run set and a sweep (issue 16): the verdict and its reasons,
the tables, every plot, links to the raw files and the trace. Static and self-contained:
a browser opens it from disk, with no server and no network (no script, no external
style or font). Written by ``report.summarize`` and ``launch.sweep.run_sweep``.
"""

from __future__ import annotations

import html
import json
import os

from emulator.analysis.summary import RunResult, Summary
from emulator.rundir import RunFolder

STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #bbb;
padding:.2em .6em;text-align:right}th{background:#eee}td.l,th.l{text-align:left}
.bad{color:#b00;font-weight:bold}.ok{color:#070}img{max-width:100%;border:1px solid #ddd;
margin:.5em 0}code{background:#f4f4f4;padding:0 .2em}pre{background:#f8f8f8;padding:.5em;
overflow-x:auto}"""


def _e(x) -> str:
    return html.escape(str(x))


def _table(head: list[str], rows: list[list], left: int = 1) -> str:
    """Cells are escaped here, except those wrapped by :func:`_raw` (links)."""
    def cell(i, v, tag):
        cls = ' class="l"' if i < left else ""
        return f"<{tag}{cls}>{v.html if isinstance(v, _raw) else _e(v)}</{tag}>"
    out = ["<table><tr>" + "".join(cell(i, h, "th") for i, h in enumerate(head)) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(cell(i, v, "td") for i, v in enumerate(r)) + "</tr>")
    return "\n".join(out) + "</table>"


class _raw:
    def __init__(self, text: str):
        self.html = text


def _link(href: str, text: str | None = None) -> _raw:
    return _raw(f'<a href="{html.escape(href, quote=True)}">{_e(text or href)}</a>')


def _ms(s) -> str:
    return "-" if s is None else f"{s * 1e3:.1f}"


def _verdict(run: RunResult) -> _raw:
    f = run.fidelity
    if f.errors:
        return _raw('<span class="bad">WRONG</span>')
    return _raw('<span class="ok">faithful</span>' if f.faithful
                else '<span class="bad">unfaithful</span>')


def _page(title: str, body: list[str]) -> str:
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n<h1>{_e(title)}</h1>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _write(path: str, text: str) -> str:
    with open(path, "w") as f:
        f.write(text)
    return path


def run_page(run: RunResult) -> str:
    """A run folder's ``index.html`` (``run``: its ``report.analyze_run`` result)."""
    d = run.rundir
    f = run.fidelity
    man = RunFolder(d).manifest
    up = "the emulated run it is the twin of" if run.twin_of else "the run set"
    body = [f"<p>{_link('../index.html', up).html} &middot; "
            f"{_e(man.backend)}, started {_e(man.started)}, "
            f"code {_e(man.git_revision)}, repeat {run.repeat}</p>",
            f"<p>Verdict: {_verdict(run).html}</p>"]
    if f.errors or f.reasons:
        body.append("<ul>" + "".join(f'<li class="bad">{_e(x)}</li>'
                                     for x in f.errors + f.reasons)
                    + "</ul>")
    for j in run.jobs:
        body.append(f"<h2>Job {j.job}: {_e(j.algorithm)}, {j.ranks} ranks, "
                    f"JCT {_ms(j.jct_s)} ms, max step overlap {j.max_step_overlap}</h2>")
        body.append(_table(["pass", "bytes", "CCT (ms)", "bound (ms)", "CCT / bound", "verified"],
                           [[c.pass_index, c.nbytes, _ms(c.cct_s), _ms(c.theoretical_cct_s),
                             "-" if c.cct_ratio is None else f"{c.cct_ratio:.2f}",
                             "yes" if c.verified else "NO"] for c in j.collectives]))
    t = run.transport.to_json()          # its counts by name, as summary.json has them
    body.append("<h2>Transport</h2>" + _table(list(t), [list(t.values())], left=0))
    if run.lossless is not None:        # a lossless fabric: how much it paused
        x = run.lossless.to_json()
        body.append("<h2>Lossless fabric (PFC)</h2>" + _table(list(x), [list(x.values())],
                                                               left=0)
                    + "<p>Each pause: " + _link("pauses.csv").html + "; a track per "
                    "paused port in the timeline.</p>")
    nums = {k: v for k, v in f.to_json().items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}
    body.append("<h2>Fidelity</h2>" + _table(["measure", "value"],
                                             [[k, f"{v:.4g}"] for k, v in nums.items()]))
    files = sorted(n for n in os.listdir(d) if not n.startswith("."))
    body.append("<h2>Files</h2><p>Timeline: " + _link("trace.json").html + " (open it in "
                "Perfetto's UI or chrome://tracing). Tables: "
                + ", ".join(_link(n).html for n in ("flows.csv", "steps.csv", "ports.csv",
                                                              "pauses.csv")
                            if n in files) + ".</p><p>"
                + " ".join(_link(n).html for n in files) + "</p>")
    body.append("<h2>The spec it ran</h2><pre>" + _e(json.dumps(man.spec, indent=1))
                + "</pre>")
    return _write(os.path.join(d, "index.html"),
                  _page(f"{run.scheme}, seed {run.seed}"
                        + (": the simulated twin of " + run.twin_of if run.twin_of
                           else ""), body))


def set_page(out_dir: str, summary: Summary, console: str = "") -> str:
    """A run set's ``index.html`` (``summary``: ``report.summarize``'s; ``console``: the
    report as the console prints it, ``report.console_text``)."""
    runs = summary.runs
    body = [f"<p>{len(runs)} run(s); {len(summary.excluded)} left out of every "
            f"median (unfaithful or wrong, listed below). D = "
            f"{summary.scale.dilation:g}.</p>"]
    comp = summary.comparison
    if comp:
        body.append("<h2>Schemes (faithful runs)</h2>" + _table(
            ["scheme", "median CCT (ms)", "median JCT (ms)", "median max overlap"],
            [[s, _ms(c.cct_s), _ms(c.jct_s), c.max_step_overlap] for s, c in comp.items()]))
    if summary.seeds.schemes:
        body.append("<h2>Across seeds</h2>" + _table(
            ["scheme", "seeds", "median of the seeds' median CCT (ms)", "P25", "P75"],
            [[s, x.cct_s.n, _ms(x.cct_s.median), _ms(x.cct_s.p25), _ms(x.cct_s.p75)]
             for s, x in summary.seeds.schemes.items()]))
    ev = summary.evidence
    if ev:
        def ci(x):
            return f"[{x[0]:+.1%}, {x[1]:+.1%}]" if x else "too few seeds (6 needed)"
        body.append("<h2>Against the baseline, paired by seed</h2>" + _table(
            ["scheme", "metric", "pairs", "median difference", "its 95 % interval",
             "mean (bootstrap 95 %)", "Wilcoxon p", "lower in", "at 95 %"],
            [[s, f"{m}{' (primary)' if e.primary else ''}", e.n, f"{e.median:+.1%}",
              ci(e.median_ci), f"{e.mean:+.1%} {ci(e.mean_ci) if e.mean_ci else ''}",
              f"{e.wilcoxon_p:.2g}" if e.wilcoxon_p is not None else "-",
              f"{e.lower} of {e.n}", e.verdict]
             for s, metrics in ev.items() for m, e in metrics.items()]))
    body.append("<h2>The report, as the console prints it</h2><p>Where the time goes, each "
                "job against the baseline, drops and the emulation's own delay: the same "
                "text <code>symphony-emu report</code> prints.</p><pre>"
                + _e(console) + "</pre>")
    body.append("<h2>Runs</h2>" + _table(
        ["run", "verdict", "reasons"],
        [[_link(os.path.relpath(os.path.join(r.rundir, "index.html"), out_dir),
                f"{r.scheme} seed {r.seed}"), _verdict(r),
          "; ".join(r.fidelity.errors + r.fidelity.reasons)]
         for r in runs]
        + [[f"{d.scheme} seed {d.seed}", _raw('<span class="bad">DAMAGED</span>'),
            d.why] for d in summary.damaged]))
    for p in summary.plots:
        rel = os.path.relpath(p, out_dir)
        body.append(f'<h3>{_e(rel)}</h3><img src="{html.escape(rel, quote=True)}" alt="{_e(rel)}">')
    files = [n for n in ["summary.json"] + sorted(
        n for n in os.listdir(out_dir) if n.startswith("nccl-tests-") and n.endswith(".json"))
        if os.path.exists(os.path.join(out_dir, n))]
    body.append("<p>" + " ".join(_link(n).html for n in files) + "</p>")
    return _write(os.path.join(out_dir, "index.html"), _page(summary.name, body))


def sweep_page(out_dir: str, points: list[str], plots: list[str]) -> str:
    """A sweep folder's ``index.html``: its points (each a run set) and its plots."""
    body = [_table(["point"], [[_link(os.path.join(p, "index.html"), p)] for p in points])]
    for p in plots:
        rel = os.path.relpath(p, out_dir)
        body.append(f'<img src="{html.escape(rel, quote=True)}" alt="{_e(rel)}">')
    body.append("<p>" + _link("sweep.csv").html + "</p>")
    return _write(os.path.join(out_dir, "index.html"),
                  _page(f"sweep: {os.path.basename(os.path.abspath(out_dir))}", body))
