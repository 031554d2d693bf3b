"""Drop-tail against a lossless fabric (PFC), simulated, on the figures that reproduce the
paper: what losslessness changes in each comparison, and how often the fabric paused.

    .venv/bin/python benchmarks/fabrics.py [--spec fig5 | --spec fig4:from-start ...] [--seeds 20]
        [--backend sim | emulation] [--out runs/out/fabrics] [--jobs 1] [--write docs/data/fabrics.md]

Per spec, ``symphony-emu sweep SPEC --backend sim --param topology.flow_control=drop,pfc``
with the schemes baseline, symphony and pq (resumable: an interrupted measurement goes on
from ``--out``). Then, per fabric: how many runs dropped packets and the most one dropped;
per scheme how many runs paused and the port-seconds they paused (emulated time: every
paused port's time added, ``measurements.json``'s ``sim.paused_s``); and each pair --
Symphony and PQ against the baseline, Symphony against PQ -- on the median CCT and the
JCT, paired by seed (``emulator.analysis.stats.paired``: the median difference with its
95 % interval). Only faithful runs are compared; the table says how many were not.
``--backend emulation`` (root) runs the same on the emulated fabric, real PAUSE frames
and all (docs/architecture.md §5.6); its drops are every switch's (queue model, fault,
NFQUEUE) and its pauses the switch agents' records (``report.lossless``).

The default buffers are each fabric's own: drop-tail ``topology.buffer_bytes`` per port
(512 KiB), PFC HPCC's shared buffer per switch (``[pfc] buffer_bytes``, 3.2 MiB at 10
Gb/s). ``--set`` passes values to every run (e.g. ``--set pfc.buffer_bytes=1048576``).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator import home                                      # noqa: E402
from emulator.analysis import report, verdict                  # noqa: E402
from emulator.analysis.stats import paired                     # noqa: E402
from emulator.launch import sweep                              # noqa: E402
from emulator.launch.backends import Options                   # noqa: E402
from emulator.rundir import RunFolder                          # noqa: E402

# the main job, Figs 4 and 5, and the paper's Table 1 layout in its two forms (SPEC:VARIANT)
SPECS = ("table1", "fig4:from-start", "fig5", "table1-paper:fig5", "table1-paper:fig4")
FABRICS = ("drop", "pfc")
SCHEMES = ("baseline", "symphony", "pq")
PAIRS = (("symphony", "baseline"), ("pq", "baseline"), ("symphony", "pq"))
METRICS = (("median_cct_s", "CCT"), ("jct_s", "JCT"))


def measure(spec: str, out: str, seeds: int, jobs: int, sets: list[str],
            backend: str = "sim") -> dict:
    """fabric -> scheme -> seed -> the run's row, with its drops and pauses; ``spec``:
    a spec in runs/ by name, or NAME:VARIANT for one of its [[variants]] alone."""
    name, _, variant = spec.partition(":")
    where = os.path.join(out, spec.replace(":", "-"))
    if backend != "sim":
        where = os.path.join(out, backend, spec.replace(":", "-"))
    rows = sweep.run_sweep(home.path("runs", name + ".toml"), where,
                           ["topology.flow_control=" + ",".join(FABRICS)], sets,
                           list(SCHEMES), list(range(1, seeds + 1)), None,
                           [variant] if variant else None, backend,
                           plots=False, opts=Options(jobs=jobs))
    got: dict = {f: {s: {} for s in SCHEMES} for f in FABRICS}
    for r in rows:
        fabric = r["point"].rsplit("=", 1)[1]
        run = RunFolder(os.path.join(where, r["point"], f"{r['scheme']}-seed{r['seed']}"))
        meas = run.measurements
        pfc = report.lossless(meas, run)
        sim = meas.sim
        drops = sim.port_drops if sim is not None else verdict.switch_losses(meas)
        got[fabric][r["scheme"]][r["seed"]] = dict(
            r, drops=drops + (pfc.drops if pfc else 0), pauses=pfc.pauses if pfc else 0,
            paused_s=pfc.paused_s if pfc else 0.0)
    return got


def pair(runs: dict, a: str, b: str, metric: str) -> str:
    """``a`` against ``b``, paired by seed over the faithful runs of both."""
    seeds = sorted(k for k in set(runs[a]) & set(runs[b])
                   if runs[a][k]["faithful"] and runs[b][k]["faithful"]
                   and runs[a][k][metric] and runs[b][k][metric])
    if len(seeds) < 2:
        return "n/a"
    p = paired([runs[b][k][metric] for k in seeds], [runs[a][k][metric] for k in seeds])
    if p.median_ci is None:    # too few pairs for the median's interval: the mean's
        mean = (f"; mean {p.mean:+.1%} [{p.mean_ci[0]:+.1%}, {p.mean_ci[1]:+.1%}]"
                if p.mean_ci else "")
        return f"{p.median:+.1%} (no interval at {len(seeds)} pairs{mean}; " \
               f"lower in {p.lower} of {len(seeds)})"
    lo, hi = p.median_ci
    return f"{p.median:+.1%} [{lo:+.1%}, {hi:+.1%}] ({p.verdict}, {len(seeds)})"


def table(results: dict) -> list[str]:
    out = ["| spec | fabric | runs dropping (most) | runs paused: baseline, symphony, pq "
           "| port-s paused, median (max): baseline, symphony, pq | unfaithful | "
           + " | ".join(f"{a} vs {b} {m}" for a, b in PAIRS for _, m in METRICS) + " |",
           "|---|---|---|---|---|---|" + "---|" * (len(PAIRS) * len(METRICS))]
    for spec, by_fabric in results.items():
        for fabric, runs in by_fabric.items():
            every = [r for s in SCHEMES for r in runs[s].values()]
            if not every:
                continue
            dropping = [r["drops"] for r in every if r["drops"]]
            paused = ", ".join(f"{sum(1 for r in runs[s].values() if r['pauses'])}"
                               for s in SCHEMES)
            paused_s = ", ".join(f"{np.median(t):.3f} ({max(t):.3f})" for t in (
                [r["paused_s"] for r in runs[s].values()] for s in SCHEMES) if t)
            cells = [pair(runs, a, b, m) for a, b in PAIRS for m, _ in METRICS]
            out.append(
                f"| {spec} | {fabric} | {len(dropping)} of {len(every)}"
                f" ({max(dropping, default=0)}) | {paused} | {paused_s} "
                f"| {sum(1 for r in every if not r['faithful'])} | " + " | ".join(cells) + " |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", action="append", help="a spec in runs/ by name, NAME:VARIANT for one variant (repeatable; "
                    f"default: {', '.join(SPECS)})")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--backend", choices=("sim", "emulation"), default="sim",
                    help="the simulation (default) or the emulated fabric (root)")
    ap.add_argument("--out", default=home.path("runs", "out", "fabrics"))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--write", metavar="FILE", help="also write the table to FILE (markdown)")
    a = ap.parse_args(argv)
    results = {s: measure(s, a.out, a.seeds, a.jobs, a.set, a.backend)
               for s in a.spec or SPECS}
    lines = table(results)
    cmd = ("benchmarks/fabrics.py " + " ".join(f"--spec {s}" for s in a.spec or ())
           + f" --seeds {a.seeds}" + (f" --backend {a.backend}" if a.backend != "sim" else "")
           + "".join(f" --set {s}" for s in a.set)).replace("  ", " ")
    how = "Simulated" if a.backend == "sim" else "Emulated"
    text = "\n".join([f"{how}, {a.seeds} seeds a scheme, `{cmd}`; each cell: the median "
                      "paired difference [95 % interval] (verdict, pairs).", ""] + lines)
    print(text)
    if a.write:
        with open(a.write, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
