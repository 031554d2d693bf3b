"""Metrics, ``summary.json``, tables and plots from run folders, each run judged by
``emulator.analysis.verdict``.

Works from the files alone, so ``symphony-emu report DIR`` recomputes everything after
the fact. ``summary.json`` (read by tests outside this repository)::

    {"runs": [{"scheme", "seed",
               "jobs": [{"job", "jct_s", "max_step_overlap", "last_step_span_s",
                         "collectives": [{"pass", "nbytes", "cct_s", "theoretical_cct_s",
                                          "cct_ratio", "verified", "algbw_bps", "busbw_bps"}]}],
               "transport": {"packets", "retransmits", "timeouts", "naks", "cnps"},
               "fidelity": {"faithful", "reasons", "cpu_busy", "nfqueue_drops",
                            "pacing_mean_late_s", ...}}],
     "per_job": {job: {scheme: {"ranks", "jct_s", "last_step_span_s", "normalized_jct"}}},
     "spec": ..., "scale": ...}

"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import numpy as np

from emulator.analysis import metrics, split, verdict
from emulator.analysis.stats import median_interval
from emulator.analysis.evidence import (METRICS, evidence, evidence_text,  # noqa: F401
                                        noise_floor, primary_metric, print_evidence,
                                        print_noise)
from emulator.plan.layout import collective_bytes, theoretical_cct_s
from emulator.schemes import SCHEMES
from emulator.rundir import RunFolder, run_folders
from runtime.records import CollectiveDone, FlowSent
from hosts.collectives.order import IN_ORDER, ON_ARRIVAL
from runtime.scale import Scale

def analyze_run(rundir: str, twin: bool = True) -> dict:
    run = RunFolder(rundir)
    man, meas, plan = run.manifest, run.measurements, run.plan
    rate, mtu = plan.link_rate_bps, plan.mtu_bytes
    lays = plan.layouts
    flows = run.flows()
    colls = metrics.collective_times(run.host_records(CollectiveDone))
    # one clock: every time a run set's files give counts from the run's t = 0 (the hosts'
    # records are on the coordinator's monotonic clock, whose t = 0 is meas["t_start"])
    t0 = meas.get("t_start", 0.0)
    jobs_out = []
    ratios = []
    floors = []             # CCT over the fastest the shaped links allow (burst included)
    wrong = []
    for lay in lays:
        cs = []
        for p in range(lay.passes):
            nbytes = collective_bytes(lay, p)
            theo = theoretical_cct_s(lay, rate, mtu, nbytes=nbytes)
            c = colls.get((lay.job, p))
            if c is None or c["ranks"] != len(lay.hosts):
                # not finished by every rank: failed, no CCT (never a slow result)
                cs.append({"pass": p, "nbytes": nbytes, "cct_s": None,
                           "theoretical_cct_s": theo, "cct_ratio": None, "failed": True,
                           "verified": False, "algbw_bps": None, "busbw_bps": None})
                done_by = f" ({c['ranks']} of {len(lay.hosts)} ranks finished)" if c else ""
                wrong.append(f"job {lay.job} pass {p}: never completed{done_by}")
                continue
            alg, bus = metrics.bandwidths(nbytes, c["cct_s"], lay.bus_factor)
            ratio = c["cct_s"] / theo
            ratios.append(ratio)
            floors.append(c["cct_s"] / verdict.fastest_cct_s(lay, theo, rate))
            if not c["verified"]:
                wrong.append(f"job {lay.job} pass {p}: WRONG RESULT")
            cs.append({"pass": p, "nbytes": nbytes, "start_s": c["start_s"] - t0,
                       "cct_s": c["cct_s"],
                       "theoretical_cct_s": theo, "cct_ratio": ratio, "failed": False,
                       "verified": c["verified"],
                       "algbw_bps": alg * 8, "busbw_bps": bus * 8})
        done = [c for c in cs if c["cct_s"] is not None]
        # JCT: from the job's start (t = 0 + start_s; a training job computes before its
        # first all-reduce) to the end of its last collective.
        # A job that runs after another starts when its first rank does.
        job_start = (lay.start_s if "t_start" in meas and not lay.after_job
                     else min((c["start_s"] for c in done), default=None))
        jct = (max(c["start_s"] + c["cct_s"] for c in done) - job_start
               if done and len(done) == len(cs) else None)
        jobs_out.append({"job": lay.job, "algorithm": lay.algorithm, "ranks": len(lay.hosts),
                         "nbytes": lay.nbytes, "collectives": cs, "jct_s": jct,
                         "max_step_overlap": metrics.max_overlap(flows, lay.job),
                         "last_step_span_s": metrics.last_step_span(flows, lay.job)})
    messages = []
    expected = sum(len(c.sends) for c in plan.hosts.values())     # plain messages
    if expected:
        for m in flows:
            messages.append({"src": m.src, "dst": m.dst, "job": m.job, "step": m.step,
                             "bytes": m.bytes, "start_s": m.t_start - t0,
                             "end_s": m.t_end - t0, "fct_s": m.t_end - m.t_start})
        messages.sort(key=lambda m: (m["step"], m["src"]))
        if len(messages) != expected:
            wrong.append(f"{expected - len(messages)} of {expected} messages never completed")
        for name, summ in meas.get("rank_summaries", {}).items():
            if not summ.get("ok"):
                wrong.append(f"host {name}: {summ.get('bad') or summ.get('missing')}")
    wrong += meas.get("broken", [])         # a dead agent or host, a failed perturbation
    sends = run.host_records(FlowSent)
    transport = {k: sum(getattr(r, k) for r in sends)
                 for k in ("packets", "retransmits", "timeouts", "naks", "cnps")}
    # drop-tail buffers where the paper's fabric was lossless (PFC): how often they dropped
    transport["switch_drops"] = verdict.switch_losses(meas)
    # Strict priority (pq) may starve the low class past the RTO: a real timeout there
    scheme = SCHEMES.get(man["scheme"])                  # None: a model-only scheme
    lossy = (scheme is not None and scheme.may_starve) or any(
        e.what.loses_packets for e in plan.perturbations)
    fid = verdict.fidelity(meas, rate, mtu, ratios, wrong, transport, lossy, floors,
                           verdict.server_of_hosts(plan.fabric))
    fid["perturbations"] = [e["what"] for e in meas.get("perturbations", [])]
    fid["perturbation_effects"] = list(meas.get("perturbation_effects", []))
    backend = man.get("backend", "emulation")
    out = {"scheme": man["scheme"], "seed": man["seed"], "repeat": man.get("repeat", 1),
           "rundir": rundir,
           "backend": backend, "order": sorted({lay.order for lay in lays}), "jobs": jobs_out, "transport": transport, "fidelity": fid}
    if backend == "emulation" and (jobs_out or messages) and run.done:
        out["split"] = split.replay(run, twin)
        verdict.judge_emulation_error(fid, (out["split"] or {}).get("emulation_error_x"))
    if messages:
        out["messages"] = messages
        if len(messages) == 2:
            a, b = messages
            out["overlap_s"] = max(0.0, min(a["end_s"], b["end_s"]) - max(a["start_s"], b["start_s"]))
    return out


def run_dirs(out_dir: str) -> list[str]:
    return [r.path for r in run_folders(out_dir)]


def summarize(out_dir: str, plots: bool = True, exports: bool = True,
              fresh: bool = False, twin: bool = True) -> dict:
    """Analyze every run folder in ``out_dir`` into ``summary.json`` (and, with
    ``exports``, each emulated run's tables and trace -- made again with ``fresh``, else
    kept when newer than the run --, ``nccl-tests-<scheme>.json`` and the ``index.html`` pages:
    ``emulator.analysis.export``, ``page``)."""
    folders = run_folders(out_dir)
    runs = sorted((analyze_run(r.path, twin) for r in folders),
                  key=lambda r: (r["scheme"], r["seed"]))
    if not runs:
        if RunFolder(out_dir).is_run:
            raise FileNotFoundError(
                f"{out_dir}: one run's folder; report reads the folder that holds runs: "
                f"symphony-emu report {os.path.dirname(os.path.abspath(out_dir))}")
        raise FileNotFoundError(f"{out_dir}: no run folders (with manifest.json) found")
    # A wrong result or broken fidelity is reported loudly and never averaged in.
    good = [r for r in runs if r["fidelity"]["faithful"]]
    repeats = good
    # A seed run again (--repeat) is noise, measured apart; everything else reads each
    # seed's first run, so no seed counts twice.
    good = [r for r in good if r.get("repeat", 1) == 1]
    man, plan = folders[0].manifest, folders[0].plan
    summary = {"name": man["name"], "backend": man.get("backend", "emulation"),
               "order": sorted({o for r in runs for o in r["order"]}),
               "spec": man["spec"], "scale": {"dilation": plan.scale.dilation},
               "link_rate_bps": plan.link_rate_bps, "runs": runs,
               "comparison": compare(good), "seeds": compare_seeds(good),
               "primary": primary_metric(man["spec"]),
               "evidence": evidence(good, primary_metric(man["spec"])),
               "per_job": compare_jobs(good),
               "noise": noise_floor(repeats),
               "split": compare_split(good),
               # left out for a wrong result or broken fidelity; a faithful seed's
               # repeats are not excluded, they are the noise floor
               "excluded": [{"scheme": r["scheme"], "seed": r["seed"],
                             "repeat": r.get("repeat", 1)}
                            for r in runs if not r["fidelity"]["faithful"]]}
    if plots and any(r["jobs"] for r in runs):
        from emulator.analysis import plots as plotting     # matplotlib only when drawing
        summary["plots"] = plotting.plot_all(out_dir, runs, folders[0])
    write_summary(out_dir, summary)
    if exports:
        from emulator.analysis import export, page
        for r in runs:
            if r["backend"] in ("emulation", "sim"):   # the sim samples no ports: no rows
                export.write_run(r["rundir"], force=fresh)
            export.write_collectives(r)
            page.run_page(r)
        export.write_nccl_tests_json(out_dir, summary)
        page.set_page(out_dir, summary, console_text(summary))
    return summary


def console_text(summary: dict) -> str:
    """What :func:`print_tables` prints for ``summary``, as text (for the set page)."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_tables(summary, summary["scale"]["dilation"])
    return buf.getvalue().strip("\n")


