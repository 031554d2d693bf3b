"""How much CPU a data packet costs the host processes and the switch agents, and how
often each process wakes up (issue 15).

    sudo .venv/bin/python benchmarks/host_cpu.py [--spec runs/table1.toml] [--symphony] \
        [--seeds 1] [--set scale.dilation=1000 --set topology.routing=static] \
        [--out runs/out/host_cpu] [--json FILE]

Runs the spec (baseline; ``--symphony`` also the Symphony scheme) through the normal
runner (``emulator.launch.runner.run_one``), one run per (scheme, seed), and prints per
process kind:

* ``CPU/pkt``: CPU seconds (user + system, the process's own ``getrusage``: the rank
  summaries' ``process`` CPU, once per host process, and the agent final record's
  ``cpu_s``) over data packets. For ranks, the
  packets are the unique data packets their send flows carried (``send_flow`` records'
  ``packets``); for agents, the packets they handled (final ``counters``), i.e. per hop.
* ``run CPU/pkt``: the same, with the CPU measured from /proc between t = 0 and the
  process's end only (no imports, no set-up of expected results).
* ``wakeups/s``: voluntary + involuntary context switches per second of the run, per
  process, from ``/proc/<pid>/status``, sampled every 0.2 s for each process the run's
  ledger (``<run>/ledger.jsonl``) records, between t = 0 and the last sample before the
  process ended; ``invol``: the share of them that were preemptions.

and per run the collective time over the lockstep bound (median and worst of the
passes) and the fidelity verdict, and **all in**: what one data packet costs the whole
emulation from t = 0 (its rank processes and every agent hop), how much of it is the
kernel's (``/proc/<pid>/stat`` stime: the forwarding, shaping and NFQUEUE a packet's
system calls run, and the wake-ups), and the CPUs the job needs to keep up with its
lockstep bound at this dilation -- twice as many at half the D. Goal (issue 15): ranks <= 40 µs CPU per data packet.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator.analysis import report  # noqa: E402
from emulator.launch import ledger, runner  # noqa: E402
from emulator.rundir import RunFolder  # noqa: E402
from emulator.spec import load  # noqa: E402
from runtime import sched  # noqa: E402
from runtime.records import AgentFinal, FlowSent  # noqa: E402
from topologies.wiring import REPO_ROOT  # noqa: E402

GOAL_RANK_US_PER_PKT = 40.0
SAMPLE_S = 0.2
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def proc_sample(pid: int) -> tuple[int, int, float, float] | None:
    """(context switches so far, of them involuntary, CPU seconds so far, of them in the
    kernel) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    counts = {k: int(v) for k, v in (line.split(":") for line in status.splitlines()
                                     if line.endswith(tuple("0123456789"))
                                     and "ctxt_switches" in line)}
    invol = counts.get("nonvoluntary_ctxt_switches", 0)
    return (counts.get("voluntary_ctxt_switches", 0) + invol, invol,
            (int(stat[11]) + int(stat[12])) * TICK_S, int(stat[12]) * TICK_S)  # utime, stime


def process_kind(name: str) -> str | None:
    if "hosts.group" in name:
        return "ranks"
    if "switch_agent" in name:
        return "agents"
    return None


class Sampler(threading.Thread):
    """Samples every process the run's ledger records until stopped: per pid, a list of
    (monotonic time, context switches, involuntary ones, CPU seconds, kernel CPU seconds)."""

    def __init__(self, rundir: str):
        super().__init__(daemon=True)
        self.rundir = rundir
        self.procs: dict[int, tuple[str, str]] = {}       # pid -> (kind, name)
        self.series: dict[int, list[tuple[float, int, int, float, float]]] = {}
        self.cwd: dict[int, str] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(SAMPLE_S):
            for rec in ledger.read(self.rundir):
                kind = process_kind(rec.get("name", "")) if rec.get("kind") == "process" else None
                if kind and rec.get("pid") and rec["pid"] not in self.procs:
                    self.procs[rec["pid"]] = (kind, rec["name"])
            now = time.monotonic()
            for pid in self.procs:
                s = proc_sample(pid)
                if s is not None:
                    self.series.setdefault(pid, []).append((now, *s))
                    if pid not in self.cwd:
                        try:
                            self.cwd[pid] = os.readlink(f"/proc/{pid}/cwd")
                        except OSError:
                            pass

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def during(self, t_start: float) -> dict[str, list[tuple[float, int, int, float, float]]]:
        """Per kind, per process: (seconds, context switches, of them involuntary, CPU
        seconds, of them in the kernel) from the first sample at or after ``t_start`` to
        its last sample."""
        out: dict[str, list] = {"ranks": [], "agents": []}
        for pid, samples in self.series.items():
            run = [s for s in samples if s[0] >= t_start]
            if len(run) >= 2:
                (t0, c0, i0, u0, k0), (t1, c1, i1, u1, k1) = run[0], run[-1]
                out[self.procs[pid][0]].append((t1 - t0, c1 - c0, i1 - i0, u1 - u0, k1 - k0))
        return out


