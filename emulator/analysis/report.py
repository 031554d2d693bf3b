"""Metrics, ``summary.json`` and plots from run folders, each run judged by
``emulator.analysis.verdict`` (``emulator.analysis.console`` prints the summary's tables).

Works from the files alone, so ``symphony-emu report DIR`` recomputes everything after
the fact. What it makes is ``emulator.analysis.summary``'s types: a run's
:func:`analyze_run` a ``RunResult``, a run set's :func:`summarize` a ``Summary``, its
tables (:func:`compare` and the others) those of ``summary.tables``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import replace

import numpy as np

from emulator.analysis import metrics, split, verdict
from emulator.analysis.stats import median_interval
from emulator.analysis.evidence import evidence, noise_floor, primary_metric
from emulator.analysis.summary import (
    BASELINE, COUNTED, SYMPHONY, CollectiveResult, Damaged, Excluded, JobResult, JobRow,
    Lossless, Message, PairedSeeds, Quartiles, RunResult, Scaling, SchemeMedians, SchemeSeeds,
    SeedComparison, SplitMedians, Summary, Transport)
from emulator.progress import Tally
from emulator.plan.layout import collective_bytes, theoretical_cct_s
from emulator.spec.schemes import SCHEMES
from emulator.rundir import DamagedRun, OlderRun, RunFolder, run_folders
from runtime.records import CollectiveDone, FlowSent, MessageSummary, PortPause, RecordError


def analyze_run(rundir: str, twin: bool = True) -> RunResult:
    run = RunFolder(rundir)
    man, meas, plan = run.manifest, run.measurements, run.plan
    rate, mtu = plan.link_rate_bps, plan.mtu_bytes
    lays = plan.layouts
    flows = run.flows()
    # one clock: every time a run set's files give counts from the run's t = 0 (the hosts'
    # records are on the coordinator's monotonic clock, whose t = 0 is meas.t_start)
    t0 = meas.t_start if meas.t_start is not None else 0.0
    wrong = []
    jobs, ratios, floors, spans = _jobs(run, flows, t0, meas.t_start is not None, wrong)
    # several jobs: their aggregate throughput while all of them run (Fig 7a)
    together = (metrics.mean_throughput(flows, t0 + max(a for a, _ in spans),
                                        t0 + min(b for _, b in spans))
                if len(spans) > 1 and len(spans) == len(lays) else None)
    messages = []
    expected = sum(len(c.sends) for c in plan.hosts.values())     # plain messages
    if expected:
        messages = sorted((Message(src=m.src, dst=m.dst, job=m.job, step=m.step,
                                   bytes=m.bytes, start_s=m.t_start - t0,
                                   end_s=m.t_end - t0, fct_s=m.t_end - m.t_start)
                           for m in flows), key=lambda m: (m.step, m.src))
        if len(messages) != expected:
            wrong.append(f"{expected - len(messages)} of {expected} messages never completed")
        for name, summ in meas.rank_summaries.items():
            if not summ.ok:
                why = (summ.bad or summ.missing) if isinstance(summ, MessageSummary) else None
                wrong.append(f"host {name}: {why}")
    wrong += meas.broken                    # a dead agent or host, a failed perturbation
    sends = run.host_records(FlowSent)
    # drop-tail buffers where the paper's fabric was lossless (PFC): how often they dropped
    transport = Transport(**{k: sum(getattr(r, k) for r in sends) for k in COUNTED},
                          switch_drops=verdict.switch_losses(meas))
    # Strict priority (pq) may starve the low class past the RTO: a real timeout there
    scheme = SCHEMES.get(man.scheme)                     # None: a model-only scheme
    lossy = (scheme is not None and scheme.may_starve) or any(
        e.what.loses_packets for e in plan.perturbations)
    pfc = lossless(meas, run)
    fid = verdict.fidelity(meas, rate, mtu, ratios, wrong, transport, lossy, floors,
                           verdict.server_of_hosts(plan.fabric), pfc)
    replayed = man.backend == "emulation" and bool(jobs or messages) and run.done
    replay = split.replay(run, twin) if replayed else None
    if replayed:
        fid = verdict.judge_emulation_error(fid, replay and replay.emulation_error_x)
    overlap = None
    if len(messages) == 2:
        a, b = messages
        overlap = max(0.0, min(a.end_s, b.end_s) - max(a.start_s, b.start_s))
    return RunResult(scheme=man.scheme, seed=man.seed, repeat=man.repeat, rundir=rundir,
                     backend=man.backend, twin_of=twin_of(rundir),
                     order=sorted({lay.order for lay in lays}), jobs=jobs,
                     together_throughput_bps=together, transport=transport, fidelity=fid,
                     replayed=replayed, split=replay, messages=messages, overlap_s=overlap,
                     lossless=pfc)


def lossless(meas, run: RunFolder | None = None) -> Lossless | None:
    """A lossless fabric's pauses and drops; None on a drop-tail fabric. Simulated: from
    ``measurements.json``'s ``sim``; emulated: from the ``PortPause`` records the switch
    agents and the hosts wrote (the frames the switches sent, what every port honoured,
    the frames a switch's buffer could not take)."""
    sim = meas.sim
    if sim is not None:
        if sim.flow_control != "pfc":
            return None
        paused = list(sim.paused_s.values())
        return Lossless(pauses=sim.pauses, resumes=sim.resumes, ports_paused=len(paused),
                        paused_s=sum(paused), max_paused_s=max(paused, default=0.0),
                        drops=sim.pfc_drops)
    if run is None or run.plan.fabric.flow_control != "pfc":
        return None
    switches = [x for sw in run.plan.agents for x in run.agent_records(sw, PortPause)]
    paused = [x.paused_s for x in switches + run.host_records(PortPause) if x.paused_s > 0]
    return Lossless(pauses=sum(x.pauses_tx for x in switches),
                    resumes=sum(x.resumes_tx for x in switches), ports_paused=len(paused),
                    paused_s=sum(paused), max_paused_s=max(paused, default=0.0),
                    drops=sum(x.drops for x in switches))


def _jobs(run: RunFolder, flows: list, t0: float, started: bool, wrong: list[str]):
    """Each job's result (a collective not finished, or wrong, added to ``wrong``), the
    collectives' CCT over their bound and over the fastest the shaped links allow (burst
    included), and each completed job's (start, end) from t = 0 (``started``: the run
    has a t = 0, its hosts started)."""
    plan = run.plan
    rate, mtu = plan.link_rate_bps, plan.mtu_bytes
    colls = metrics.collective_times(run.host_records(CollectiveDone))
    jobs, ratios, floors, spans = [], [], [], []
    for lay in plan.layouts:
        cs = []
        for p in range(lay.passes):
            nbytes = collective_bytes(lay, p)
            theo = theoretical_cct_s(lay, rate, mtu, nbytes=nbytes)
            c = colls.get((lay.job, p))
            if c is None or c.ranks != len(lay.hosts):
                # not finished by every rank: failed, no CCT (never a slow result)
                cs.append(CollectiveResult(
                    pass_index=p, nbytes=nbytes, cct_s=None, theoretical_cct_s=theo,
                    cct_ratio=None, failed=True, verified=False, algbw_bps=None,
                    busbw_bps=None))
                done_by = f" ({c.ranks} of {len(lay.hosts)} ranks finished)" if c else ""
                wrong.append(f"job {lay.job} pass {p}: never completed{done_by}")
                continue
            alg, bus = metrics.bandwidths(nbytes, c.cct_s, lay.bus_factor)
            ratio = c.cct_s / theo
            ratios.append(ratio)
            floors.append(c.cct_s / verdict.fastest_cct_s(lay, theo, rate))
            if not c.verified:
                wrong.append(f"job {lay.job} pass {p}: WRONG RESULT")
            cs.append(CollectiveResult(
                pass_index=p, nbytes=nbytes, start_s=c.start_s - t0, cct_s=c.cct_s,
                theoretical_cct_s=theo, cct_ratio=ratio, failed=False, verified=c.verified,
                algbw_bps=alg * 8, busbw_bps=bus * 8))
        done = [c for c in cs if c.cct_s is not None]
        # JCT: from the job's start (t = 0 + start_s; a training job computes before its
        # first all-reduce) to the end of its last collective.
        # A job that runs after another starts when its first rank does.
        job_start = (lay.start_s if started and not lay.after_job
                     else min((c.start_s for c in done), default=None))
        jct = (max(c.start_s + c.cct_s for c in done) - job_start
               if done and len(done) == len(cs) else None)
        if jct is not None:
            spans.append((job_start, job_start + jct))
        jobs.append(JobResult(job=lay.job, algorithm=lay.algorithm, ranks=len(lay.hosts),
                              nbytes=lay.nbytes, collectives=cs, jct_s=jct,
                              max_step_overlap=metrics.max_overlap(flows, lay.job),
                              last_step_span_s=metrics.last_step_span(flows, lay.job)))
    return jobs, ratios, floors, spans


def twin_of(rundir: str) -> str | None:
    """The emulated run whose simulated twin ``rundir`` is (``<run>/twin/``,
    ``split.TWIN``), or None: a twin has its run's name, scheme and seed, so every place
    that shows it says whose twin it is."""
    path = os.path.normpath(os.path.abspath(rundir))
    parent = os.path.dirname(path)
    if os.path.basename(path) == split.TWIN and RunFolder(parent).is_run:
        return parent
    return None


def summarize(out_dir: str, plots: bool = True, exports: bool = True,
              fresh: bool = False, twin: bool = True, progress=None) -> Summary:
    """Analyze every run folder in ``out_dir`` into ``summary.json`` (and, with
    ``exports``, each emulated run's tables and trace -- made again with ``fresh``, else
    kept when newer than the run --, ``nccl-tests-<scheme>.json`` and the ``index.html`` pages:
    ``emulator.analysis.export``, ``page``).

    ``out_dir`` may be one run's folder: then that run alone is reported (its
    ``summary.json`` and plots in its folder, its own ``index.html``), never the folders
    inside it -- an emulated run holds its simulated twin in ``twin/``, which is shown
    only as the twin, in the split.

    ``progress``: called with a line now and then while the runs are read and their
    pages made (a sweep of 128-host runs reads for minutes)."""
    single = RunFolder(out_dir).is_run
    folders = [RunFolder(out_dir)] if single else run_folders(out_dir)
    runs, damaged = [], []
    tell = Tally(progress, f"{out_dir}: summary", len(folders))
    for folder in folders:
        tell("read", len(runs) + len(damaged))
        # a damaged file (cut short, not JSON, keys no writer writes) leaves its run out of
        # everything, named with what is damaged, as a failed run is; the others are read
        try:
            runs.append(analyze_run(folder.path, twin))
        except (DamagedRun, RecordError) as e:
            if single:
                raise
            damaged.append(_damaged(folder, e))
    runs.sort(key=lambda r: (r.scheme, r.seed))
    if not runs:
        if damaged:
            raise DamagedRun("; ".join(d.why for d in damaged))
        raise FileNotFoundError(f"{out_dir}: no run folders (with manifest.json) found")
    folders = [f for f in folders if f.path in {r.rundir for r in runs}]
    # A wrong result or broken fidelity is reported loudly and never averaged in.
    good = [r for r in runs if r.fidelity.faithful]
    repeats = good
    # A seed run again (--repeat) is noise, measured apart; everything else reads each
    # seed's first run, so no seed counts twice.
    good = [r for r in good if r.repeat == 1]
    man, plan = folders[0].manifest, folders[0].plan
    drawn = []
    if plots and any(r.jobs for r in runs):
        from emulator.analysis import plots as plotting     # matplotlib only when drawing
        drawn = plotting.plot_all(out_dir, runs, folders[0])
    primary = primary_metric(man.spec)
    summary = Summary(
        name=man.name, backend=man.backend, order=sorted({o for r in runs for o in r.order}),
        run_folder=out_dir if single else None,           # report of one run's folder
        spec=man.spec, scale=Scaling(dilation=plan.scale.dilation),
        link_rate_bps=plan.link_rate_bps, runs=runs, comparison=compare(good),
        seeds=compare_seeds(good), primary=primary, evidence=evidence(good, primary),
        per_job=compare_jobs(good), noise=noise_floor(repeats), split=compare_split(good),
        # left out for a wrong result or broken fidelity; a faithful seed's repeats are
        # not excluded, they are the noise floor
        excluded=[Excluded(scheme=r.scheme, seed=r.seed, repeat=r.repeat)
                  for r in runs if not r.fidelity.faithful]
        + [Excluded(scheme=d.scheme, seed=d.seed, repeat=d.repeat, damaged=True)
           for d in damaged],
        # run folders with a damaged file: named, with what is damaged, read by none
        damaged=damaged, plots=drawn)
    summary.write(out_dir)
    if exports:
        from emulator.analysis import console, export, nccl, page
        for i, r in enumerate(runs):
            tell("exported", i)
            if r.backend in ("emulation", "sim"):   # the sim samples no ports: no rows
                export.write_run(r.rundir, force=fresh)
            export.write_collectives(r)
            page.run_page(r)
        nccl.write_nccl_tests_json(out_dir, summary)
        if not single:                    # one run's folder: its index.html is the run's
            page.set_page(out_dir, summary, console.console_text(summary))
    return summary


def _damaged(folder: RunFolder, e: Exception) -> Damaged:
    """A run folder a file of which cannot be read: its folder, scheme and seed (from its
    manifest, when that is what is intact) and what is damaged."""
    try:
        man = folder.manifest
    except (DamagedRun, OlderRun, OSError):
        man = None
    return Damaged(rundir=folder.path, scheme=man.scheme if man else None,
                   seed=man.seed if man else None, repeat=man.repeat if man else 1,
                   damaged=True, why=str(e))


def compare(runs: list[RunResult]) -> dict[str, SchemeMedians]:
    """Per scheme: median CCT, JCT, max overlap over seeds and jobs."""
    by = defaultdict(lambda: ([], [], []))         # scheme -> CCTs, JCTs, max overlaps
    for r in runs:
        for j in r.jobs:
            ccts, jcts, overlaps = by[r.scheme]
            ccts += [c.cct_s for c in j.collectives if c.cct_s]
            if j.jct_s is not None:
                jcts.append(j.jct_s)
            overlaps.append(j.max_step_overlap)
    return {s: SchemeMedians(cct_s=_median(ccts), jct_s=_median(jcts),
                             max_step_overlap=_median(overlaps))
            for s, (ccts, jcts, overlaps) in by.items()}


def _median(v: list) -> float | None:
    return float(np.median(v)) if v else None


def _quartiles(v: list[float]) -> dict:
    return {"median": float(np.median(v)), "p25": float(np.percentile(v, 25)),
            "p75": float(np.percentile(v, 75)), "n": len(v)}


def compare_seeds(runs: list[RunResult]) -> SeedComparison:
    """How the schemes compare across seeds: per scheme, the median, P25 and P75 over seeds
    of each seed's median CCT (and JCT: the median of its jobs'); per other scheme, the
    paired difference against the baseline of the same seed (its median CCT over the
    baseline's, minus 1), with the same quartiles and the seeds in which it was faster
    (the intervals and tests are :func:`evidence`'s). A single run flips sign from seed
    to seed; this is the number to read."""
    per: dict = defaultdict(dict)            # scheme -> seed -> (median CCT, JCT)
    for r in runs:
        ccts = [c.cct_s for j in r.jobs for c in j.collectives if c.cct_s]
        jcts = [j.jct_s for j in r.jobs if j.jct_s is not None]
        if ccts:
            per[r.scheme][r.seed] = (float(np.median(ccts)),
                                     float(np.median(jcts)) if jcts else None)
    schemes, paired = {}, {}
    for s, seeds in per.items():
        jcts = [j for _, j in seeds.values() if j is not None]
        schemes[s] = SchemeSeeds(cct_s=Quartiles(**_quartiles([c for c, _ in seeds.values()])),
                                 jct_s=Quartiles(**_quartiles(jcts)) if jcts else None)
    base = per.get(BASELINE, {})
    for s, seeds in per.items():
        common = sorted(set(seeds) & set(base))
        if s == BASELINE or not common:
            continue
        d = [seeds[k][0] / base[k][0] - 1 for k in common]
        paired[s] = PairedSeeds(**_quartiles(d), faster=sum(x < 0 for x in d), seeds=common)
    return SeedComparison(schemes=schemes, paired=paired)


SPLIT_MEDIANS = ("routing_x", "transport_x", "ideal_gain", "bound_s", "fluid_s", "ideal_s",
                 "emulated_s", "sim_s", "emulation_x")     # CollectiveSplit's, medians of


def compare_split(runs: list[RunResult]) -> dict[str, SplitMedians]:
    """Per scheme, medians over every collective of every emulated run with a split:
    routing x (fluid / bound), transport x (emulated / fluid), the ideal-priority gain on
    the same paths; and for Symphony, the share of that gain it realised (its median CCT
    gain over the baseline's, over the ideal-priority gain)."""
    by = defaultdict(lambda: defaultdict(list))     # scheme -> SplitMedians field -> values
    for r in runs:
        done = {j.job: j.jct_s is not None for j in r.jobs}
        for j in r.split.jobs if r.split else []:
            for c in j.collectives:
                for k in SPLIT_MEDIANS:
                    if getattr(c, k) is not None:
                        by[r.scheme][k].append(getattr(c, k))
            lo, hi = j.fluid_jct_range_s or (None, None)
            jct = {"jct_bound_s": sum(c.bound_s for c in j.collectives),
                   "jct_fluid_s": j.fluid_jct_s, "jct_ideal_s": j.ideal_jct_s,
                   "jct_emulated_s": j.emulated_jct_s if done.get(j.job) else None,
                   "jct_sim_s": j.sim_jct_s, "jct_fluid_lo_s": lo, "jct_fluid_hi_s": hi}
            for k, v in jct.items():
                if v is not None:
                    by[r.scheme][k].append(v)
    out = {s: SplitMedians(**{k: float(np.median(v)) for k, v in d.items()})
           for s, d in by.items()}
    b, y = out.get(BASELINE), out.get(SYMPHONY)
    if b and y and b.emulated_s is not None and y.emulated_s is not None and y.ideal_gain:
        gain = 1 - y.emulated_s / b.emulated_s
        share = _share_by_seed(runs)
        ci = median_interval(list(share.values())) if share else None
        out[SYMPHONY] = replace(y, gain_vs_baseline=gain,
                                realised_share_of_ideal=gain / y.ideal_gain,
                                realised_share_by_seed=share,
                                realised_share_ci=[ci[0], ci[1]] if ci else None)
    return out


def _share_by_seed(runs: list[RunResult]) -> dict[str, float]:
    """Per seed with both runs split: Symphony's gain on the baseline's median CCT over
    the ideal-priority gain on Symphony's own paths, (1 - S / B) / G; where G is 0 there is
    no gain to share and the seed is left out."""
    def med(r, key):
        v = [getattr(c, key) for j in (r.split.jobs if r.split else []) for c in j.collectives
             if getattr(c, key) is not None]
        return float(np.median(v)) if v else None
    got = defaultdict(dict)
    for r in runs:
        got[r.seed][r.scheme] = r
    out = {}
    for seed, by in sorted(got.items(), key=lambda kv: str(kv[0])):
        if BASELINE not in by or SYMPHONY not in by:
            continue
        b, y = med(by[BASELINE], "emulated_s"), med(by[SYMPHONY], "emulated_s")
        g = med(by[SYMPHONY], "ideal_gain")
        if b and y and g:
            out[str(seed)] = (1 - y / b) / g
    return out


def compare_jobs(runs: list[RunResult]) -> dict[str, dict[str, JobRow]]:
    """Per job id (as a string) and scheme: median JCT and last-step span over seeds, and
    each scheme's JCT normalized by the baseline's of the same seed (median over seeds;
    the paper's Fig 6 and 7c)."""
    by = defaultdict(lambda: defaultdict(dict))       # job -> scheme -> seed -> job result
    for r in runs:
        for j in r.jobs:
            by[j.job][r.scheme][r.seed] = j
    out = {}
    for job, schemes in sorted(by.items()):
        base = schemes.get(BASELINE, {})
        out[str(job)] = {}
        for scheme, seeds in schemes.items():
            jcts = [j.jct_s for j in seeds.values() if j.jct_s is not None]
            spans = [j.last_step_span_s for j in seeds.values()]
            norm = [j.jct_s / base[s].jct_s for s, j in seeds.items()
                    if s in base and j.jct_s and base[s].jct_s]
            out[str(job)][scheme] = JobRow(
                ranks=next(iter(seeds.values())).ranks, jct_s=_median(jcts),
                last_step_span_s=_median(spans), normalized_jct=_median(norm))
    return out
