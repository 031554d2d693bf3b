"""Plots of a run set (matplotlib, PNG). Unfaithful runs are labelled so on the plot."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from emulator.analysis import metrics  # noqa: E402
from emulator.analysis.summary import RunResult  # noqa: E402
from emulator.plan.layout import wire_bytes  # noqa: E402
from emulator.spec.schemes import SCHEMES  # noqa: E402
from emulator.rundir import RunFolder  # noqa: E402

COLORS = {name: s.color for name, s in SCHEMES.items()}


def _label(run: RunResult) -> str:
    tag = "" if run.fidelity.faithful else "  [UNFAITHFUL]"
    return f"{run.scheme} (seed {run.seed}){tag}"


def _flows(run: RunResult) -> list[metrics.Transfer]:
    return RunFolder(run.rundir).flows()


def _first_seed_runs(runs: list[RunResult]) -> list[RunResult]:
    seen, out = set(), []
    for r in runs:
        if r.scheme not in seen:
            seen.add(r.scheme)
            out.append(r)
    return out


def plot_all(out_dir: str, runs: list[RunResult], folder: RunFolder) -> list[str]:
    """The run set's plots (``folder``: one of its runs, for the plan they share)."""
    plan = folder.plan
    rate, mtu = plan.link_rate_bps, plan.mtu_bytes
    dilation = plan.scale.dilation                 # emulated rates x D = the real scale's
    shown = _first_seed_runs(runs)
    flows = {id(r): _flows(r) for r in shown}
    job = runs[0].jobs[0].job
    t0 = {id(r): min((f.t_start for f in flows[id(r)] if f.job == job), default=0.0)
          for r in shown}
    paths = []

    # Step overlap timeline and step completion rate (paper Fig 2a/2b, 4a).
    paths.append(plot_overlap_and_rate([(_label(r), r, flows[id(r)]) for r in shown], job, rate,
                                       mtu, os.path.join(out_dir, "overlap_and_step_rate.png")))

    # Gantt of one ring per scheme: each sender's flows, coloured by step (a key beside).
    names = {c.ip: h for h, c in plan.hosts.items()}
    fig, axes = plt.subplots(len(shown), 1, figsize=(12, 2.2 + 1.4 * len(shown)), squeeze=False)
    for ax, r in zip(axes[:, 0], shown):
        mine = [f for f in flows[id(r)] if f.job == job and f.channel == 0]
        senders = sorted({f.src for f in mine}, key=lambda ip: tuple(map(int, ip.split("."))))
        steps = sorted({f.step for f in mine}) or [0]
        cmap = plt.get_cmap("viridis")
        norm = matplotlib.colors.Normalize(steps[0], max(steps[-1], steps[0] + 1))
        for f in mine:
            y = senders.index(f.src)
            ax.barh(y, (f.t_end - f.t_start) * 1e3, left=(f.t_start - t0[id(r)]) * 1e3,
                    height=0.6, color=cmap(norm(f.step)), edgecolor="k", lw=0.3)
        ax.set_yticks(range(len(senders)), [names.get(ip, ip) for ip in senders], fontsize=7)
        ax.set_ylabel("sender")
        fig.colorbar(matplotlib.cm.ScalarMappable(norm, cmap), ax=ax, pad=0.01,
                     label="step (pass x steps + step)")
        ax.set_title(f"{_label(r)}: flows of ring/channel 0", fontsize=9)
        ax.set_xlabel("time (ms, emulated)")
    fig.tight_layout()
    paths.append(_save(fig, out_dir, "gantt_ring0.png"))

    # Throughput timeline per job (and their total with several jobs: paper Fig 7a), one
    # panel per scheme, from the first packet of any job.
    njobs = len(runs[0].jobs)
    fig, axes = plt.subplots(len(shown) if njobs > 1 else 1, 1, squeeze=False,
                             figsize=(12, 3.0 + (2.2 * (len(shown) - 1) if njobs > 1 else 0.8)))
    for k, r in enumerate(shown):
        ax = axes[k if njobs > 1 else 0, 0]
        start = min((f.t_start for f in flows[id(r)]), default=0.0)
        end = max((f.t_end for f in flows[id(r)]), default=0.0)
        if njobs > 1:                # the total first, wide and pale, under the jobs
            ts, bps = metrics.throughput_timeline(flows[id(r)], None, 0.05, start, end)
            if len(ts):
                ax.plot((ts - start) * 1e3, bps * dilation / 1e9, color="0.55", lw=3.5,
                        alpha=0.6,
                        label="total")
        for i, j in enumerate(r.jobs):
            ts, bps = metrics.throughput_timeline(flows[id(r)], j.job, 0.05, start, end)
            if len(ts):
                ax.plot((ts - start) * 1e3, bps * dilation / 1e9,
                        label=f"job {j.job}" if njobs > 1 else f"{_label(r)} job {j.job}",
                        color=f"C{i}" if njobs > 1 else COLORS.get(r.scheme))
        if njobs > 1:
            ax.set_title(f"{_label(r)}: throughput per job and total (50 ms bins)", fontsize=10)
        else:
            ax.set_title("Job throughput (all flows of the job, 50 ms bins)")
        ax.set_ylabel("delivered (Gbit/s, real-scale)")
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel("time since the first packet (ms, emulated)")
    fig.tight_layout()
    paths.append(_save(fig, out_dir, "throughput.png"))

    # CDFs over seeds (and passes, jobs) when there is more than one sample per scheme:
    # max step overlap (Fig 4b), CCT (Fig 5), span of the last step (Fig 7b).
    # Only faithful runs' numbers (as the medians); what is left out is counted in the
    # legend: failed collectives (no CCT) and every collective of an unfaithful run.
    per_scheme = defaultdict(_Samples)
    for r in runs:
        v = per_scheme[r.scheme]
        if not r.fidelity.faithful:
            v.left_out += sum(len(j.collectives) for j in r.jobs)
            continue
        for j in r.jobs:
            v.overlap.append(j.max_step_overlap)
            v.cct += [c.cct_s for c in j.collectives if c.cct_s]
            v.span.append(j.last_step_span_s)
    if any(len(v.cct) > 1 for v in per_scheme.values()):
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        panels = [("overlap", 1, "max step overlap (per job and seed)"),
                  ("cct", 1e3, "CCT (ms, emulated; every collective of every seed)"),
                  ("span", 1e3, "span of the last step (ms, emulated; per job and seed)")]
        for ax, (key, unit, xlabel) in zip(axes, panels):
            for s, v in per_scheme.items():
                if getattr(v, key):
                    x, y = metrics.cdf(np.array(getattr(v, key)) * unit)
                    out = f", {v.left_out} left out" if v.left_out else ""
                    ax.step(x, y, where="post", label=f"{s} (n = {len(x)}{out})",
                            color=COLORS.get(s))
            ax.set_xlabel(xlabel)
            ax.set_ylabel("CDF")
            ax.set_ylim(0, 1.02)               # a CDF of few samples starts above 0
            ax.legend(fontsize=8)
        fig.tight_layout()
        paths.append(_save(fig, out_dir, "cdfs.png"))
    if any(r.split for r in runs):
        paths.append(plot_split(runs, os.path.join(out_dir, "split.png")))
    return paths


