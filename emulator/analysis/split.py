"""Where an emulated run's time goes: the run replayed in the flow-level model on the paths
its packets really took.

Each switch agent records the egress port of every RoCE flow's first packet
(``flow_ports`` telemetry). Walking those ports from each flow's source host gives the
node path the kernel's ECMP chose; the model (``emulator.model``) then runs the same plan
with every flow pinned to its path. Per collective (and per job) that gives three times
on the same paths and one measured time:

    bound      perfect lockstep at link rate (emulator.plan.layout.theoretical_cct_s)
    fluid      max-min fair sharing: what ideal congestion control gives on these paths
    ideal      the job's lowest active step first on every link (ideal-priority): what a
               perfect step-aware switch could reach on these paths
    emulated   what the run measured

and the split  emulated = bound x routing x transport,  routing = fluid / bound (ECMP
collisions, imbalance, background), transport = emulated / fluid (the transport and
congestion control, and any emulation error). Under static routing with no congestion in
the model (fluid = bound), transport is emulation error alone: the verdict checks it.
"""

from __future__ import annotations

import os
import random
from dataclasses import replace

from emulator import plan as planning
from emulator.analysis import metrics
from emulator.analysis.summary import (BASELINE, SIMULATED, CollectiveSplit, JobSplit,
                                       MessageSplit, Split)
from emulator.model import simulate
from emulator.model.from_plan import model_inputs
from emulator.plan.layout import collective_bytes, theoretical_cct_s, wire_bytes
from emulator.rundir import RunFolder
from runtime import wire
from runtime.records import CollectiveDone, FlowPorts, FlowSent
from topologies import wiring

# "No congestion in the model": its time within this of the lockstep bound. Not exactly
# 1: each send starts a host's processing time after its cue (from_plan.HOST_POST_DELAY_S),
# which puts a static job with no shared link at 1.002-1.008x the bound over 4 passes
# (measured 2026-12-02); while this was 1.001 the emulation-error check never fired, and
# static runs at 1.3x the bound were called faithful. A collision costs tens of per cent.
STATIC_CLEAN_ROUTING_MAX = 1.02
# Over many back-to-back collectives the model's closed loop is chaotic: hosts' processing
# times (the post delay's random stream) alone move a job's time by tens of per cent on the
# same paths (docs/architecture.md, "The flow-level model"). So each replay also runs the
# baseline with this many other streams, and the job's line gives their range.
TIMING_REPLICAS = 4
IDEAL = "ideal-priority"    # the model's scheme: the job's lowest active step first


def port_neighbors(fab) -> dict[str, dict[str, str]]:
    """{switch: {interface: the node at its far end}} of a plan's fabric."""
    pods = fab.pods > 1
    out = {}
    for sw in wiring.switch_names(fab):
        out[sw] = {wiring.port_toward(sw, n, fab.per_leaf, fab.leaves if pods else 0,
                                      fab.spines if pods else 0): n
                   for n in wiring.neighbors(fab, sw)}
    return out


def recorded_ports(run: RunFolder, plan) -> dict[tuple, dict[str, str]]:
    """(job, channel, wire step, src IP, dst IP) -> {switch: the port the flow left it
    by}, from the agents' records."""
    hops: dict[tuple, dict[str, str]] = {}
    for sw in wiring.switch_names(plan.fabric):
        for rec in run.agent_records(sw, FlowPorts):
            for job, channel, step, src, dst, port in rec.flows:
                hops.setdefault((job, channel, step, src, dst), {})[sw] = port
    return hops


def recorded_paths(run: RunFolder, plan, hops: dict | None = None) -> dict[tuple, list[str]]:
    """(job, channel, wire step, src IP, dst IP) -> node path, from the agents' records
    (``hops``: their :func:`recorded_ports`, if read already)."""
    if hops is None:
        hops = recorded_ports(run, plan)
    far = port_neighbors(plan.fabric)
    ip_host = {c.ip: h for h, c in plan.hosts.items()}
    per = plan.fabric.per_leaf
    paths = {}
    for key, at in hops.items():
        src, dst = ip_host.get(key[3]), ip_host.get(key[4])
        if src is None or dst is None:
            continue
        node, path = f"leaf{int(src[1:]) // per}", [src]
        while node in at and len(path) < 16:
            path.append(node)
            node = far[node][at[node]]
        if node == dst:
            paths[key] = path + [dst]
    return paths


TWIN = "twin"                 # a run's simulated twin, in this folder of the run's


def _twin(run: RunFolder, paths: dict):
    """The run simulated on its own recorded paths (``emulator.sim``), made once and kept
    in ``<run>/twin/``: (its collective records, None), or (None, why there is none)."""
    from emulator.sim.run import SimError, by_sport, check, simulate_plan
    folder = RunFolder(run.file(TWIN))
    if not folder.done:
        man, plan = run.manifest, run.plan
        try:
            check(man.spec_path, plan)
            simulate_plan(plan, man.spec, man.spec_path, folder.path,
                          by_sport(plan, paths), host_delay_s=0.0)
        except SimError as e:
            return None, str(e).split(": ", 1)[-1]
    return metrics.collective_times(folder.host_records(CollectiveDone)), None


