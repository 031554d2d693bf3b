"""How many hosts, at which link rate, this machine emulates faithfully (issue 7).

    sudo .venv/bin/python benchmarks/scale.py [--hosts-per-leaf 2,4,8,16] \
        [--dilation 8000,4000,2000,1000] [--out runs/out/scale] [--scheme symphony] \
        [--routing static]

For every (hosts, dilation) it runs Table 1's fabric (4 leaves x 4 spines, 10 Gb/s links at
real scale, so 10 Gb/s / D emulated) with one job over all hosts in rail rings of 4, one
pass of 256 KB chunks, and prints one line: the fidelity verdict with its reasons, the CPU
load, the collective's time over its bound, retransmission timeouts, and resident memory
(peak RSS) and CPU seconds per host process and per switch agent, from their own
``getrusage``.

Static (balanced) routing by default, so the collective's time has an exact bound: the
lockstep time x the leaves' oversubscription (hosts per leaf / spines, at least 1; with
16 hosts per leaf each uplink carries 4 rail flows). A faithful point lands near 1.0x;
one that the CPUs cannot keep up with drifts above it even before the monitor's other
checks fire. ``--routing ecmp`` measures Table 1 as the experiments run it, where ECMP
collisions and DCQCN add their own (real) slowdown. Points already measured in ``--out`` are kept (rerun to resume). A point
is reported unfaithful as soon as one run of it is; the table tells where this machine's
limit is. Goals (issue 7): 64 hosts faithful, <= 80 MB per host process.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator import report, runner  # noqa: E402
from emulator.spec import load  # noqa: E402
from topologies.fabric import REPO_ROOT  # noqa: E402

GOAL_HOSTS = 64
GOAL_RSS_MB = 80
TABLE1 = os.path.join(REPO_ROOT, "runs", "table1.toml")


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def _agent_finals(rundir: str) -> list[dict]:
    out = []
    for name in sorted(os.listdir(rundir)):
        if (name.startswith("leaf") or name.startswith("spine")) and name.endswith(".jsonl"):
            with open(os.path.join(rundir, name)) as f:
                out += [r for r in map(json.loads, filter(str.strip, f))
                        if r.get("type") == "final"]
    return out


def measure(hpl: int, dilation: int, scheme: str, routing: str, out: str) -> dict:
    rundir = os.path.join(out, f"hosts{4 * hpl}-D{dilation}")
    spec = load(TABLE1, [f"topology.hosts_per_leaf={hpl}", f"scale.dilation={dilation}",
                         f"topology.routing={routing}", "jobs.0.passes=1", "run.timeout_s=900"])
    if not os.path.exists(os.path.join(rundir, "measurements.json")):
        runner.run_one(spec, scheme, 1, rundir)
    res = report.analyze_run(rundir)
    with open(os.path.join(rundir, "measurements.json")) as f:
        meas = json.load(f)
    hosts = [s for s in meas.get("rank_summaries", {}).values()]
    agents = _agent_finals(rundir)
    mb = 1 / 2**20
    colls = [c for j in res["jobs"] for c in j["collectives"]]
    oversub = max(1.0, hpl / spec.topology.spines)
    return {"hosts": 4 * hpl, "dilation": dilation, "link_mbps": 10e3 / dilation,
            "faithful": res["fidelity"]["faithful"], "reasons": res["fidelity"]["reasons"],
            "verified": bool(colls) and all(c["verified"] for c in colls),
            "cpu_busy": meas.get("cpu_busy"),
            "cct_ratio": max((c["cct_ratio"] or 0) for c in colls) / oversub if colls else None,
            "oversubscription": oversub, "timeouts": res["transport"]["timeouts"],
            "wall_s": meas.get("wall_s"),
            "host_rss_mb_max": max((h.get("max_rss_bytes", 0) * mb for h in hosts), default=None),
            "host_cpu_s_mean": (sum(h.get("cpu_s", 0) for h in hosts) / len(hosts)) if hosts
            else None,
            "agent_rss_mb_max": max((a.get("max_rss_bytes", 0) * mb for a in agents), default=None),
            "agent_cpu_s_mean": (sum(a.get("cpu_s", 0) for a in agents) / len(agents)) if agents
            else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts-per-leaf", type=_ints, default=[2, 4, 8, 16],
                    help="4 leaves each: 8, 16, 32, 64 hosts")
    ap.add_argument("--dilation", type=_ints, default=[8000, 4000, 2000, 1000])
    ap.add_argument("--scheme", default="symphony", help="the agents do the most work here")
    ap.add_argument("--routing", default="static", choices=("static", "ecmp"))
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "runs", "out", "scale"))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("benchmarks/scale.py: needs root (network namespaces)", file=sys.stderr)
        return 2
    # Ctrl-C and kill tear the fabric down (a background job inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    print(f"{'hosts':>5} {'link':>9} {'faithful':>8} {'CPU':>5} {'CCT/bound':>9} {'RTOs':>4} "
          f"{'host RSS':>9} {'host CPU':>9} {'agent RSS':>9} {'agent CPU':>9}  reasons")
    for hpl in args.hosts_per_leaf:
        for d in args.dilation:
            r = measure(hpl, d, args.scheme, args.routing, args.out)
            rows.append(r)
            cpu = f"{r['cpu_busy']:.0%}" if r["cpu_busy"] is not None else "-"

            def fmt(v, unit):
                return f"{v:.0f} {unit}" if v is not None else "-"
            print(f"{r['hosts']:>5} {r['link_mbps']:>5.2f} Mb/s {'yes' if r['faithful'] else 'NO':>8}"
                  f" {cpu:>5} {r['cct_ratio'] or 0:>9.2f} {r['timeouts']:>4}"
                  f" {fmt(r['host_rss_mb_max'], 'MB'):>9}"
                  f" {fmt(r['host_cpu_s_mean'], 's'):>9} {fmt(r['agent_rss_mb_max'], 'MB'):>9}"
                  f" {fmt(r['agent_cpu_s_mean'], 's'):>9}  "
                  + ("" if r["verified"] else "WRONG/MISSING RESULT; ") + "; ".join(r["reasons"]),
                  flush=True)
    with open(os.path.join(args.out, "scale.json"), "w") as f:
        json.dump(rows, f, indent=1)
    ok = [r for r in rows if r["faithful"]]
    best = max(ok, key=lambda r: (r["hosts"], r["link_mbps"]), default=None)
    if best:
        print(f"\nlargest faithful point: {best['hosts']} hosts at {best['link_mbps']:.2f} Mb/s "
              f"(D = {best['dilation']}); goal: {GOAL_HOSTS} hosts faithful")
    rss = [r["host_rss_mb_max"] for r in rows if r["host_rss_mb_max"]]
    if rss:
        print(f"host process peak RSS: {max(rss):.0f} MB at most (goal <= {GOAL_RSS_MB} MB)")
    print(f"table: {os.path.join(args.out, 'scale.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
