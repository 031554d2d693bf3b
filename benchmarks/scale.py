"""How many hosts, at which link rate, this machine emulates faithfully (issue 7).

    sudo .venv/bin/python benchmarks/scale.py [--hosts 8,16,32,64] \
        [--dilation 8000,4000,2000,1000] [--out runs/out/scale] [--scheme symphony] \
        [--routing static] [--all]

Table 1's leaf shape (4 hosts per leaf, 4 spines, 10 Gb/s links at real scale, so
10 Gb/s / D emulated), grown by adding leaves: 8 hosts are 2 leaves, 64 hosts 16, so the
fabric stays non-blocking however large. One job over all hosts in rail rings (ring r =
host r of every leaf: 4 rings of hosts/4 ranks), one pass of 256 KB chunks. For every host
count it starts at D = 8000 and goes to faster links until the first unfaithful point,
or, if that one is unfaithful, to slower links until a faithful one (``--all``: every
point), printing one line per point: the fidelity
verdict with its reasons, the CPU load, the collective's time over the lockstep bound,
retransmission timeouts, the host and agent processes (``procs``: hosts'+agents'; each
serves several hosts or switches), their resident memory (peak RSS per process) and
CPU seconds per host and per switch (each process's ``getrusage``, shared evenly).

Static (balanced) routing by default: every link then carries at most one ring's flow, so
the lockstep time is an exact bound and a faithful point lands at ~1.0x; a point the
CPUs cannot keep up with drifts above it, usually after the monitor's pacing check has
fired. ``--routing ecmp`` measures the experiments' own setting, where ECMP collisions
and DCQCN add their own (real) slowdown. Points already measured in ``--out`` are kept
(rerun to resume). Goals (issue 7): 64 hosts faithful, <= 80 MB per host process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator.analysis import report  # noqa: E402
from emulator.launch import runner
from emulator.rundir import RunFolder  # noqa: E402
from emulator.spec import load  # noqa: E402
from runtime.records import AgentFinal  # noqa: E402
from topologies.wiring import REPO_ROOT  # noqa: E402

HOSTS_PER_LEAF = 4
GOAL_HOSTS = 64
GOAL_RSS_MB = 80             # per host: a process serving several holds each one's state
TABLE1 = os.path.join(REPO_ROOT, "runs", "table1.toml")


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def _agent_finals(run: RunFolder) -> list[AgentFinal]:
    return [r for name in sorted(os.listdir(run.path))
            if name.startswith(("leaf", "spine")) and name.endswith(".jsonl")
            for r in run.agent_records(name[:-len(".jsonl")], AgentFinal)]


def measure(hosts: int, dilation: int, scheme: str, routing: str, out: str) -> dict:
    rundir = os.path.join(out, f"hosts{hosts}-D{dilation}")
    spec = load(TABLE1, [f"topology.leaves={hosts // HOSTS_PER_LEAF}",
                         f"topology.hosts_per_leaf={HOSTS_PER_LEAF}", f"scale.dilation={dilation}",
                         f"topology.routing={routing}", "jobs.0.passes=1", "run.timeout_s=1200"])
    run = RunFolder(rundir)
    if not run.done:
        runner.run_one(spec, scheme, 1, rundir)
    res = report.analyze_run(rundir)
    meas = run.measurements
    ranks = list(meas.rank_summaries.values())
    agents = _agent_finals(run)
    mb = 1 / 2**20
    colls = [c for j in res.jobs for c in j.collectives]
    oversub = max(1.0, HOSTS_PER_LEAF / spec.topology.spines)     # 1: non-blocking
    return {"hosts": hosts, "dilation": dilation, "link_mbps": 10e3 / dilation,
            "faithful": res.fidelity.faithful, "reasons": res.fidelity.reasons,
            "verified": bool(colls) and all(c.verified for c in colls),
            "cpu_busy": meas.cpu_busy,
            "cct_ratio": max((c.cct_ratio or 0) for c in colls) / oversub if colls else None,
            "oversubscription": oversub, "timeouts": res.transport.timeouts,
            "wall_s": meas.wall_s,
            # a process serves several hosts (or switches): its memory is the process's, its
            # CPU per host an even share of the process's (hosts.group, switch_agent)
            "host_processes": len({(h.process or {}).get("pid", id(h)) for h in ranks}),
            "agent_processes": len({a.process.get("pid", id(a)) for a in agents}),
            "host_rss_mb_max": max(((h.max_rss_bytes or 0) * mb for h in ranks), default=None),
            "host_cpu_s_mean": (sum(h.cpu_s or 0 for h in ranks) / len(ranks)) if ranks
            else None,
            "agent_rss_mb_max": max((a.max_rss_bytes * mb for a in agents), default=None),
            "agent_cpu_s_mean": (sum(a.cpu_s for a in agents) / len(agents)) if agents
            else None}


def walk(dilations: list[int], start: int, everything: bool, point) -> list[int]:
    """The dilations to report for one host count, slowest link first: from ``start``
    towards faster links while the point stays faithful; if ``start`` is unfaithful,
    towards slower links until one is. ``point(d)`` measures (and caches) a point."""
    if everything:
        for d in dilations:
            point(d)
        return dilations
    i = dilations.index(start) if start in dilations else 0
    out = [dilations[i]]
    if point(dilations[i])["faithful"]:
        for d in dilations[i + 1:]:                 # faster links
            out.append(d)
            if not point(d)["faithful"]:
                break
        return out
    for d in reversed(dilations[:i]):               # slower links
        out.insert(0, d)
        if point(d)["faithful"]:
            break
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=_ints, default=[8, 16, 32, 64],
                    help=f"multiples of {HOSTS_PER_LEAF} (hosts per leaf)")
    ap.add_argument("--dilation", type=_ints, default=[16000, 8000, 4000, 2000, 1000])
    ap.add_argument("--start-dilation", type=int, default=8000,
                    help="first point of each host count; faster from there while faithful, "
                         "slower while not")
    ap.add_argument("--scheme", default="symphony", help="the agents do the most work here")
    ap.add_argument("--routing", default="static", choices=("static", "ecmp"))
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "runs", "out", "scale"))
    ap.add_argument("--all", action="store_true",
                    help="run every point, not only up to a host count's first unfaithful one")
    args = ap.parse_args(argv)
    bad = [h for h in args.hosts if h < 2 * HOSTS_PER_LEAF or h % HOSTS_PER_LEAF]
    if bad:
        ap.error(f"--hosts {bad}: each must be a multiple of {HOSTS_PER_LEAF} and at least "
                 f"{2 * HOSTS_PER_LEAF} (two leaves)")
    if os.geteuid() != 0:
        print("benchmarks/scale.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    # Ctrl-C and kill tear the fabric down (a background job inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print(f"{'hosts':>5} {'link':>9} {'faithful':>8} {'CPU':>5} {'CCT/bound':>9} {'RTOs':>4} "
          f"{'procs':>7} {'host RSS':>9} {'CPU/host':>9} {'agent RSS':>9} {'CPU/sw':>9}  reasons")
    for hosts in args.hosts:
        for d in walk(sorted(args.dilation, reverse=True), args.start_dilation, args.all,
                      lambda d: measure(hosts, d, args.scheme, args.routing, args.out)):
            r = measure(hosts, d, args.scheme, args.routing, args.out)     # measured: cached
            rows.append(r)
            cpu = f"{r['cpu_busy']:.0%}" if r["cpu_busy"] is not None else "-"

            def fmt(v, unit, spec=".0f"):
                return f"{v:{spec}} {unit}" if v is not None else "-"
            procs = f"{r.get('host_processes', '?')}+{r.get('agent_processes', '?')}"
            print(f"{r['hosts']:>5} {r['link_mbps']:>5.2f} Mb/s {'yes' if r['faithful'] else 'NO':>8}"
                  f" {cpu:>5} {r['cct_ratio'] or 0:>9.2f} {r['timeouts']:>4} {procs:>7}"
                  f" {fmt(r['host_rss_mb_max'], 'MB'):>9}"
                  f" {fmt(r['host_cpu_s_mean'], 's', '.2f'):>9} {fmt(r['agent_rss_mb_max'], 'MB'):>9}"
                  f" {fmt(r['agent_cpu_s_mean'], 's', '.2f'):>9}  "
                  + ("" if r["verified"] else "WRONG/MISSING RESULT; ") + "; ".join(r["reasons"]),
                  flush=True)

    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(rows, f, indent=1)
    ok = [r for r in rows if r["faithful"]]
    best = max(ok, key=lambda r: (r["hosts"], r["link_mbps"]), default=None)
    if best:
        print(f"\nlargest faithful point: {best['hosts']} hosts at {best['link_mbps']:.2f} Mb/s "
              f"(D = {best['dilation']}); goal: {GOAL_HOSTS} hosts faithful")
    rss = [(r["host_rss_mb_max"], r["hosts"] / max(1, r.get("host_processes") or r["hosts"]))
           for r in rows if r["host_rss_mb_max"]]
    if rss:
        per_proc, per_host = max(x for x, _ in rss), max(x / n for x, n in rss)
        print(f"host process peak RSS: {per_proc:.0f} MB at most, {per_host:.0f} MB per host it "
              f"serves (goal <= {GOAL_RSS_MB} MB per host)")
    print(f"table: {os.path.join(args.out, 'scale.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