def write_summary(out_dir: str, summary: dict) -> None:
    """``summary.json``, each run's folder given relative to ``out_dir`` (the run set moves
    with its folder, to another machine too); the summary in memory keeps full paths."""
    runs = [{**r, "rundir": os.path.relpath(r["rundir"], out_dir)} for r in summary["runs"]]
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump({**summary, "runs": runs}, f, indent=1)


def compare(runs: list[dict]) -> dict:
    """Per scheme: median CCT, JCT, max overlap over seeds and jobs."""
    by = defaultdict(lambda: {"cct_s": [], "jct_s": [], "max_step_overlap": []})
    for r in runs:
        for j in r["jobs"]:
            by[r["scheme"]]["cct_s"] += [c["cct_s"] for c in j["collectives"] if c["cct_s"]]
            if j["jct_s"] is not None:
                by[r["scheme"]]["jct_s"].append(j["jct_s"])
            by[r["scheme"]]["max_step_overlap"].append(j["max_step_overlap"])
    return {s: {k: (float(np.median(v)) if v else None) for k, v in d.items()}
            for s, d in by.items()}


def _quartiles(v: list[float]) -> dict:
    return {"median": float(np.median(v)), "p25": float(np.percentile(v, 25)),
            "p75": float(np.percentile(v, 75)), "n": len(v)}


