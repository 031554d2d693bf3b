"""What ``report`` prints: a run set's ``summary.json`` as the console's tables
(nccl-tests-style lines per collective, the comparison of schemes and seeds, the split of
the time, drops, the emulation's own delays, each run's verdict), and the same text for
the set's page (:func:`console_text`)."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from emulator.analysis.evidence import print_evidence, print_noise, scheme_name
from emulator.analysis.split import TIMING_REPLICAS
from emulator.analysis.summary import BASELINE, SYMPHONY, SplitMedians, Summary
from hosts.collectives.order import IN_ORDER, ON_ARRIVAL
from runtime.scale import Scale


def console_text(summary: Summary) -> str:
    """What :func:`print_tables` prints for ``summary``, as text (for the set page)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_tables(summary, summary.scale.dilation)
    return buf.getvalue().strip("\n")


def print_which(summary: Summary) -> None:
    """Which run a report of one run's folder read, and, for a run's simulated twin
    (``<run>/twin/``: the run's name, scheme and seed), whose twin it is."""
    for r in summary.runs:
        if r.twin_of:
            print(f"# {r.rundir}: the simulated twin (backend {r.backend}) of the run "
                  f"in {r.twin_of}, not that run")
        elif summary.run_folder:
            print(f"# the run in {r.rundir} ({r.backend}, {r.scheme} seed {r.seed})")


def print_seeds(summary: Summary) -> None:
    """The comparison across seeds (when there is more than one)."""
    rows = summary.seeds.schemes
    if not rows or max(d.cct_s.n for d in rows.values()) < 2:
        return
    w = max([10] + [len(s) + 1 for s in rows])
    print(f"\nacross seeds (each seed's median CCT; median [P25, P75] over seeds):")
    for s, d in rows.items():
        q = d.cct_s
        print(f"  {s:<{w}}{q.median * 1e3:>9.1f} ms  [{q.p25 * 1e3:.1f}, "
              f"{q.p75 * 1e3:.1f}]  ({q.n} seeds)")
    print_evidence(summary)


def print_jobs(summary: Summary) -> None:
    """With more than one job: JCT and last-step span per job and scheme."""
    if len(summary.per_job) < 2:
        return
    print(f"\n{'job':>4}{'ranks':>6}  {'scheme':<10}{'median JCT (ms)':>17}"
          f"{'vs baseline':>13}{'last-step span (ms)':>21}")
    for job, schemes in summary.per_job.items():
        for scheme, d in schemes.items():
            jct = f"{d.jct_s * 1e3:.1f}" if d.jct_s else "-"
            norm = f"{d.normalized_jct:.3f}" if d.normalized_jct else "-"
            print(f"{job:>4}{d.ranks:>6}  {scheme:<10}{jct:>17}{norm:>13}"
                  f"{d.last_step_span_s * 1e3:>21.1f}")


def print_messages(summary: Summary) -> None:
    """One line per message and run; with the split (emulated runs), the message alone at
    line rate (bound) and the flow-level model on its recorded path (max-min, and
    ideal-priority: the lagging step first) next to what the emulation measured."""
    split_cols = any(r.split and r.split.messages for r in summary.runs)
    w = max([10] + [len(r.scheme) + 1 for r in summary.runs])
    print(f"{'scheme':<{w}}{'seed':>5}  {'flow':<26}{'step':>5}{'start(ms)':>11}{'FCT(ms)':>10}"
          f"{'end(ms)':>10}" + (f"{'bound':>9}{'fluid':>9}{'ideal':>9}{'transport x':>13}"
                                if split_cols else ""))
    for r in summary.runs:
        model = {(m.job, m.step, m.src_ip, m.dst_ip): m
                 for m in (r.split.messages if r.split else [])}
        for m in r.messages:
            line = (f"{r.scheme:<{w}}{r.seed:>5}  {m.src + '->' + m.dst:<26}"
                    f"{m.step:>5}{m.start_s * 1e3:>11.0f}{m.fct_s * 1e3:>10.0f}"
                    f"{m.end_s * 1e3:>10.0f}")
            s = model.get((m.job, m.step, m.src, m.dst))
            if s is not None:
                def ms(x):
                    return f"{x * 1e3:.0f}" if x is not None else "-"
                tx = f"{s.transport_x:.2f}" if s.transport_x else "-"
                line += f"{ms(s.bound_s):>9}{ms(s.fluid_s):>9}{ms(s.ideal_s):>9}{tx:>13}"
            print(line)
        if r.overlap_s is not None:
            print(f"{'':<{w + 7}}overlap of the two flows: {r.overlap_s * 1e3:.0f} ms")
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