def measure(spec, scheme: str, seed: int, rundir: str) -> dict:
    if os.path.exists(rundir):
        shutil.rmtree(rundir)               # the benchmark's own folder: always a fresh run
    os.makedirs(rundir)
    sampler = Sampler(rundir)
    sampler.start()
    try:
        meas = runner.run_one(spec, scheme, seed, rundir)
    finally:
        sampler.stop()
    folder = RunFolder(rundir)
    res = report.analyze_run(rundir)
    ranks = list(meas.rank_summaries.values())
    rank_pkts = sum(r.packets for r in folder.host_records(FlowSent))
    rank_tx = sum(r.counters.get("data_tx", 0) for r in ranks)
    agents = [a for a in meas.agents.values() if a.dead is None and a.lost is None]
    finals = [r for sw in meas.agents for r in folder.agent_records(sw, AgentFinal)]
    during = sampler.during(meas.t_start if meas.t_start is not None else float("inf"))
    ratios = [c.cct_ratio for j in res.jobs for c in j.collectives
              if c.cct_ratio is not None]

    def kind_row(kind: str, cpu_s: float, pkts: int, nprocs: int) -> dict:
        d = during[kind]
        run_cpu = sum(x[3] for x in d)
        return {"processes": nprocs, "cpu_s": cpu_s, "packets": pkts,
                "run_kernel_cpu_s": sum(x[4] for x in d),
                "us_per_pkt": 1e6 * cpu_s / pkts if pkts else None,
                "run_cpu_s": run_cpu,
                "run_us_per_pkt": 1e6 * run_cpu / pkts if pkts and d else None,
                "wakeups_per_s": statistics.mean(x[1] / x[0] for x in d if x[0] > 0)
                if d else None,
                "involuntary_share": sum(x[2] for x in d) / sum(x[1] for x in d)
                if d and sum(x[1] for x in d) else None,
                "sampled": len(d)}

    cwds = sorted(set(sampler.cwd[p] for p in sampler.cwd if sampler.procs[p][0] == "ranks"))
    ranks_row = {**kind_row("ranks", host_process_cpu_s(ranks), rank_pkts,
                            len({(r.process or {}).get("pid") for r in ranks})),
                 "hosts": len(ranks), "data_tx": rank_tx,
                 "kernel_share": host_process_cpu_s(ranks, "sys_s")
                 / max(1e-9, host_process_cpu_s(ranks))}
    agents_row = {**kind_row("agents", host_process_cpu_s(finals),
                             sum(a.counters["pkts"] for a in agents),
                             len({f.process.get("pid") for f in finals})),
                  "switches": len(agents),
                  "kernel_share": host_process_cpu_s(finals, "sys_s")
                  / max(1e-9, host_process_cpu_s(finals))}
    # the jobs run side by side, each its collectives back to back
    bound_s = max((sum(c.theoretical_cct_s for c in j.collectives) for j in res.jobs),
                  default=0.0)
    return {"scheme": scheme, "seed": seed, "rundir": rundir,
            "dilation": spec.scale.dilation, "routing": spec.topology.routing,
            "ranks": ranks_row, "agents": agents_row,
            "all_in": all_in(ranks_row, agents_row, rank_pkts, bound_s, len(sched.cpus())),
            "cct_ratio_median": statistics.median(ratios) if ratios else None,
            "cct_ratio_max": max(ratios) if ratios else None,
            "faithful": res.fidelity.faithful, "reasons": res.fidelity.reasons,
            "cpu_busy": meas.cpu_busy, "cpu_steal": meas.cpu_steal,
            "wall_s": meas.wall_s,
            "rank_cwd": cwds}


def all_in(ranks: dict, agents: dict, data_packets: int, bound_s: float, cpus: int) -> dict:
    """What one data packet costs the whole emulation from t = 0 -- its rank processes
    (sending, receiving, the ACKs) and every agent hop -- split into the kernel's part
    (forwarding, shaping, NFQUEUE, wake-ups) and the processes' own, and the CPUs the job
    needs to run at its lockstep bound at this dilation (the run's CPU over the bound's
    wall time; the CPU a job needs grows as D shrinks, in proportion)."""
    if not data_packets or ranks.get("run_us_per_pkt") is None \
            or agents.get("run_us_per_pkt") is None:
        return {}
    cpu = ranks["run_cpu_s"] + agents["run_cpu_s"]
    kernel = ranks["run_kernel_cpu_s"] + agents["run_kernel_cpu_s"]
    return {"us_per_pkt": 1e6 * cpu / data_packets,
            "kernel_us_per_pkt": 1e6 * kernel / data_packets,
            "cpus_at_bound": cpu / bound_s if bound_s else None,
            "kernel_cpus_at_bound": kernel / bound_s if bound_s else None,
            "cpus": cpus}