def compare_seeds(runs: list[dict]) -> dict:
    """How the schemes compare across seeds: per scheme, the median, P25 and P75 over seeds
    of each seed's median CCT (and JCT: the median of its jobs'); per other scheme, the
    paired difference against the baseline of the same seed (its median CCT over the
    baseline's, minus 1), with the same quartiles and the seeds in which it was faster
    (the intervals and tests are :func:`evidence`'s). A single run flips sign from seed
    to seed; this is the number to read."""
    per: dict = defaultdict(dict)            # scheme -> seed -> (median CCT, JCT)
    for r in runs:
        ccts = [c["cct_s"] for j in r["jobs"] for c in j["collectives"] if c["cct_s"]]
        jcts = [j["jct_s"] for j in r["jobs"] if j["jct_s"] is not None]
        if ccts:
            per[r["scheme"]][r["seed"]] = (float(np.median(ccts)),
                                           float(np.median(jcts)) if jcts else None)
    out: dict = {"schemes": {}, "paired": {}}
    for s, seeds in per.items():
        jcts = [j for _, j in seeds.values() if j is not None]
        out["schemes"][s] = {"cct_s": _quartiles([c for c, _ in seeds.values()]),
                             "jct_s": _quartiles(jcts) if jcts else None}
    base = per.get("baseline", {})
    for s, seeds in per.items():
        common = sorted(set(seeds) & set(base))
        if s == "baseline" or not common:
            continue
        d = [seeds[k][0] / base[k][0] - 1 for k in common]
        out["paired"][s] = {**_quartiles(d), "faster": sum(x < 0 for x in d),
                            "seeds": common}
    return out