def print_tables(summary: Summary, dilation: float) -> None:
    """nccl-tests-style lines per collective, then a scheme comparison."""
    scale = Scale(dilation)
    print_which(summary)
    if any(r.messages for r in summary.runs):
        print_messages(summary)
        print_drops(summary)
        print_verdicts(summary)
        return
    print(f"# dependency rule: {order_text(summary.order)}")
    print("#  scheme   seed job pass       size  count   type redop    time(ms)  theo(ms) "
          " ratio   algbw(GB/s) busbw(GB/s) #wrong")
    print("#                                 (B)                    emulated            "
          "         real-scale equivalent")
    for r in summary.runs:
        for j in r.jobs:
            for c in j.collectives:
                if c.cct_s is None:
                    print(f"  {r.scheme:>9} {r.seed:>4} {j.job:>3} {c.pass_index:>4}  "
                          f"FAILED: did not complete (no CCT)")
                    continue
                alg = scale.real_rate_bps(c.algbw_bps) / 8 / 1e9
                bus = scale.real_rate_bps(c.busbw_bps) / 8 / 1e9
                print(f"  {r.scheme:>9} {r.seed:>4} {j.job:>3} {c.pass_index:>4} "
                      f"{c.nbytes:>10} {c.nbytes // 4:>6}  float   sum "
                      f"{c.cct_s * 1e3:>10.1f} {c.theoretical_cct_s * 1e3:>9.1f} "
                      f"{c.cct_ratio:>6.2f} {alg:>13.3f} {bus:>11.3f} "
                      f"{0 if c.verified else 1:>6}")
    print()
    comp = summary.comparison
    w = max([10] + [len(s) + 1 for s in comp])
    print(f"{'scheme':<{w}}{'median CCT (ms)':>17}{'median JCT (ms)':>17}"
          f"{'median max overlap':>20}")
    for s, d in comp.items():
        cct = f"{d.cct_s * 1e3:.1f}" if d.cct_s else "-"
        jct = f"{d.jct_s * 1e3:.1f}" if d.jct_s else "-"
        print(f"{s:<{w}}{cct:>17}{jct:>17}{d.max_step_overlap or 0:>20.1f}")
    base = comp[BASELINE].cct_s if BASELINE in comp else None
    vs = [(s, d.cct_s / base - 1) for s, d in comp.items()
          if s != BASELINE and base and d.cct_s]
    if vs:
        print()
    for s, d in vs:
        print(f"{scheme_name(s)} vs baseline, median CCT: {d:+.1%}")
    print_seeds(summary)
    print_noise(summary)
    print_jobs(summary)
    print_drops(summary)
    print_emulation_delay(summary)
    print_split(summary)
    print_verdicts(summary)


def print_split(summary: Summary) -> None:
    """Where the time went (emulated runs whose agents recorded paths): per scheme, the
    medians of the lockstep bound, the flow-level model on the run's own paths (max-min;
    ideal-priority), the emulated time, and the split emulated = bound x routing x
    transport (docs/architecture.md §10; emulator/analysis/split.py)."""
    sp = summary.split
    if not sp:
        return
    print("\nwhere the time goes (medians per collective; model replayed on each run's own "
          "paths):")
    twin = any(d.sim_s is not None for d in sp.values())
    print(f"{'scheme':<10}{'bound(ms)':>11}{'fluid(ms)':>11}{'ideal(ms)':>11}"
          f"{'emulated(ms)':>14}{'routing x':>11}{'transport x':>13}{'ideal gain':>12}"
          + (f"{'twin(ms)':>11}{'emulation x':>13}" if twin else ""))
    for s, d in sp.items():
        def ms(v):
            return f"{v * 1e3:.1f}" if v is not None else "-"

        def x(v, fmt="{:.2f}"):
            return fmt.format(v) if v is not None else "-"
        print(f"{s:<10}{ms(d.bound_s):>11}{ms(d.fluid_s):>11}{ms(d.ideal_s):>11}"
              f"{ms(d.emulated_s):>14}{x(d.routing_x):>11}{x(d.transport_x):>13}"
              f"{x(d.ideal_gain, '{:.1%}'):>12}"
              + (f"{ms(d.sim_s):>11}{x(d.emulation_x, '{:.3f}'):>13}" if twin else ""))
    for s, d in sp.items():
        if d.jct_emulated_s is not None and d.jct_fluid_s is not None:
            print(f"{s:<10} job (first collective's start to the last's end), medians: bound "
                  f"{d.jct_bound_s * 1e3:.1f} ms (back to back), model "
                  f"{d.jct_fluid_s * 1e3:.1f}, ideal-priority {d.jct_ideal_s * 1e3:.1f}, "
                  f"emulated {d.jct_emulated_s * 1e3:.1f}")
            if d.jct_sim_s is not None:
                print(f"{'':<10} the same code simulated on the same paths (the run's twin, "
                      f"emulator.sim): {d.jct_sim_s * 1e3:.1f} ms; emulated / twin "
                      f"{d.jct_emulated_s / d.jct_sim_s:.3f}: what emulating added")
            if d.jct_fluid_lo_s is not None:
                print(f"{'':<10} the model's job time under {TIMING_REPLICAS + 1} draws "
                      f"of the hosts' timing on the same paths: {d.jct_fluid_lo_s * 1e3:.1f}"
                      f"-{d.jct_fluid_hi_s * 1e3:.1f} ms (medians of each run's min and max; "
                      "over many passes the model is chaotic, so one draw is not a bound)")
    y = sp.get(SYMPHONY)
    if y is not None and y.realised_share_of_ideal is not None:
        n = len(y.realised_share_by_seed or {})
        ci = y.realised_share_ci
        per_seed = (f"; per seed, median [95 % interval] {_median_of(y):.0%} "
                    f"[{ci[0]:.0%}, {ci[1]:.0%}], n = {n}" if ci else
                    f"; per seed, n = {n}: too few seeds for a 95 % interval")
        print(f"Symphony's median CCT, {-y.gain_vs_baseline:+.1%} against the baseline's, "
              f"is {y.realised_share_of_ideal:.0%} of what ideal-priority wins on the same "
              f"paths ({-y.ideal_gain:+.1%}){per_seed}")