@dataclass
class _Samples:
    """A scheme's samples for the CDFs, and how many collectives were left out."""
    overlap: list = field(default_factory=list)
    cct: list = field(default_factory=list)
    span: list = field(default_factory=list)
    left_out: int = 0


def plot_split(runs: list[RunResult], path: str) -> str:
    """Where the time goes (emulator.analysis.split): per scheme, the medians of the
    lockstep bound, the model on the runs' own paths (max-min, ideal-priority) and the
    emulated CCT; and every collective's routing x against its transport x."""
    colls = defaultdict(list)                 # scheme -> every split.CollectiveSplit
    for r in runs:
        for j in r.split.jobs if r.split else []:
            colls[r.scheme] += j.collectives

    def values(s: str, k: str) -> list[float]:
        return [getattr(c, k) for c in colls[s] if getattr(c, k) is not None]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.5))
    kinds = [("bound_s", "lockstep bound"), ("fluid_s", "model, max-min (same paths)"),
             ("ideal_s", "model, ideal-priority (same paths)"), ("emulated_s", "emulated")]
    width = 0.8 / len(kinds)
    schemes = [s for s, cs in colls.items() if cs]
    for i, (k, label) in enumerate(kinds):
        a1.bar([x + i * width for x in range(len(schemes))],
               [np.median(values(s, k)) * 1e3 if values(s, k) else 0 for s in schemes],
               width, label=label, color=f"C{i}")
    a1.set_xticks([x + 0.4 - width / 2 for x in range(len(schemes))], schemes)
    a1.set_ylabel("median CCT (ms, emulated)")
    a1.set_title("emulated = bound x routing x transport")
    a1.set_ylim(0, a1.get_ylim()[1] * 1.35)
    a1.legend(fontsize=8, loc="upper left", ncol=2)
    for s in schemes:
        a2.scatter(values(s, "routing_x"), values(s, "transport_x"), s=14, label=s,
                   color=COLORS.get(s), alpha=0.7)
    a2.axhline(1, color="k", lw=0.8, ls=":")
    a2.axvline(1, color="k", lw=0.8, ls=":")
    a2.set_xlabel("routing x = model on the run's paths / lockstep bound")
    a2.set_ylabel("transport x = emulated / model")
    a2.set_title("every collective")
    a2.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, os.path.dirname(path), os.path.basename(path))