def print_seeds(summary: dict) -> None:
    """The comparison across seeds (when there is more than one)."""
    seeds = summary.get("seeds") or {}
    rows = seeds.get("schemes", {})
    if not rows or max(d["cct_s"]["n"] for d in rows.values()) < 2:
        return
    w = max([10] + [len(s) + 1 for s in rows])
    print(f"\nacross seeds (each seed's median CCT; median [P25, P75] over seeds):")
    for s, d in rows.items():
        q = d["cct_s"]
        print(f"  {s:<{w}}{q['median'] * 1e3:>9.1f} ms  [{q['p25'] * 1e3:.1f}, "
              f"{q['p75'] * 1e3:.1f}]  ({q['n']} seeds)")
    print_evidence(summary)


def compare_split(runs: list[dict]) -> dict:
    """Per scheme, medians over every collective of every emulated run with a split:
    routing x (fluid / bound), transport x (emulated / fluid), the ideal-priority gain on
    the same paths; and for Symphony, the share of that gain it realised (its median CCT
    gain over the baseline's, over the ideal-priority gain)."""
    by = defaultdict(lambda: defaultdict(list))
    for r in runs:
        done = {j["job"]: j["jct_s"] is not None for j in r["jobs"]}
        for j in (r.get("split") or {}).get("jobs", []):
            for c in j["collectives"]:
                for k in ("routing_x", "transport_x", "ideal_gain", "bound_s", "fluid_s",
                          "ideal_s", "emulated_s", "sim_s", "emulation_x"):
                    if c.get(k) is not None:
                        by[r["scheme"]][k].append(c[k])
            jct = {"jct_bound_s": sum(c["bound_s"] for c in j["collectives"]),
                   "jct_fluid_s": j["fluid_jct_s"], "jct_ideal_s": j["ideal_jct_s"],
                   "jct_emulated_s": j.get("emulated_jct_s") if done.get(j["job"]) else None,
                   "jct_sim_s": j.get("sim_jct_s")}
            lo_hi = j.get("fluid_jct_range_s")
            if lo_hi:
                jct["jct_fluid_lo_s"], jct["jct_fluid_hi_s"] = lo_hi
            for k, v in jct.items():
                if v is not None:
                    by[r["scheme"]][k].append(v)
    out = {s: {k: float(np.median(v)) for k, v in d.items()} for s, d in by.items()}
    b, y = out.get("baseline"), out.get("symphony")
    if b and y and "emulated_s" in b and "emulated_s" in y and y.get("ideal_gain"):
        gain = 1 - y["emulated_s"] / b["emulated_s"]
        y["gain_vs_baseline"] = gain
        y["realised_share_of_ideal"] = gain / y["ideal_gain"]
        y["realised_share_by_seed"] = share = _share_by_seed(runs)
        ci = median_interval(list(share.values())) if share else None
        if ci:
            y["realised_share_ci"] = [ci[0], ci[1]]
    return out