def _median_of(y: SplitMedians) -> float:
    return float(np.median(list(y.realised_share_by_seed.values())))


def print_drops(summary: Summary) -> None:
    """How many packets the switches dropped per run (drop-tail buffers and NFQUEUE; the
    paper's simulator is lossless: PFC, ``topology.flow_control``); on a lossless
    fabric, how often it paused and whether it dropped."""
    pfc = [r.lossless for r in summary.runs if r.lossless is not None]
    if pfc:
        paused = [x for x in pfc if x.pauses]
        dropped = [x.drops for x in pfc if x.drops]
        most = (f" ({max(x.pauses for x in paused)} PAUSE frames, "
                f"{max(x.ports_paused for x in paused)} ports and "
                f"{max(x.paused_s for x in paused) * 1e3:.1f} port-ms paused at most in "
                f"one run)") if paused else ""
        print(f"\nlossless fabric (PFC): {len(paused)} of {len(pfc)} runs paused{most}"
              + f"; {len(dropped)} dropped"
              + (f" (at most {max(dropped)} frames: not faithful, a buffer too small for "
                 f"its headroom)" if dropped else ""))
    if summary.backend != "emulation":
        return
    drops = [(r.scheme, r.transport.switch_drops) for r in summary.runs
             if r.transport.switch_drops is not None]
    if not drops:
        return
    hit = [(s, d) for s, d in drops if d]
    fabric = "lossless" if pfc else "drop-tail; the paper's fabric was lossless"
    print(f"\nswitch drops ({fabric}): {len(hit)} of "
          f"{len(drops)} runs dropped packets"
          + (f", at most {max(d for _, d in hit)} in one run" if hit else ""))


def print_emulation_delay(summary: Summary) -> None:
    """What the emulation adds to each switch hop -- the time a packet waits in NFQUEUE for
    its agent -- in emulated time and in frames at the link rate (median over runs)."""
    holds = [(r.fidelity.agent_hold_mean_s, r.fidelity.agent_hold_frames)
             for r in summary.runs if r.fidelity.agent_hold_mean_s is not None]
    if not holds:
        return
    s, f = float(np.median([h for h, _ in holds])), float(np.median([x for _, x in holds]))
    print(f"\nemulation delay per switch hop (a packet's wait for its agent, mean over hops, "
          f"median over {len(holds)} runs): {s * 1e3:.3f} ms, {f:.1%} of a frame at the link "
          f"rate")
    lags = [(r.fidelity.host_rx_lag_mean_s, r.fidelity.host_rx_lag_frames)
            for r in summary.runs if r.fidelity.host_rx_lag_mean_s is not None]
    if lags:
        s, f = float(np.median([h for h, _ in lags])), float(np.median([x for _, x in lags]))
        print(f"emulation delay at the hosts (a datagram's wait between its arrival and its "
              f"process reading it, median over {len(lags)} runs): {s * 1e3:.3f} ms, "
              f"{f:.1%} of a frame")


def print_verdicts(summary: Summary) -> None:
    """Wrong results (errors) and unfaithful runs, loudly, one line per run; they are left
    out of every median above."""
    if summary.excluded:
        print(f"\n{len(summary.excluded)} of {len(summary.runs) + len(summary.damaged)} runs "
              f"are left out of the medians above (below: why)")
    for d in summary.damaged:
        print(f"\nDAMAGED {d.scheme or '?'} seed {d.seed or '?'}, left out of every "
              f"median and comparison: {d.why}")
    again = sum(r.repeat > 1 for r in summary.runs)
    if again:
        print(f"\n{again} runs are a seed's repeats (--repeat): read for the noise floor "
              "only; every comparison reads each seed's first run")
    for r in summary.runs:
        f = r.fidelity
        if f.perturbations or f.perturbation_effects:
            print(f"\nperturbations of {r.scheme} seed {r.seed}: "
                  + "; ".join(f.perturbations + f.perturbation_effects))
        if f.errors:
            print(f"\n!!! {r.scheme} seed {r.seed}: " + "; ".join(f.errors))
        if f.reasons:
            print(f"\nUNFAITHFUL {r.scheme} seed {r.seed}: " + "; ".join(f.reasons))
