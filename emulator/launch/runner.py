"""Run an experiment spec: for each scheme and seed, compile the run plan, build the
fabric from it, start the host processes through the one launcher, fire the plan's
perturbations, show progress, enforce the timeout, record what only a live run can
measure, and tear down exactly what was created. Each run gets a folder
(``emulator.rundir``); ``emulator.analysis.report`` turns it into ``summary.json`` and
plots (also later, from the folder alone: ``symphony-emu report DIR``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from emulator import plan as planning
from emulator.launch import ledger
from emulator.launch.capture import Captures
from emulator.launch.fabric import LiveFabric, topology
from emulator.launch.launcher import HostProcesses
from emulator.measurements import AgentMeasurements, ClockCheck, Measurements, \
    PerturbationFired, underlay_use
from emulator.perturbations.engine import Engine
from emulator.rundir import RunFolder
from emulator.spec.schema import Spec
from runtime.records import decode

SETTLE_S = 10.0              # past the ranks' own timeout: they report their open flows


def _local_stat() -> str:
    with open("/proc/stat") as f:
        return f.readline()


class CpuMeter:
    """Busy share of all CPUs between start() and stop(), from the first line of
    /proc/stat: this machine's, or (``read_stat``) a server's, read over its ssh."""

    def __init__(self, read_stat=_local_stat):
        self._stat = read_stat
        self._t0 = None

    def _read(self):
        v = [int(x) for x in self._stat().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v), idle, (v[7] if len(v) > 7 else 0)

    def start(self):
        self._t0 = self._read()
        self.steal = 0.0

    def stop(self) -> float:
        """The busy share; ``steal`` is then the part of it a hypervisor gave to others
        (on a shared virtual machine the emulation's processes may wait for a CPU that
        the machine counts as theirs)."""
        if self._t0 is None:
            raise RuntimeError("the meter was never started (its server did not answer)")
        total, idle, steal = self._read()
        dt, di = total - self._t0[0], idle - self._t0[1]
        self.steal = (steal - self._t0[2]) / dt if dt else 0.0
        return 1 - di / dt if dt else 0.0


# what reading a server over ssh raises when it no longer answers (or answers nonsense)
SERVER_SILENT = (OSError, RuntimeError, subprocess.SubprocessError, ValueError)


def server_meters(fab) -> dict[str, CpuMeter]:
    """A CPU meter per server reached over ssh, reading its /proc/stat there (stand-in
    servers share this machine's CPUs, so theirs read alike; real servers' would not)."""
    access = getattr(fab.overlay, "access", None) if fab.overlay is not None else None
    if access is None:
        return {}
    return {access.name(i): CpuMeter(
                lambda i=i: access.run(i, ["head", "-n", "1", "/proc/stat"]).stdout.decode())
            for i in range(len(access.addresses))}


def _busy(meter: CpuMeter) -> float | None:
    """A server's busy share, None if it could not be read at the end (the verdict then
    has the machine's and the other servers')."""
    try:
        return meter.stop()
    except SERVER_SILENT:
        return None


def agent_measurements(fab) -> dict[str, AgentMeasurements]:
    """Each agent's totals, NFQUEUE counters and fidelity summary, as the report reads
    them; a dead agent by its exit code, a lost one by why."""
    out = {}
    for sw in fab.switches:
        if sw.agent_proc is None:
            continue
        if sw.agent_proc.poll() is not None:
            out[sw.name] = AgentMeasurements(dead=sw.agent_proc.returncode)
            continue
        try:
            s = fab.agent(sw.name, {"cmd": "stats"})
        except (OSError, RuntimeError) as e:     # its server no longer answers (NodeLost)
            out[sw.name] = AgentMeasurements(lost=str(e))
            continue
        out[sw.name] = AgentMeasurements(counters=s["counters"]["total"],
                                         nfqueue=s["nfqueue"],
                                         fidelity=s.get("fidelity", {}))
    return out


def casualties(fab, procs: HostProcesses | None) -> list[str]:
    """Processes of the run that died while it ran: any switch agent, and (with
    ``procs``) any host process that ended with a failure (a crash, a signal)."""
    dead: dict = {}                      # a dead agent process, and the switches it served
    for sw in fab.switches:
        if sw.agent_proc is not None and sw.agent_proc.poll() is not None:
            dead.setdefault(sw.agent_proc, []).append(sw)
    out = [f"the switch agent of {', '.join(s.name for s in sws)} died (exit {p.returncode}; "
           f"{sws[0].agent_log or sws[0].name + '.agent.log'})" for p, sws in dead.items()]
    out += [f"the process of host{'s' if len(hs) > 1 else ''} {', '.join(hs)} died "
            f"(exit {p.returncode}; {os.path.basename(procs.log_path(hs[0]))})"
            for hs, p in (procs.groups if procs else ())
            if p.poll() is not None and p.returncode != 0]
    return out


def run_one(spec: Spec, scheme: str, seed: int, rundir: str, progress=None,
            pcap: list[str] = (), repeat: int = 1) -> Measurements:
    """One (scheme, seed) run into ``rundir``; returns the live measurements. ``pcap``:
    capture points (hosts, switch ports: ``emulator.launch.capture``), each captured from
    before the job starts until it ended. ``repeat``: which run of this seed it is (the
    same plan again: only the machine's timing differs)."""
    plan = planning.compile(spec, scheme, seed)
    folder = RunFolder(rundir)
    # an earlier, unfinished try of this very run (killed, or interrupted): its partial
    # telemetry must not mix with this one's
    removed = ledger.reclaim(rundir, unfinished=not folder.done)
    if removed is not None:
        print(f"symphony-emu: {rundir}: an earlier try did not finish; removed "
              f"{', '.join(removed) or 'nothing left on the machine'} and its files",
              file=sys.stderr)
    folder.write_manifest(plan, spec.raw, spec.path, repeat=repeat)
    t_start = timed_out_in = setup_error = underlay_unread = underlay = None
    timed_out = False
    broken: list[str] = []                  # what died or failed: the run cannot be right
    cpu = CpuMeter()
    servers: dict[str, CpuMeter] = {}       # each ssh-reached server's own CPU
    underlay0 = None                        # the servers' underlay counters at t = 0
    with LiveFabric(topology(plan, rundir)) as fab:
        engine = Engine(fab, rundir, plan.perturbations)
        procs = HostProcesses(fab, plan.hosts, rundir, plan.host_processes,
                              plan.pin_cpus)
        caps = Captures(fab, list(pcap), rundir)
        started = False
        t_begin = time.monotonic()
        try:
            caps.start()
            procs.start()
            try:
                t0 = procs.go()
                started = True
            except RuntimeError as e:          # a host died or hung in set-up: say so
                timed_out, timed_out_in, setup_error = "not ready" in str(e), "set-up", str(e)
            if started:
                t_start = t0                   # t = 0 of every job's start_s
                servers = server_meters(fab)
                # a server lost from here on is the loop's to report (its nodes died):
                # what cannot be read of it now is only left unmeasured
                if fab.overlay is not None:
                    try:
                        underlay0 = fab.overlay.counters()
                    except SERVER_SILENT as e:
                        underlay_unread = str(e)
                cpu.start()                    # the run itself, not the set-up
                for m in servers.values():
                    try:
                        m.start()
                    except SERVER_SILENT:
                        pass                   # _busy then says None for it
                t_begin = time.monotonic()

                def tick():
                    found = casualties(fab, procs)
                    if not found:
                        try:
                            engine.due(time.monotonic() - t0)
                        except Exception as e:   # e.g. an agent that stopped answering
                            found = [f"a perturbation could not be applied: {e}"]
                    if found:                  # stop at once: the run cannot be right
                        broken.extend(found)
                        return False
                    if progress is not None:
                        progress(*procs.progress, time.monotonic() - t_begin)
                    return True
                if not procs.wait(t0 + plan.timeout_s + SETTLE_S, tick,
                                  step_s=lambda: _step(engine, t0)) and not broken:
                    timed_out, timed_out_in = True, "run"
        finally:
            host_exit = procs.stop()
            captures = [os.path.basename(p) for p in caps.stop()]
            effects = engine.effects()
            engine.close()
        cpu_busy = cpu.stop() if started else None
        cpu_steal = cpu.steal if started else None
        busy_servers = {name: _busy(m) for name, m in servers.items()} if servers else None
        wall_s = time.monotonic() - t_begin
        agents = agent_measurements(fab)
        if fab.overlay is not None and underlay_unread is None:
            ov = fab.overlay                 # what crossed between servers, while it ran
            try:
                underlay = underlay_use(underlay0, ov.counters(), wall_s,
                                        [ov.capacity_bps(i) for i in range(ov.n)])
            except SERVER_SILENT as e:
                underlay_unread = str(e)     # a server no longer answers
    if not broken:                           # an agent whose server no longer answered
        broken = [f"{name}: {a.lost}" for name, a in agents.items() if a.lost is not None]
    if not broken and any(a.dead is not None for a in agents.values()):
        broken = casualties(fab, None)       # an agent that died at the very end
    meas = Measurements(
        t_start=t_start, timed_out=timed_out, timed_out_in=timed_out_in,
        setup_error=setup_error, broken=broken, host_exit=host_exit,
        rank_summaries={h: decode(s) for h, s in procs.summaries.items()}, agents=agents,
        perturbations=[PerturbationFired.from_dict(e) for e in engine.log],
        perturbation_effects=effects, captures=captures, cpu_busy=cpu_busy,
        cpu_steal=cpu_steal, cpu_busy_servers=busy_servers,
        # each process's clock, probed before t = 0
        clocks=[ClockCheck.from_dict(c) for c in procs.clocks],
        underlay=underlay, underlay_unread=underlay_unread,
        teardown_leftovers=fab.leftovers, wall_s=wall_s)
    folder.write_measurements(meas)
    return meas


def _step(engine: Engine, t0: float) -> float:
    """How long the loop may sleep between polls: 0.25 s, shorter before a perturbation."""
    nxt = engine.next_time()
    if nxt is None:
        return 0.25
    return max(0.01, min(0.25, t0 + nxt - time.monotonic()))
