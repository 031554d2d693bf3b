"""``symphony-emu reproduce [FIG ...]``: the paper's figures again, from data.

Per figure (a spec in ``runs/`` with ``[[paper]]`` tables), every variant and scheme,
under the spec's own profile and dependency rule, on each backend asked for: the
flow-level model (``fluid``), the simulation (``sim``) and the emulation, with the seeds
of :data:`SEEDS` (more for Figs 4 and 5, as the paper ran them on more). Each backend of
each figure is a sweep (``emulator.launch.sweep``) in ``<out>/<fig>/<backend>/``, so an
interrupted reproduction resumes where it stopped and the long emulated part can run in
stages, figure by figure; emulated runs get their simulated twins from ``report``.

Every run is a row of ``<data>/<fig>.csv`` (:data:`COLUMNS`): the figure, variant,
backend, scheme, seed, the code revision that ran it, whether it was faithful, and its
metrics. A backend run again replaces that backend's rows and keeps the others', so the
CSV gathers stages run on different days; ``emulator.analysis.figures`` makes the page
from these files alone.
"""

from __future__ import annotations

import csv
import json
import os

from emulator.launch import backends, sweep
from emulator.launch.backends import Options
from emulator.rundir import RunFolder
from emulator.spec import load
from emulator import home

RUNS = home.path("runs")
DATA = home.path("docs", "data", "figures")
BACKENDS = tuple(backends.BACKENDS)       # fluid, sim, emulation: the cheapest first
# The seeds each backend runs by default; Figs 4 and 5 rest on more (issue: >= 50
# simulated, >= 5 emulated), as does the paper's Table 1 layout emulated.
SEEDS = {"fluid": 200, "sim": 20, "emulation": 3}
MORE_SEEDS = {"sim": {"fig4": 50, "fig5": 50},
              "emulation": {"fig4": 5, "fig5": 5, "table1-paper": 5}}
COLUMNS = ("figure", "variant", "backend", "scheme", "seed", "git_revision", "fabric", "faithful",
           "median_cct_s", "jct_s", "max_step_overlap", "last_step_span_s",
           "together_throughput_bps", "flow_overlap_s", "wall_s",
           "twin_median_cct_s", "twin_jct_s")    # an emulated run's simulated twin's
# (then a column per message's flow time, ``fct_step<k>_s``, where a figure has them)


def figures() -> list[str]:
    """The specs in ``runs/`` that say what the paper reports (``[[paper]]``)."""
    names = sorted(os.path.splitext(f)[0] for f in os.listdir(RUNS) if f.endswith(".toml"))
    return [n for n in names if load(os.path.join(RUNS, n + ".toml")).paper]


def seeds_for(figure: str, backend: str, override: int | None = None) -> int:
    if override:
        return override
    return MORE_SEEDS.get(backend, {}).get(figure, SEEDS[backend])


def misplaced_out(out: str, figs: list[str]) -> str | None:
    """Why ``out`` is one figure's folder rather than the folder of figures that
    :func:`reproduce` resumes (``out/<figure>/<backend>``), or None. Given the figure's own
    folder, every run would silently start again one level deeper."""
    if os.path.basename(os.path.normpath(out)) not in figs:
        return None
    held = [b for b in BACKENDS if os.path.isdir(os.path.join(out, b))]
    if not held or any(os.path.isdir(os.path.join(out, f)) for f in figs):
        return None
    parent = os.path.dirname(os.path.normpath(out)) or "."
    return (f"--out {out}: that is one figure's folder (its runs are in "
            f"{os.path.join(out, held[0])}); give the folder that holds it, --out {parent}, "
            "to resume them")


def reproduce(figs: list[str], backends: list[str], out: str, data: str = DATA,
              seeds: int | None = None, jobs: int = 1, progress=None) -> list[str]:
    """Run each figure on each backend (resuming what ``out`` holds) and write its CSV;
    returns the CSVs written. ``seeds``: one count for every backend instead of
    :data:`SEEDS`."""
    os.makedirs(data, exist_ok=True)
    written = []
    for fig in figs:
        spec_path = os.path.join(RUNS, fig + ".toml")
        rows = []
        for backend in backends:
            n = seeds_for(fig, backend, seeds)
            where = os.path.join(out, fig, backend)
            print(f"== {fig}, {backend}: {n} seeds -> {where}", flush=True)
            got = sweep.run_sweep(spec_path, where, [], [], None, list(range(1, n + 1)),
                                  progress, None, backend, plots=False, opts=Options(jobs=jobs))
            rows += [_row(fig, backend, where, r) for r in got]
        written.append(write_csv(os.path.join(data, fig + ".csv"), rows,
                                 replace_backends=backends))
    return written


def _row(fig: str, backend: str, where: str, r: dict) -> dict:
    rundir = os.path.join(where, r["point"].replace("/", "_"), f"{r['scheme']}-seed{r['seed']}")
    run = RunFolder(rundir)
    return {"figure": fig, "variant": r["point"], "backend": backend,
            "git_revision": _field(rundir, "manifest.json", "git_revision"),
            "fabric": run.plan.fabric.flow_control,            # drop | pfc
            "wall_s": run.measurements.wall_s,                   # the machine time
            **{k: v for k, v in r.items() if k in COLUMNS or k.startswith("fct_")}}


def _field(rundir: str, name: str, key: str):
    """``key`` of a run folder's JSON file ``name`` ("" when it has none)."""
    try:
        with open(os.path.join(rundir, name)) as f:
            return json.load(f).get(key, "")
    except (OSError, ValueError):
        return ""


def write_csv(path: str, rows: list[dict], replace_backends=()) -> str:
    """``rows`` into ``path``, keeping the rows of backends not in ``replace_backends``."""
    kept = []
    if os.path.exists(path):
        with open(path, newline="") as f:
            kept = [r for r in csv.DictReader(f) if r["backend"] not in replace_backends]
    extra = sorted({k for r in kept + rows for k in r if k not in COLUMNS})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS + tuple(extra), lineterminator="\n")
        w.writeheader()
        for r in kept + rows:
            w.writerow({k: "" if r.get(k) is None else r.get(k) for k in w.fieldnames})
    return path
