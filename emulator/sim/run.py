"""One simulated run: a spec's plan on :mod:`emulator.sim.network`, written as a run folder.

What the plan holds and the simulator does as the emulator does: the fabric and its
rates (``imbalance`` as a slower port from its time on), the jobs' rank programs and
stragglers, ``loss`` (the switch's pipeline drops that fraction, as the agent does) and
Symphony's late start, ``link_down`` (both directions of the cable; routes chosen anew
among the live hops, what waits in the port dropped), ``background`` (iperf3's UDP
stream: fixed-size datagrams at the rate, from the host's own interface) and plain
``[[messages]]`` (``hosts.host``'s programs). Each kind's class does it (``simulate``); a
kind that says it is not ``simulated`` is refused by name (:class:`SimError`).

Hosts' timing: each datagram reaches its host's NIC an exponential delay after it arrived,
of mean ``[sim] host_delay_ms`` (emulated ms; default 0.113, the median over hosts of the
emulator's own receive lag, measured in 80 runs of Fig 5 at D = 1000 on 2026-12-02:
P10-P90 0.075-0.288 ms, single datagrams up to ~4 ms), seeded by the run. A twin
(``emulator.analysis.split``) runs with none, so emulated / twin is all emulating adds.

What the simulator leaves out, and every run's measurements say so (``not_modelled``):
the hosts' processing time beyond that delay, the kernel's and the agents' delays (the
emulator's per-hop NFQUEUE hold, ~0.1 ms a hop at D = 1000), and HTB's token bucket (a
port here sends at exactly its rate from an empty queue).
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import tempfile
import time
from dataclasses import replace
from functools import partial

from emulator import plan as planning
from emulator.measurements import AgentMeasurements, Measurements, SimStats
from emulator.progress import Every
from emulator.routing import graph
from emulator.routing.ecmp import ecmp_choice, salt_of
from emulator.rundir import RunFolder
from emulator.sim.loop import Loop
from emulator.sim import pfc
from emulator.sim.network import Network, SimNic, Wakeups
from hosts.host import MessageHost
from hosts.rank import RankHost, forget_inputs
from runtime import wire
from runtime.telemetry import Telemetry
from switch_agent.pipeline import Port, SwitchPipeline
from switch_agent.queue_model import EgressQueue
from topologies import wiring

NOT_MODELLED = (
    "hosts' processing time beyond [sim] host_delay_ms (an exponential delay per datagram)",
    "the kernel's and the switch agents' per-packet delays (the emulator's NFQUEUE hold)",
    "HTB's token bucket: a port sends at exactly its rate, from an empty queue too",
)


HOST_STREAM = 0x9E3779B97F4A7C15   # keys the hosts' delays apart from the ECMP hash


class SimError(ValueError):
    """A run the simulator cannot do; the message names what and why."""



def check(spec_path: str | None, plan) -> None:
    """Refuse what the simulator does not do, before anything is written."""
    for e in plan.perturbations:
        if not e.what.simulated:
            raise SimError(f"{spec_path}: perturbation {type(e.what).__name__} is not "
                           "simulated; run it with --backend emulation")


def by_sport(plan, paths: dict) -> dict:
    """Recorded paths, {(job, channel, wire step, src IP, dst IP): node path} as
    ``emulator.analysis.split.recorded_paths`` reads them, keyed as the network follows
    them: (src IP, dst IP, the flow's UDP source port under the plan's transport)."""
    ips = {c.ip for c in plan.hosts.values()}
    tp = next(iter(plan.hosts.values())).transport
    return {(src, dst, wire.flow_sport(job, ch, step, src, tp.per_step_sport, tp.sport_seed)):
            tuple(path) for (job, ch, step, src, dst), path in paths.items() if src in ips}


PROGRESS_FIRST_S = 10.0    # a run says how far it is after this much wall time ...
PROGRESS_EVERY_S = 15.0    # ... and again this often
SLICE_WALL_S = 0.5         # the loop runs in slices of virtual time about this long


def run_sim(spec, scheme: str, seed: int, rundir: str, paths: dict | None = None,
            host_delay_s: float | None = None, repeat: int = 1,
            progress=None) -> Measurements:
    """Simulate one (scheme, seed) run of ``spec`` into ``rundir``; returns its
    measurements. ``paths``: {(src_ip, dst_ip, sport): node path} to follow instead of
    the ECMP hash (``emulator.analysis.split.twin_paths``: an emulated run's).
    ``host_delay_s``: the hosts' mean processing delay per datagram (None: the spec's
    ``sim.host_delay_ms``;
    a twin takes 0, so that emulated / twin is all that emulating adds). ``repeat``: the
    seed's k-th run, the same paths with other draws of the hosts' timing. ``progress``:
    called with a line (virtual time, data packets of the expected, their rate, the time
    left) once a run has taken ``PROGRESS_FIRST_S`` and every ``PROGRESS_EVERY_S`` after."""
    plan = planning.compile(spec, scheme, seed)
    check(spec.path, plan)
    return simulate_plan(plan, spec.raw, spec.path, rundir, paths,
                         spec.sim.host_delay_ms * 1e-3 if host_delay_s is None
                         else host_delay_s, repeat, progress)


UNFINISHED = ".sim-"     # a run being simulated: <parent>/.sim-<pid>-<random>


def unfinished_folders(parent: str, pid: int) -> list[str]:
    """The folders of runs process ``pid`` was simulating into ``parent`` (one that was
    killed left them: ``emulator.sim.pool`` removes them)."""
    prefix = f"{UNFINISHED}{pid}-"
    try:
        return [os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(prefix)]
    except FileNotFoundError:
        return []


def simulate_plan(plan, spec_raw: dict, spec_path: str | None, rundir: str,
                  paths: dict | None, host_delay_s: float, repeat: int = 1,
                  progress=None) -> Measurements:
    """Simulate a compiled plan (of the spec ``spec_raw``, read from ``spec_path``) into
    ``rundir`` (:func:`run_sim`; a twin gives its run's own plan). The run is written
    beside it and moved in whole when it ends, so an interrupted try never leaves records
    that the next try's would be appended to (telemetry files are opened to append)."""
    parent = os.path.dirname(os.path.abspath(rundir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"{UNFINISHED}{os.getpid()}-", dir=parent)
    try:
        meas = _simulate(plan, spec_raw, spec_path, tmp, paths, host_delay_s, repeat,
                         progress)
        if os.path.exists(rundir):
            shutil.rmtree(rundir)                     # an unfinished try of this run
        os.replace(tmp, rundir)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
        # a run's network is a web of cycles (NICs, hosts and the loop's callbacks), so
        # its buffers (a rank's are 64 MiB at 8 MB steps) wait for the cycle collector,
        # which their bytes do not wake; and the ranks' seeded inputs (or the checksums'
        # element codes) are kept while the ranks need each other's. The next run of a
        # sweep must not start on top of them
        forget_inputs()
        gc.collect()
    return meas


def _simulate(plan, spec_raw: dict, spec_path: str | None, rundir: str,
              paths: dict | None, host_delay_s: float, repeat: int,
              progress=None) -> Measurements:
    seed = plan.seed
    folder = RunFolder(rundir)
    folder.write_manifest(plan, spec_raw, spec_path, backend="sim", repeat=repeat,
                          sim={"paths_given": len(paths or {})})
    wall0, cpu0 = time.perf_counter(), time.process_time()
    loop = Loop()
    fab = graph.of_plan(plan.fabric)
    f = plan.fabric
    pods = f.pods > 1

    def port_name(sw, nbr):
        return wiring.port_toward(sw, nbr, f.per_leaf, f.leaves if pods else 0,
                                  f.spines if pods else 0)

    salt = salt_of(seed)
    path_salt = salt if f.path_seed is None else salt_of(f.path_seed)   # topology.paths
    net = Network(fab, loop, f.buffer_bytes, port_name,
                  lambda s, d, p: ecmp_choice(path_salt, f"{s}/{d}/{p}"),
                  classes=2 if plan.scheme.port_qdisc == "pq" else 1,
                  host_delay_s=host_delay_s,
                  rng=random.Random((salt ^ HOST_STREAM) + 7919 * (repeat - 1)))
    net.paths = dict(paths or {})
    lossless = f.flow_control == "pfc"
    mmus = pfc.make_lossless(net, {sw: cfg.pfc for sw, cfg in plan.agents.items()
                                   if cfg.pfc is not None}, f.control_priority) \
        if lossless else {}
    agents_tele = {}
    for sw, cfg in plan.agents.items():
        tele = agents_tele[sw] = Telemetry(folder.file(f"{sw}.jsonl"))
        # lossless: the switch's MMU drops, never a port's queue (its model can hold
        # the whole buffer, and a frame of drift)
        model_bytes = cfg.pfc.buffer_bytes + 2 * plan.mtu_bytes if cfg.pfc else f.buffer_bytes
        ports = {i: Port(net.ports[key].name, EgressQueue(net.ports[key].rate_bps,
                                                         model_bytes),
                         shared_buffer=plan.scheme.port_qdisc == "pq")
                 for key, i in net.port_index.items() if key[0] == sw}
        net.pipelines[sw] = SwitchPipeline.from_config(cfg, ports, on_window=tele.write)
    if lossless:
        pfc.watch_models(net)
    hosts: dict = {}
    wakeups = Wakeups(loop, hosts)
    for name, cfg in sorted(plan.hosts.items()):
        cfg = replace(cfg, telemetry_path=folder.file(f"{name}.jsonl"))
        kind = MessageHost if cfg.sends or cfg.receives else RankHost
        hosts[name] = kind(cfg, {"network": net}, lambda _msg: None,
                           clock=lambda: loop.now, nic_class=SimNic)
        net.attach(name, hosts[name].nic, partial(wakeups.wake, name))
    for e in plan.perturbations:
        loop.at(e.t_s, lambda t, e=e: e.what.simulate(net, e, t))
    for name, h in hosts.items():
        h.start(0.0)
        wakeups.wake(name, 0.0)
    # a host ends when its last send is acknowledged or its last message arrives: both
    # wake it, and wake() tells the loop to look
    if progress is None:
        finished = loop.run(plan.timeout_s, wakeups.all_ended)
    else:
        expected = expected_data_packets(plan)
        sent = lambda: sum(n.counters["data_tx"] for n in net.nics.values())  # noqa: E731
        finished = run_reporting(loop, plan.timeout_s, wakeups.all_ended,
                                 lambda t, wall: progress(progress_line(t, wall, sent(),
                                                                        expected)))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    pauses = pfc.records(net, loop.now) if lossless else {}
    for name, h in hosts.items():
        for rec in pauses.get(name, ()):
            h.tele.write(rec)
        h.tele.close()
    for sw, tele in agents_tele.items():
        tele.write(net.pipelines[sw].flow_ports_record(sw))
        for rec in pauses.get(sw, ()):
            tele.write(rec)
        tele.close()
    data = sum(n.counters["data_tx"] for n in net.nics.values())
    meas = Measurements(
        backend="sim", t_start=0.0, timed_out=not finished,
        rank_summaries={n: replace(h.summary(not finished, {}), records=h.tele.records)
                        for n, h in hosts.items()},
        agents={sw: AgentMeasurements(counters=p.totals()["total"])
                for sw, p in net.pipelines.items()},
        sim=SimStats(end_s=loop.now, events=loop.events, data_packets=data,
                     port_drops=net.port_drops(), no_route_drops=net.no_route,
                     drops_by_port={port.name: port.drops for port in net.ports.values()
                                    if port.drops},
                     background_rx=net.background_rx, wall_s=wall, cpu_s=cpu,
                     cpu_us_per_data_packet=cpu / data * 1e6 if data else None,
                     **(_pfc_stats(mmus, pauses) if lossless else {})),
        host_delay_s=host_delay_s, not_modelled=list(NOT_MODELLED), wall_s=wall)
    folder.write_measurements(meas)
    return meas


def run_reporting(loop: Loop, until_s: float, done, report) -> bool:
    """``loop.run(until_s, done)``, in slices of virtual time sized to take about
    ``SLICE_WALL_S`` each, calling ``report(virtual_s, wall_s)`` after ``PROGRESS_FIRST_S``
    and every ``PROGRESS_EVERY_S``. The events and their order are those of one run: a
    slice ends before the first event past it, which the next slice runs."""
    wall0 = time.perf_counter()
    say = Every(PROGRESS_EVERY_S, wall0, first_s=PROGRESS_FIRST_S)
    t, step = loop.now, until_s / 1e5
    while True:
        w = time.perf_counter()
        end = min(t + step, until_s)
        if loop.run(end, done):
            return True
        if end >= until_s or loop.idle:
            return done()
        took = time.perf_counter() - w
        step *= min(4.0, max(0.25, SLICE_WALL_S / took)) if took > 0 else 4.0
        t = end
        now = time.perf_counter()
        if say.due(now):
            report(t, now - wall0)


def expected_data_packets(plan) -> int:
    """The data packets a run sends if none is lost: every message of every rank's
    schedule and pass, and every plain message, in MTU-sized packets."""
    from hosts.collectives import collective
    mtu = plan.mtu_bytes
    n = 0
    for cfg in plan.hosts.values():
        n += sum(-(-m.bytes // mtu) for m in cfg.sends)
        for r in cfg.ranks:
            sizes = [c[0] for c in r.program] if r.program else [r.nbytes] * r.passes
            per = {}
            for nbytes in sizes:
                if nbytes not in per:
                    sch = collective(r.algorithm).schedule(r.group, r.rank, nbytes, 4)
                    per[nbytes] = sum(max(1, -(-st.send_range[1] // mtu)) for st in sch.steps)
                n += per[nbytes]
    return n


def progress_line(virtual_s: float, wall_s: float, sent: int, expected: int) -> str:
    """How far a long run is: its virtual time, data packets of those expected, their
    rate and the wall time left at that rate (retransmissions make it an estimate)."""
    rate = sent / wall_s if wall_s > 0 else 0.0
    head = f"virtual {virtual_s:.2f} s, {sent / 1e6:.2f} M"
    if expected and sent > expected:          # no estimate of what is left any more
        return (f"{head} data packets, {sent / expected - 1:.0%} more than the "
                f"{expected / 1e6:.2f} M expected (retransmissions), {rate / 1e3:.0f} k/s")
    left = (expected - sent) / rate if rate > 0 and expected > sent else 0.0
    share = f" ({sent / expected:.0%})" if expected else ""
    return (f"{head} of {expected / 1e6:.2f} M data packets{share}, {rate / 1e3:.0f} k/s, "
            f"~{_duration(left)} left")


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


def _pfc_stats(mmus: dict, pauses: dict) -> dict:
    """``SimStats``' lossless fields: the MMUs' drops and frames, each port's paused time."""
    return {"flow_control": "pfc", "pfc_drops": sum(sum(m.drops) for m in mmus.values()),
            "pauses": sum(sum(m.xoff_sent) for m in mmus.values()),
            "resumes": sum(sum(m.xon_sent) for m in mmus.values()),
            "paused_s": {r.port: r.paused_s for recs in pauses.values()
                         for r in recs if r.paused_s > 0}}
