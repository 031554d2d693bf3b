"""Sweeps: one spec over named variants and/or parameter grids, schemes and seeds,
resumable, collected into one table (``sweep.csv``) and one comparison plot.

    symphony-emu sweep runs/fig8b.toml                     # the spec's [[variants]]
    symphony-emu sweep runs/table1.toml --param symphony.k=0.0001,0.001,0.01 --seeds 3

Layout: ``<out>/<point>/<scheme>-seed<N>/`` with ``<point>`` the variant name or
``key=value,...``. A run whose folder already holds ``measurements.json`` is skipped,
so an interrupted sweep continues where it stopped when run again with the same --out,
if it ran what the spec now runs (``emulator.spec.what_runs``: schemes, seeds, other
variants and the paper's numbers may have been added since); a run of an edited spec is
run again, and the line says which key differs.
"""

from __future__ import annotations

import csv
import itertools
import os
from collections import defaultdict

import numpy as np

from emulator.analysis import report
from emulator.analysis.evidence import print_evidence
from emulator.analysis.split import TWIN
from emulator.launch.backends import BACKENDS, Backend, Options, Task
from emulator.rundir import RunFolder, run_folders
from emulator.spec import first_difference, load, variants, what_runs


def points(spec_path: str, params: list[str], base_overrides: list[str],
           only: list[str] | None = None):
    """[(point name, overrides)] of a sweep; ``only`` keeps just these [[variants]]."""
    spec = load(spec_path, base_overrides)
    grid = []
    for p in params:
        if "=" not in p:
            raise ValueError(f"--param {p!r}: expected key=v1,v2,...")
        key, values = p.split("=", 1)
        vals = [(key, v) for v in values.split(",") if v != ""]
        if not vals:
            raise ValueError(f"--param {p!r}: no values after '='")
        grid.append(vals)
    named = variants(spec) or [("", [])]
    if only:
        names = [n for n, _ in named]
        unknown = [v for v in only if v not in names]
        if unknown:
            raise ValueError(f"--variant {', '.join(unknown)}: {spec_path} has "
                             + (f"variants {', '.join(names)}" if names[0] else "no [[variants]]"))
        named = [(n, v) for n, v in named if n in only]
    out = []
    for vname, vsets in named:
        for combo in itertools.product(*grid) if grid else [()]:
            label = ",".join([vname] * bool(vname) + [f"{k}={v}" for k, v in combo]) or "default"
            out.append((label, base_overrides + vsets + [f"{k}={v}" for k, v in combo]))
    return out


def _runs(spec_path, out, pts, schemes, seeds, backend: Backend):
    """Each point's (label, spec, folder) with its runs' (name, scheme, seed, run folder,
    done before?), the point's folder made."""
    for label, overrides in pts:
        spec = load(spec_path, overrides)
        pdir = os.path.join(out, label.replace("/", "_"))
        os.makedirs(pdir, exist_ok=True)
        # seed by seed, a seed's schemes side by side (as `run` orders them): the
        # machine's drift over a long sweep then moves both sides of a pair alike
        yield label, spec, pdir, [
            (f"{label} {scheme} seed {seed}", scheme, seed, rundir, _kept(rundir, spec))
            for seed in seeds or spec.run.seeds
            for scheme in schemes or backend.default_schemes(spec)
            for rundir in [os.path.join(pdir, f"{scheme}-seed{seed}")]]


def _kept(rundir: str, spec) -> bool | str:
    """True: ``rundir`` is a finished run of what ``spec`` runs (``spec.what_runs``: a
    scheme or a variant added since keeps it); False: not finished; else why it is run
    again (the spec was edited since: the first key that differs)."""
    folder = RunFolder(rundir)
    if not folder.done:
        return False
    try:
        ran = folder.manifest.spec
    except (OSError, ValueError) as e:         # DamagedRun, OlderRun: run it again
        return f"its manifest cannot be read ({e})"
    if not isinstance(ran, dict):
        return "its manifest records no spec"
    diff = first_difference(what_runs(ran), what_runs(spec.raw))
    return True if diff is None else f"the spec changed since it ran ({diff} differs)"


