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
from emulator.perturbations.engine import Engine
from emulator.rundir import RunFolder
from emulator.schema import Spec

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


def underlay_use(before: list[dict] | None, after: list[dict], wall_s: float,
                 capacity_bps: list) -> list[dict]:
    """Each server's underlay over the run: the counters' differences (``before`` at
    t = 0; None: the totals ``after`` as they are), the mean rate each way, and the busier
    way's share of its capacity (``utilisation``; None where the capacity is unknown)."""
    out = []
    for i, a in enumerate(after):
        b = before[i] if before else {}
        d = {k: (v - b.get(k, 0) if k != "server" else v) for k, v in a.items()}
        tx = 8 * d["tx_bytes"] / wall_s if wall_s > 0 else 0.0
        rx = 8 * d["rx_bytes"] / wall_s if wall_s > 0 else 0.0
        cap = capacity_bps[i] if i < len(capacity_bps) else None
        d.update(tx_bps=tx, rx_bps=rx, capacity_bps=cap,
                 utilisation=max(tx, rx) / cap if cap else None)
        out.append(d)
    return out


def agent_measurements(fab) -> dict:
    """Each agent's totals, NFQUEUE counters and fidelity summary, as the report reads
    them; a dead agent as ``{"dead": exit code}``."""
    out = {}
    for sw in fab.switches:
        if sw.agent_proc is None:
            continue
        if sw.agent_proc.poll() is not None:
            out[sw.name] = {"dead": sw.agent_proc.returncode}
            continue
        try:
            s = fab.agent(sw.name, {"cmd": "stats"})
        except (OSError, RuntimeError) as e:     # its server no longer answers (NodeLost)
            out[sw.name] = {"lost": str(e)}
            continue
        out[sw.name] = {"counters": s["counters"]["total"], "nfqueue": s["nfqueue"],
                        "fidelity": s.get("fidelity", {})}
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
            pcap: list[str] = (), repeat: int = 1) -> dict:
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
    meas = {"timed_out": False, "host_exit": {}}
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
                meas.update(timed_out="not ready" in str(e), timed_out_in="set-up",
                            setup_error=str(e))
            if started:
                meas["t_start"] = t0           # t = 0 of every job's start_s
                servers = server_meters(fab)
                # a server lost from here on is the loop's to report (its nodes died):
                # what cannot be read of it now is only left unmeasured
                if fab.overlay is not None:
                    try:
                        underlay0 = fab.overlay.counters()
                    except SERVER_SILENT as e:
                        meas["underlay_unread"] = str(e)
                cpu.start()                    # the run itself, not the set-up
                for m in servers.values():
                    try:
                        m.start()
                    except SERVER_SILENT:
                        pass                   # _busy then says None for it
                t_begin = time.monotonic()

                def tick():
                    broken = casualties(fab, procs)
                    if not broken:
                        try:
                            engine.due(time.monotonic() - t0)
                        except Exception as e:   # e.g. an agent that stopped answering
                            broken = [f"a perturbation could not be applied: {e}"]
                    if broken:                 # stop at once: the run cannot be right
                        meas["broken"] = broken
                        return False
                    if progress is not None:
                        progress(*procs.progress, time.monotonic() - t_begin)
                    return True
                if not procs.wait(t0 + plan.timeout_s + SETTLE_S, tick,
                                  step_s=lambda: _step(engine, t0)) and "broken" not in meas:
                    meas.update(timed_out=True, timed_out_in="run")
        finally:
            meas["host_exit"] = procs.stop()
            meas["captures"] = [os.path.basename(p) for p in caps.stop()]
            meas["perturbation_effects"] = engine.effects()
            engine.close()
        meas["perturbations"] = engine.log
        meas["cpu_busy"] = cpu.stop() if started else None
        meas["cpu_steal"] = cpu.steal if started else None
        if servers:
            meas["cpu_busy_servers"] = {name: _busy(m) for name, m in servers.items()}
        meas["wall_s"] = time.monotonic() - t_begin
        meas["agents"] = agent_measurements(fab)
        meas["rank_summaries"] = procs.summaries
        meas["clocks"] = procs.clocks            # each process's clock, probed before t = 0
        if fab.overlay is not None and "underlay_unread" not in meas:
            ov = fab.overlay                 # what crossed between servers, while it ran
            try:
                meas["underlay"] = underlay_use(underlay0, ov.counters(), meas["wall_s"],
                                                [ov.capacity_bps(i) for i in range(ov.n)])
            except SERVER_SILENT as e:
                meas["underlay_unread"] = str(e)     # a server no longer answers
    if "broken" not in meas:                 # an agent whose server no longer answered
        lost = [f"{name}: {a['lost']}" for name, a in meas["agents"].items() if "lost" in a]
        if lost:
            meas["broken"] = lost
    if "broken" not in meas and any("dead" in a for a in meas["agents"].values()):
        meas["broken"] = casualties(fab, None)     # an agent that died at the very end
    meas["teardown_leftovers"] = fab.leftovers
    folder.write_measurements(meas)
    return meas


def _step(engine: Engine, t0: float) -> float:
    """How long the loop may sleep between polls: 0.25 s, shorter before a perturbation."""
    nxt = engine.next_time()
    if nxt is None:
        return 0.25
    return max(0.01, min(0.25, t0 + nxt - time.monotonic()))