def _share_by_seed(runs: list[dict]) -> dict:
    """Per seed with both runs split: Symphony's gain on the baseline's median CCT over
    the ideal-priority gain on Symphony's own paths, (1 - S / B) / G; where G is 0 there is
    no gain to share and the seed is left out."""
    def med(r, key):
        v = [c[key] for j in (r.get("split") or {}).get("jobs", []) for c in j["collectives"]
             if c.get(key) is not None]
        return float(np.median(v)) if v else None
    got = defaultdict(dict)
    for r in runs:
        got[r.get("seed")][r["scheme"]] = r
    out = {}
    for seed, by in sorted(got.items(), key=lambda kv: str(kv[0])):
        if "baseline" not in by or "symphony" not in by:
            continue
        b, y = med(by["baseline"], "emulated_s"), med(by["symphony"], "emulated_s")
        g = med(by["symphony"], "ideal_gain")
        if b and y and g:
            out[str(seed)] = (1 - y / b) / g
    return out


def compare_jobs(runs: list[dict]) -> dict:
    """Per job id (as a string) and scheme: median JCT and last-step span over seeds, and
    each scheme's JCT normalized by the baseline's of the same seed (median over seeds;
    the paper's Fig 6 and 7c)."""
    by = defaultdict(lambda: defaultdict(dict))       # job -> scheme -> seed -> job record
    for r in runs:
        for j in r["jobs"]:
            by[j["job"]][r["scheme"]][r["seed"]] = j
    out = {}
    for job, schemes in sorted(by.items()):
        base = schemes.get("baseline", {})
        out[str(job)] = {}
        for scheme, seeds in schemes.items():
            jcts = [j["jct_s"] for j in seeds.values() if j["jct_s"] is not None]
            spans = [j["last_step_span_s"] for j in seeds.values()]
            norm = [j["jct_s"] / base[s]["jct_s"] for s, j in seeds.items()
                    if s in base and j["jct_s"] and base[s]["jct_s"]]
            out[str(job)][scheme] = {
                "ranks": next(iter(seeds.values()))["ranks"],
                "jct_s": float(np.median(jcts)) if jcts else None,
                "last_step_span_s": float(np.median(spans)) if spans else None,
                "normalized_jct": float(np.median(norm)) if norm else None}
    return out


def print_jobs(summary: dict) -> None:
    """With more than one job: JCT and last-step span per job and scheme."""
    per_job = summary.get("per_job", {})
    if len(per_job) < 2:
        return
    print(f"\n{'job':>4}{'ranks':>6}  {'scheme':<10}{'median JCT (ms)':>17}"
          f"{'vs baseline':>13}{'last-step span (ms)':>21}")
    for job, schemes in per_job.items():
        for scheme, d in schemes.items():
            jct = f"{d['jct_s'] * 1e3:.1f}" if d["jct_s"] else "-"
            norm = f"{d['normalized_jct']:.3f}" if d["normalized_jct"] else "-"
            print(f"{job:>4}{d['ranks']:>6}  {scheme:<10}{jct:>17}{norm:>13}"
                  f"{d['last_step_span_s'] * 1e3:>21.1f}")