def replay(run: RunFolder, twin: bool = True) -> Split | None:
    """The split of one emulated run, or None when its agents recorded no paths. With
    ``twin``, also the run simulated on its own paths (``emulator.sim``): emulated /
    simulated is what the emulation itself added to the same code on the same paths."""
    plan, seed = run.plan, run.plan.seed
    # the model runs the baseline (max-min) and ideal-priority on the run's paths: what
    # only switches Symphony on (a late start) does not enter them
    inp = model_inputs(replace(plan, perturbations=tuple(
        e for e in plan.perturbations if not e.what.late_symphony)))
    if not plan.layouts and not inp.messages:
        return None
    paths = recorded_paths(run, plan)
    if not paths:
        return None
    def model(scheme, rng):
        return simulate(inp.fabric, inp.jobs, scheme=scheme, rng=rng, mtu_bytes=inp.mtu_bytes,
                        background=inp.background, link_events=inp.link_events, paths=paths,
                        per_step_sport=inp.per_step_sport, messages=inp.messages,
                        post_delay_s=inp.post_delay_s)
    fluid = {scheme: model(scheme, seed) for scheme in (BASELINE, IDEAL)}
    timing = [model(BASELINE, random.Random(f"{seed}/timing/{k}"))
              for k in range(TIMING_REPLICAS if plan.layouts and inp.post_delay_s else 0)]
    sim, why_not = _twin(run, paths) if twin else (None, "not asked")
    jobs = _job_splits(run, plan, fluid, timing, sim)
    messages = _message_splits(run, plan, inp.messages, fluid) if inp.messages else []
    # Emulation error: under static routing, a job the model sees no congestion in should
    # take the model's time. Judged on the job's span, not per collective: a collective's
    # CCT spans all the job's rings, and their skew (each ring a few % off the bound,
    # drifting apart over many back-to-back buckets) would count a small bucket's CCT many
    # times its own length.
    return Split(paths_recorded=len(paths), flows=len(run.host_records(FlowSent)),
                 jobs=jobs, not_modelled=list(inp.not_modelled),
                 twin=why_not or SIMULATED, messages=messages,
                 emulation_error_x=(static_error_x(jobs, messages)
                                    if plan.fabric.routing == "static" else None))


def static_error_x(jobs: list[JobSplit], messages: list[MessageSplit] = ()) -> float | None:
    """Emulated over fluid time, the worst over the jobs (their span) and messages the
    model sees no congestion in (``STATIC_CLEAN_ROUTING_MAX``), or None if it sees
    congestion in all of them: what the emulation itself added, under static routing."""
    clean = [j.emulated_jct_s / j.fluid_jct_s for j in jobs
             if j.emulated_jct_s and j.fluid_jct_s
             and all(c.routing_x is not None and c.routing_x <= STATIC_CLEAN_ROUTING_MAX
                     for c in j.collectives)]
    clean += [m.transport_x for m in messages
              if m.transport_x and m.routing_x is not None
              and m.routing_x <= STATIC_CLEAN_ROUTING_MAX]
    return max(clean) if clean else None


def _job_splits(run: RunFolder, plan, fluid: dict, timing=(), sim=None) -> list[JobSplit]:
    baseline, ideal = (metrics.collective_times(fluid[s].collectives)
                       for s in (BASELINE, IDEAL))
    others = [metrics.collective_times(r.collectives) for r in timing]
    emulated = metrics.collective_times(run.host_records(CollectiveDone))
    jobs = []
    for lay in plan.layouts:
        out = []
        for p in range(lay.passes):
            bound = theoretical_cct_s(lay, plan.link_rate_bps, plan.mtu_bytes,
                                      nbytes=collective_bytes(lay, p))
            e, f, i = (c.get((lay.job, p)) for c in (emulated, baseline, ideal))
            fluid_s, ideal_s, emulated_s = f and f.cct_s, i and i.cct_s, e and e.cct_s
            twin = {}
            if sim is not None:
                t = sim.get((lay.job, p))
                sim_s = t and t.cct_s
                twin = {"twinned": True, "sim_s": sim_s,
                        "emulation_x": emulated_s / sim_s if emulated_s and sim_s else None}
            out.append(CollectiveSplit(pass_index=p, bound_s=bound, fluid_s=fluid_s,
                                       ideal_s=ideal_s, emulated_s=emulated_s,
                                       **_factors(bound, fluid_s, ideal_s, emulated_s),
                                       **twin))
        # the job's span, the same way for all three: first collective's start to the
        # last one's end (a training job's compute before its first all-reduce is out)
        fluid_jct = _span(baseline, lay.job)
        spread = [fluid_jct] + [_span(c, lay.job) for c in others] if others else []
        spread = [x for x in spread if x is not None]
        jobs.append(JobSplit(
            job=lay.job, collectives=out, fluid_jct_s=fluid_jct,
            # the baseline's job time under other hosts' timing draws (min, max)
            fluid_jct_range_s=[min(spread), max(spread)] if spread else None,
            ideal_jct_s=_span(ideal, lay.job), emulated_jct_s=_span(emulated, lay.job),
            sim_jct_s=_span(sim, lay.job) if sim is not None else None))
    return jobs