def plot_overlap_and_rate(curves: list, job: int, rate: float, mtu: int, path: str) -> str:
    """Overlap timeline and normalized step completion rate, one curve per (label, run,
    flows); used per run set and across the points of a sweep."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.2))
    for i, (label, r, flows) in enumerate(curves):
        color = COLORS.get(label.split(" ")[0]) if len(curves) <= 3 else None
        t0 = min((f.t_start for f in flows if f.job == job), default=0.0)
        ts, vs = metrics.overlap_timeline(flows, job)
        if len(ts):
            a1.step((ts - t0) * 1e3, vs, where="post", label=label, color=color)
        sc = metrics.step_completion(flows, job, rate, lambda b: wire_bytes(b, mtu))
        a2.plot(range(len(sc.steps)), sc.normalized_rate, ".-", label=label, color=color)
    a1.axhline(1, color="k", lw=0.8, ls=":", label="theoretical (lockstep)")
    a1.set_xlabel("time since the job's first packet (ms, emulated)")
    a1.set_ylabel("degree of step overlap (1 = lockstep)")
    a1.set_title(f"Step overlap, job {job}")
    a1.legend(fontsize=8)
    a2.axhline(1, color="k", lw=0.8, ls=":", label="theoretical")
    a2.set_xlabel("step (all passes)")
    a2.set_ylabel("step completion rate / ideal")
    a2.set_ylim(bottom=0)
    a2.set_title("Normalized step completion rate")
    a2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweep(out_dir: str, points: list[tuple[str, RunResult, RunFolder]]) -> str | None:
    """One overlap / step-rate plot across a sweep's points (first run of each)."""
    curves = []
    for label, run, folder in points:
        if run.jobs:
            curves.append((f"{label} ({run.scheme})", run, _flows(run), folder.plan))
    if not curves:
        return None
    plan = curves[0][3]
    return plot_overlap_and_rate([c[:3] for c in curves], curves[0][1].jobs[0].job,
                                 plan.link_rate_bps, plan.mtu_bytes,
                                 os.path.join(out_dir, "sweep_overlap_and_step_rate.png"))


def _save(fig, out_dir: str, name: str) -> str:
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