def print_messages(summary: dict) -> None:
    """One line per message and run; with the split (emulated runs), the message alone at
    line rate (bound) and the flow-level model on its recorded path (max-min, and
    ideal-priority: the lagging step first) next to what the emulation measured."""
    split_cols = any((r.get("split") or {}).get("messages") for r in summary["runs"])
    w = max([10] + [len(r["scheme"]) + 1 for r in summary["runs"]])
    print(f"{'scheme':<{w}}{'seed':>5}  {'flow':<26}{'step':>5}{'start(ms)':>11}{'FCT(ms)':>10}"
          f"{'end(ms)':>10}" + (f"{'bound':>9}{'fluid':>9}{'ideal':>9}{'transport x':>13}"
                                if split_cols else ""))
    for r in summary["runs"]:
        model = {(m["job"], m["step"], m["src_ip"], m["dst_ip"]): m
                 for m in (r.get("split") or {}).get("messages", [])}
        for m in r.get("messages", []):
            line = (f"{r['scheme']:<{w}}{r['seed']:>5}  {m['src'] + '->' + m['dst']:<26}"
                    f"{m['step']:>5}{m['start_s'] * 1e3:>11.0f}{m['fct_s'] * 1e3:>10.0f}"
                    f"{m['end_s'] * 1e3:>10.0f}")
            s = model.get((m["job"], m["step"], m["src"], m["dst"]))
            if s is not None:
                def ms(k):
                    return f"{s[k] * 1e3:.0f}" if s.get(k) is not None else "-"
                tx = f"{s['transport_x']:.2f}" if s.get("transport_x") else "-"
                line += f"{ms('bound_s'):>9}{ms('fluid_s'):>9}{ms('ideal_s'):>9}{tx:>13}"
            print(line)
        if "overlap_s" in r:
            print(f"{'':<{w + 7}}overlap of the two flows: {r['overlap_s'] * 1e3:.0f} ms")
    if split_cols:
        print("(bound: the message alone at line rate; fluid / ideal: the flow-level model on "
              "the run's recorded path, max-min / the lagging step first; ms)")


def order_text(orders) -> str:
    """The dependency rule(s) the runs ran, in words (hosts.collectives.order)."""
    words = {ON_ARRIVAL: "on_arrival (the paper's: step s is sent once step s-1 has arrived)",
             IN_ORDER: "in_order (step s waits for steps 0..s-1, all)"}
    if not orders:
        return "-"
    if len(orders) > 1:
        return "MIXED: " + ", ".join(orders) + " (runs of both rules compared together)"
    return words.get(orders[0], orders[0])


def print_tables(summary: dict, dilation: float) -> None:
    """nccl-tests-style lines per collective, then a scheme comparison."""
    scale = Scale(dilation)
    if any(r.get("messages") for r in summary["runs"]):
        print_messages(summary)
        print_verdicts(summary)
        return
    print(f"# dependency rule: {order_text(summary.get('order', []))}")
    print("#  scheme   seed job pass       size  count   type redop    time(ms)  theo(ms) "
          " ratio   algbw(GB/s) busbw(GB/s) #wrong")
    print("#                                 (B)                    emulated            "
          "         real-scale equivalent")
    for r in summary["runs"]:
        for j in r["jobs"]:
            for c in j["collectives"]:
                if c["cct_s"] is None:
                    print(f"  {r['scheme']:>9} {r['seed']:>4} {j['job']:>3} {c['pass']:>4}  "
                          f"FAILED: did not complete (no CCT)")
                    continue
                alg = scale.real_rate_bps(c["algbw_bps"]) / 8 / 1e9
                bus = scale.real_rate_bps(c["busbw_bps"]) / 8 / 1e9
                print(f"  {r['scheme']:>9} {r['seed']:>4} {j['job']:>3} {c['pass']:>4} "
                      f"{c['nbytes']:>10} {c['nbytes'] // 4:>6}  float   sum "
                      f"{c['cct_s'] * 1e3:>10.1f} {c['theoretical_cct_s'] * 1e3:>9.1f} "
                      f"{c['cct_ratio']:>6.2f} {alg:>13.3f} {bus:>11.3f} "
                      f"{0 if c['verified'] else 1:>6}")
    print()
    comp = summary["comparison"]
    w = max([10] + [len(s) + 1 for s in comp])
    print(f"{'scheme':<{w}}{'median CCT (ms)':>17}{'median JCT (ms)':>17}"
          f"{'median max overlap':>20}")
    for s, d in comp.items():
        cct = f"{d['cct_s'] * 1e3:.1f}" if d["cct_s"] else "-"
        jct = f"{d['jct_s'] * 1e3:.1f}" if d["jct_s"] else "-"
        print(f"{s:<{w}}{cct:>17}{jct:>17}{d['max_step_overlap'] or 0:>20.1f}")
    base = comp.get("baseline", {}).get("cct_s")
    vs = [(s, d["cct_s"] / base - 1) for s, d in comp.items()
          if s != "baseline" and base and d["cct_s"]]
    if vs:
        print()
    for s, d in vs:
        print(f"{'Symphony' if s == 'symphony' else s} vs baseline, median CCT: {d:+.1%}")
    print_seeds(summary)
    print_noise(summary)
    print_jobs(summary)
    print_drops(summary)
    print_emulation_delay(summary)
    print_split(summary)
    print_verdicts(summary)