def _message_splits(run: RunFolder, plan, messages, fluid: dict) -> list[MessageSplit]:
    """Per plain message: alone at line rate (bound), max-min and ideal-priority on its
    recorded path, and its emulated flow time, each from its own posting time."""
    ips = {h: c.ip for h, c in plan.hosts.items()}
    measured = {(f.job, f.channel, f.step, f.src, f.dst): f for f in run.flows()}

    def fct(res, m):
        for r in res.recv_flows:
            if (r.job, r.channel, r.step, r.src, r.dst) == _key(m, ips):
                return r.end_s - m.start_s
        return None
    out = []
    for m in messages:
        e = measured.get(_key(m, ips))
        bound = wire_bytes(m.nbytes, plan.mtu_bytes) * 8 / plan.link_rate_bps
        fluid_s, ideal_s = fct(fluid[BASELINE], m), fct(fluid[IDEAL], m)
        emulated_s = e and e.t_end - e.t_start
        out.append(MessageSplit(src=m.src, dst=m.dst, src_ip=ips[m.src], dst_ip=ips[m.dst],
                                job=m.job, step=m.step, bound_s=bound, fluid_s=fluid_s,
                                ideal_s=ideal_s, emulated_s=emulated_s,
                                **_factors(bound, fluid_s, ideal_s, emulated_s)))
    return out


def _key(m, ips) -> tuple:
    return (m.job, m.channel, m.step & wire.STEP_MASK, ips[m.src], ips[m.dst])


def _factors(b, f, i, e) -> dict:
    """routing x, transport x and the ideal gain of a bound ``b``, fluid ``f``, ideal
    ``i`` and emulated ``e`` time, by their fields' names."""
    return {"routing_x": f / b if f and b else None,
            "transport_x": e / f if e and f else None,
            "ideal_gain": 1 - i / f if i and f else None}


def _span(colls: dict, job: int) -> float | None:
    mine = [c for (j, _), c in colls.items() if j == job]
    return max(c.end_s for c in mine) - min(c.start_s for c in mine) if mine else None


def twin_paths(run_set: str, spec, scheme: str, seed: int) -> dict:
    """The node paths the emulated run of ``seed`` in the run set ``run_set`` recorded,
    keyed as :class:`~emulator.sim.network.Network` follows them: (src IP, dst IP, UDP
    source port). The run of the same scheme if there is one, else any scheme's of that
    seed (a seed's paths are the same under every scheme). The agents record data flows
    only: ACKs and CNPs take the simulator's own hash. SimError when there is none, it is
    of another spec or fabric, or its agents recorded no paths."""
    from emulator.rundir import run_folders
    from emulator.sim.run import SimError, by_sport
    if not os.path.isdir(run_set):
        raise SimError(f"--paths {run_set}: no such folder (give an emulated run set, the "
                       "--out of `symphony-emu run`)")
    runs = [r for r in run_folders(run_set) if r.manifest.seed == seed
            and r.manifest.backend == "emulation"]
    runs.sort(key=lambda r: r.manifest.scheme != scheme)
    if not runs:
        raise SimError(f"--paths {run_set}: no emulated run of seed {seed} in it")
    run = runs[0]
    plan = planning.compile(spec, scheme, seed)
    if run.plan.name != spec.name:
        raise SimError(f"--paths {run.path}: a run of spec {run.plan.name!r}; this is "
                       f"{spec.name!r}")
    theirs, ours = _shape(run.plan.fabric), _shape(plan.fabric)
    if theirs != ours:
        raise SimError(f"--paths {run.path}: a run on another fabric ({_said(theirs)}); "
                       f"this is {_said(ours)}")
    got = recorded_paths(run, plan)
    if not got:
        raise SimError(f"--paths {run.path}: its agents recorded no paths (a run from "
                       "before they did, or one that never started)")
    return by_sport(plan, got)


def _shape(fab) -> tuple:
    """What a recorded path depends on: the fabric's nodes and links, and their rate."""
    return (fab.kind, fab.leaves, fab.spines, fab.hosts_per_leaf, fab.pods, fab.cores,
            fab.rate_bps)


def _said(shape: tuple) -> str:
    kind, leaves, spines, per_leaf, pods, cores, rate_bps = shape
    pods_said = f"{pods} pods x " if pods > 1 else ""
    cores_said = f", {cores} cores" if pods > 1 else ""
    return (f"{kind} {pods_said}{leaves} leaves x {spines} spines{cores_said}, "
            f"{per_leaf} hosts a leaf, links {rate_bps / 1e6:g} Mb/s emulated")