def host_process_cpu_s(ends: list, key: str = "cpu_s") -> float:
    """CPU of the host (or agent) processes (``key="sys_s"``: of it, in the kernel): a
    process serving several hosts reports its CPU so far in each host's summary
    (``process``; an agent's in each switch's final record, ``AgentFinal``), so its
    total is the largest of them."""
    by_pid: dict = {}
    for r in ends:
        p = r.process
        if p is None:               # a summary without its process's: its own CPU, no sys_s
            by_pid[id(r)] = (r.cpu_s or 0.0) if key == "cpu_s" else 0.0
        else:
            by_pid[p["pid"]] = max(by_pid.get(p["pid"], 0.0), p.get(key, 0.0))
    return sum(by_pid.values())


def fmt(v, spec: str, unit: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{unit}"


def print_row(r: dict) -> None:
    print(f"{r['scheme']} seed {r['seed']}, D = {r['dilation']}, {r['routing']}: "
          f"CCT/bound {fmt(r['cct_ratio_median'], '.3f')} (worst {fmt(r['cct_ratio_max'], '.3f')}), "
          f"{'faithful' if r['faithful'] else 'UNFAITHFUL'}, CPU busy "
          f"{fmt(r['cpu_busy'], '.0%')} (hypervisor's steal {fmt(r.get('cpu_steal'), '.0%')}), "
          f"{fmt(r['wall_s'], '.1f', ' s')} wall"
          + (f"; reasons: {'; '.join(r['reasons'])}" if r["reasons"] else ""))
    print(f"  {'kind':<7} {'procs':>5} {'CPU s':>7} {'packets':>8} {'CPU/pkt':>10} "
          f"{'run CPU/pkt':>11} {'wakeups/s':>10} {'invol':>6}")
    for kind in ("ranks", "agents"):
        k = r[kind]
        print(f"  {kind:<7} {k['processes']:>5} {k['cpu_s']:>7.2f} {k['packets']:>8} "
              f"{fmt(k['us_per_pkt'], '.1f', ' µs'):>10} {fmt(k['run_us_per_pkt'], '.1f', ' µs'):>11}"
              f" {fmt(k['wakeups_per_s'], '.0f'):>10} {fmt(k['involuntary_share'], '.0%'):>6}")
    print(f"  (ranks: {r['ranks'].get('hosts', '?')} hosts in {r['ranks']['processes']} "
          f"processes, {fmt(r['ranks'].get('kernel_share'), '.0%')} of their CPU in the kernel "
          f"(sending a packet runs the fabric's forwarding up to the next queue), agents "
          f"{fmt(r['agents'].get('kernel_share'), '.0%')} (a verdict forwards it to the next); "
          f"{r['ranks']['data_tx']} data packets sent with retransmissions; "
          f"agents: {r['agents'].get('switches', '?')} switches, packets per hop; "
          f"code run from {', '.join(r['rank_cwd']) or '?'})",
          flush=True)
    a = r.get("all_in") or {}
    if a:
        print(f"  all in, per data packet from t = 0: {a['us_per_pkt']:.1f} µs of CPU "
              f"({a['kernel_us_per_pkt']:.1f} µs in the kernel: forwarding, shaping, NFQUEUE, "
              f"wake-ups); to run at its lockstep bound at D = {r['dilation']:g} the job needs "
              f"{fmt(a['cpus_at_bound'], '.2f')} CPUs ({fmt(a['kernel_cpus_at_bound'], '.2f')} "
              f"of them the kernel's) of the {a['cpus']} here, at D = {r['dilation'] / 2:g} "
              f"twice that", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default=os.path.join(REPO_ROOT, "runs", "table1.toml"))
    ap.add_argument("--symphony", action="store_true", help="also run the Symphony scheme")
    ap.add_argument("--seeds", default="1", help="comma-separated, e.g. 1,2,3")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a spec override, e.g. scale.dilation=1000 (repeatable)")
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "runs", "out", "host_cpu"))
    ap.add_argument("--json", help="also append each run's figures to this file (JSON lines)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("benchmarks/host_cpu.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    spec = load(args.spec, args.set)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    schemes = ["baseline"] + (["symphony"] if args.symphony else [])
    rows = []
    for scheme in schemes:
        for seed in seeds:
            r = measure(spec, scheme, seed, os.path.join(args.out, f"{scheme}-s{seed}"))
            rows.append(r)
            print_row(r)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    worst = max((r["ranks"]["us_per_pkt"] or 0) for r in rows)
    print(f"rank CPU per data packet: {worst:.1f} µs at most (goal <= {GOAL_RANK_US_PER_PKT:g} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