def run_sweep(spec_path: str, out: str, params: list[str], base_overrides: list[str],
              schemes: list[str] | None, seeds: list[int] | None, progress=None,
              only: list[str] | None = None, backend: Backend | str = "emulation",
              plots: bool = True, opts: Options = Options()) -> list[dict]:
    """Every run of the sweep not done before, on ``backend``
    (``emulator.launch.backends``: the emulation, the simulation or the flow-level model;
    each runs its schemes, the model all of its own when none are named), then each point
    reported; ``opts``: the backend's run options (``jobs``, ``dask``: simulated runs side
    by side)."""
    if isinstance(backend, str):
        backend = BACKENDS[backend]
    rows = []
    job_rows = []
    firsts = []
    pts = points(spec_path, params, base_overrides, only)
    made = list(_runs(spec_path, out, pts, schemes, seeds, backend))
    todo = []
    for label, spec, _, runs in made:
        line = backend.verification(spec)
        if line:
            print(f"{label}: {line}")
        for name, scheme, seed, rundir, done in runs:
            if done is True:
                print(f"{name}: done before, kept")
            else:
                if done:
                    print(f"{name}: done before, run again: {done}")
                todo.append(Task(name, spec, scheme, seed, rundir))
    backend.run(todo, opts, progress)
    for label, _, pdir, _ in made:
        summary = report.summarize(pdir, plots=plots,
                                   progress=lambda line: print(line, flush=True))
        if summary.evidence:
            print(f"{label}:")
            print_evidence(summary)
        if summary.runs:
            firsts.append((label, summary.runs[0], run_folders(pdir)[0]))
        for r in summary.runs:
            row = {"point": label, "scheme": r.scheme, "seed": r.seed,
                   "faithful": r.fidelity.faithful}
            row.update(_times(r))
            row["max_step_overlap"] = max((j.max_step_overlap for j in r.jobs), default=None)
            # the longest of the jobs' last-step spans (Fig 7b's tail)
            row["last_step_span_s"] = max((j.last_step_span_s for j in r.jobs),
                                          default=None)
            row["together_throughput_bps"] = r.together_throughput_bps  # Fig 7a
            for m in r.messages:
                row[f"fct_step{m.step}_s"] = m.fct_s
            if r.overlap_s is not None:
                row["flow_overlap_s"] = r.overlap_s
            row.update(_twin(r))
            rows.append(row)
            for j in r.jobs if r.fidelity.faithful else ():
                job_rows.append({"point": label, "scheme": r.scheme, "seed": r.seed,
                                 "job": j.job, "ranks": j.ranks, "jct_s": j.jct_s,
                                 "last_step_span_s": j.last_step_span_s,
                                 "max_step_overlap": j.max_step_overlap})
    write_table(out, rows)
    if job_rows and any(r["job"] != job_rows[0]["job"] for r in job_rows):
        write_jobs_table(out, job_rows)
    from emulator.analysis import page, plots
    path = plots.plot_sweep(out, firsts)
    if path:
        print(f"plot:  {path}")
    page.sweep_page(out, [label.replace("/", "_") for label, _ in pts], [path] if path else [])
    return rows


def _times(r) -> dict:
    """A run's median CCT and its jobs' median JCT (``report.analyze_run``'s)."""
    ccts = [c.cct_s for j in r.jobs for c in j.collectives if c.cct_s]
    jcts = [j.jct_s for j in r.jobs if j.jct_s]
    return {"median_cct_s": float(np.median(ccts)) if ccts else None,
            "jct_s": float(np.median(jcts)) if jcts else None}


def _twin(r) -> dict:
    """An emulated run's twin (the same code simulated on its recorded paths, made by
    ``report``'s split in ``<run>/twin/``), analysed as the run is, so that its median
    CCT and JCT mean what the row's own do; {} without a twin. (The split's job time is
    the span of the job's collectives; a JCT counts from the job's start, the compute
    before a training job's first all-reduce included.)"""
    if not r.split or r.split.twin != "simulated":
        return {}
    t = _times(report.analyze_run(os.path.join(r.rundir, TWIN), twin=False))
    return {"twin_median_cct_s": t["median_cct_s"], "twin_jct_s": t["jct_s"]}


def write_table(out: str, rows: list[dict]) -> None:
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(os.path.join(out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    # Median over the faithful seeds per (point, scheme), printed (an unfaithful run is
    # listed below it, never averaged in).
    agg = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if not r["faithful"]:
            continue
        for k, v in r.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "seed":
                agg[(r["point"], r["scheme"])][k].append(v)
    metrics = [k for k in keys if k not in ("point", "scheme", "seed", "faithful")]
    print(f"\n{'point':<34}{'scheme':<10}" + "".join(f"{k:>18}" for k in metrics))
    for (point, scheme), d in agg.items():
        vals = "".join(f"{np.median(d[k]):>18.3f}" if d.get(k) else f"{'-':>18}" for k in metrics)
        print(f"{point:<34}{scheme:<10}{vals}")
    unfaithful = [r for r in rows if not r["faithful"]]
    if unfaithful:
        print("\nUNFAITHFUL runs (not in the medians): " + ", ".join(f"{r['point']} {r['scheme']} seed {r['seed']}"
                                                  for r in unfaithful))
    print(f"\ntable: {os.path.join(out, 'sweep.csv')}")


def normalized_jct_by_size(job_rows: list[dict], scheme: str = "symphony") -> dict:
    """ranks -> JCT of ``scheme`` / JCT of the baseline, per (point, seed, job) that both
    completed (paper Fig 7c)."""
    base = {(r["point"], r["seed"], r["job"]): r["jct_s"] for r in job_rows
            if r["scheme"] == "baseline" and r["jct_s"]}
    out = defaultdict(list)
    for r in job_rows:
        b = base.get((r["point"], r["seed"], r["job"]))
        if r["scheme"] == scheme and r["jct_s"] and b:
            out[r["ranks"]].append(r["jct_s"] / b)
    return dict(sorted(out.items()))


def write_jobs_table(out: str, job_rows: list[dict]) -> None:
    """Several jobs per run: one row per job (``jobs.csv``), and JCT normalized by the
    baseline's by job size, printed."""
    with open(os.path.join(out, "jobs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(job_rows[0]))
        w.writeheader()
        w.writerows(job_rows)
    schemes = sorted({r["scheme"] for r in job_rows} - {"baseline"})
    for scheme in schemes:
        by = normalized_jct_by_size(job_rows, scheme)
        if not by:
            continue
        print(f"\nJCT of {scheme} / baseline by job size (same point, seed and job):")
        print(f"{'ranks':>6}{'jobs':>6}{'median':>9}{'P25':>8}{'P75':>8}{'worse':>7}")
        for ranks, v in by.items():
            q = np.percentile(v, [25, 50, 75])
            print(f"{ranks:>6}{len(v):>6}{q[1]:>9.3f}{q[0]:>8.3f}{q[2]:>8.3f}"
                  f"{sum(x > 1 for x in v):>7}")
    print(f"per-job table: {os.path.join(out, 'jobs.csv')}")