def print_split(summary: dict) -> None:
    """Where the time went (emulated runs whose agents recorded paths): per scheme, the
    medians of the lockstep bound, the flow-level model on the run's own paths (max-min;
    ideal-priority), the emulated time, and the split emulated = bound x routing x
    transport (docs/architecture.md §10; emulator/analysis/split.py)."""
    sp = summary.get("split") or {}
    if not sp:
        return
    print("\nwhere the time goes (medians per collective; model replayed on each run's own "
          "paths):")
    twin = any("sim_s" in d for d in sp.values())
    print(f"{'scheme':<10}{'bound(ms)':>11}{'fluid(ms)':>11}{'ideal(ms)':>11}"
          f"{'emulated(ms)':>14}{'routing x':>11}{'transport x':>13}{'ideal gain':>12}"
          + (f"{'twin(ms)':>11}{'emulation x':>13}" if twin else ""))
    for s, d in sp.items():
        def ms(k):
            return f"{d[k] * 1e3:.1f}" if k in d else "-"

        def x(k, fmt="{:.2f}"):
            return fmt.format(d[k]) if k in d else "-"
        print(f"{s:<10}{ms('bound_s'):>11}{ms('fluid_s'):>11}{ms('ideal_s'):>11}"
              f"{ms('emulated_s'):>14}{x('routing_x'):>11}{x('transport_x'):>13}"
              f"{x('ideal_gain', '{:.1%}'):>12}"
              + (f"{ms('sim_s'):>11}{x('emulation_x', '{:.3f}'):>13}" if twin else ""))
    for s, d in sp.items():
        if "jct_emulated_s" in d and "jct_fluid_s" in d:
            print(f"{s:<10} job (first collective's start to the last's end), medians: bound "
                  f"{d['jct_bound_s'] * 1e3:.1f} ms (back to back), model "
                  f"{d['jct_fluid_s'] * 1e3:.1f}, ideal-priority {d['jct_ideal_s'] * 1e3:.1f}, "
                  f"emulated {d['jct_emulated_s'] * 1e3:.1f}")
            if "jct_sim_s" in d:
                print(f"{'':<10} the same code simulated on the same paths (the run's twin, "
                      f"emulator.sim): {d['jct_sim_s'] * 1e3:.1f} ms; emulated / twin "
                      f"{d['jct_emulated_s'] / d['jct_sim_s']:.3f}: what emulating added")
            if "jct_fluid_lo_s" in d:
                print(f"{'':<10} the model's job time under {split.TIMING_REPLICAS + 1} draws "
                      f"of the hosts' timing on the same paths: {d['jct_fluid_lo_s'] * 1e3:.1f}"
                      f"-{d['jct_fluid_hi_s'] * 1e3:.1f} ms (medians of each run's min and max; "
                      "over many passes the model is chaotic, so one draw is not a bound)")
    y = sp.get("symphony", {})
    if "realised_share_of_ideal" in y:
        n = len(y.get("realised_share_by_seed") or {})
        ci = y.get("realised_share_ci")
        per_seed = (f"; per seed, median [95 % interval] {_median_of(y):.0%} "
                    f"[{ci[0]:.0%}, {ci[1]:.0%}], n = {n}" if ci else
                    f"; per seed, n = {n}: too few seeds for a 95 % interval")
        print(f"Symphony's median CCT, {-y['gain_vs_baseline']:+.1%} against the baseline's, "
              f"is {y['realised_share_of_ideal']:.0%} of what ideal-priority wins on the same "
              f"paths ({-y['ideal_gain']:+.1%}){per_seed}")


def _median_of(y: dict) -> float:
    return float(np.median(list(y["realised_share_by_seed"].values())))


def print_drops(summary: dict) -> None:
    """How many packets the switches dropped per run (drop-tail buffers and NFQUEUE; the
    paper's simulator is lossless, PFC, which this kernel's veths cannot give)."""
    if summary.get("backend", "emulation") != "emulation":
        return
    drops = [(r["scheme"], (r.get("transport") or {}).get("switch_drops"))
             for r in summary["runs"]]
    drops = [(s, d) for s, d in drops if d is not None]
    if not drops:
        return
    hit = [(s, d) for s, d in drops if d]
    print(f"\nswitch drops (drop-tail; the paper's fabric was lossless): {len(hit)} of "
          f"{len(drops)} runs dropped packets"
          + (f", at most {max(d for _, d in hit)} in one run" if hit else ""))


def print_emulation_delay(summary: dict) -> None:
    """What the emulation adds to each switch hop -- the time a packet waits in NFQUEUE for
    its agent -- in emulated time and in frames at the link rate (median over runs)."""
    holds = [(r["fidelity"]["agent_hold_mean_s"], r["fidelity"]["agent_hold_frames"])
             for r in summary["runs"] if r["fidelity"].get("agent_hold_mean_s") is not None]
    if not holds:
        return
    s, f = float(np.median([h for h, _ in holds])), float(np.median([x for _, x in holds]))
    print(f"\nemulation delay per switch hop (a packet's wait for its agent, mean over hops, "
          f"median over {len(holds)} runs): {s * 1e3:.3f} ms, {f:.1%} of a frame at the link "
          f"rate")
    lags = [(r["fidelity"]["host_rx_lag_mean_s"], r["fidelity"]["host_rx_lag_frames"])
            for r in summary["runs"] if r["fidelity"].get("host_rx_lag_mean_s") is not None]
    if lags:
        s, f = float(np.median([h for h, _ in lags])), float(np.median([x for _, x in lags]))
        print(f"emulation delay at the hosts (a datagram's wait between its arrival and its "
              f"process reading it, median over {len(lags)} runs): {s * 1e3:.3f} ms, "
              f"{f:.1%} of a frame")


def print_verdicts(summary: dict) -> None:
    """Wrong results (errors) and unfaithful runs, loudly, one line per run; they are left
    out of every median above."""
    if summary.get("excluded"):
        print(f"\n{len(summary['excluded'])} of {len(summary['runs'])} runs are left out of "
              f"the medians above (below: why)")
    again = sum(r.get("repeat", 1) > 1 for r in summary["runs"])
    if again:
        print(f"\n{again} runs are a seed's repeats (--repeat): read for the noise floor "
              "only; every comparison reads each seed's first run")
    for r in summary["runs"]:
        f = r["fidelity"]
        if f.get("perturbations") or f.get("perturbation_effects"):
            print(f"\nperturbations of {r['scheme']} seed {r['seed']}: "
                  + "; ".join(f.get("perturbations", []) + f.get("perturbation_effects", [])))
        if f["errors"]:
            print(f"\n!!! {r['scheme']} seed {r['seed']}: " + "; ".join(f["errors"]))
        if f["reasons"]:
            print(f"\nUNFAITHFUL {r['scheme']} seed {r['seed']}: " + "; ".join(f["reasons"]))
