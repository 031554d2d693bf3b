"""How fast the flow-level model runs (emulator.model): seeds per second on Table 1's
fabric, and one large run.

    .venv/bin/python benchmarks/model_speed.py [--seeds 100] [--scheme baseline]
        [--large 128,512] [--profile]

Small case: 16 hosts (4 leaves x 4 spines x 4 hosts, ECMP), one job over all of them in
rail rings (ring r = host r of every leaf: 4 rings of 4 ranks), 1 MB per rank, one pass,
10 Gb/s links; ``--seeds`` seeds, each a fresh ECMP draw. Prints runs/s and flows/s
(flows: every step flow of every rank, 96 a run). Goal: 500 seeds in under 60 s.

Large cases (``--large``): the same shape grown by leaves (N / 4 leaves, 4 spines), 8 MB
chunks, 10 Gb/s, 4 rings of N / 4 ranks; one run each. ``--profile``: cProfile's top
entries for the small case. Pure Python, one core, no network emulation.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator.model import JobInput, leaf_spine, simulate  # noqa: E402

RATE_BPS = 10e9
HOSTS_PER_LEAF = 4
SPINES = 4


def rail_job(hosts: int, nbytes: int) -> JobInput:
    """One job over h0..h(N-1) in rail rings, as ``emulator.plan.layout`` makes them."""
    rings = tuple(tuple(range(r, hosts, HOSTS_PER_LEAF)) for r in range(HOSTS_PER_LEAF))
    return JobInput(job=1, algorithm="ring_allreduce",
                    hosts=tuple(f"h{i}" for i in range(hosts)), rings=rings, nbytes=nbytes)


def small(seeds: int, scheme: str) -> dict:
    fab = leaf_spine(4, SPINES, HOSTS_PER_LEAF, rate_bps=RATE_BPS, routing="ecmp")
    job = rail_job(16, 1 << 20)
    flows = 0
    t0 = time.perf_counter()
    for seed in range(seeds):
        flows += len(simulate(fab, [job], scheme=scheme, rng=seed).send_flows)
    wall = time.perf_counter() - t0
    return {"seeds": seeds, "wall_s": wall, "runs_per_s": seeds / wall,
            "flows_per_s": flows / wall}


def large(hosts: int, scheme: str) -> dict:
    t0 = time.perf_counter()
    fab = leaf_spine(hosts // HOSTS_PER_LEAF, SPINES, HOSTS_PER_LEAF, rate_bps=RATE_BPS,
                     routing="ecmp")
    t_build = time.perf_counter() - t0
    chunk = 8 << 20
    job = rail_job(hosts, chunk * (hosts // HOSTS_PER_LEAF))
    t0 = time.perf_counter()
    res = simulate(fab, [job], scheme=scheme, rng=1)
    wall = time.perf_counter() - t0
    cct = max(c.end_s for c in res.collectives) - min(c.start_s for c in res.collectives)
    return {"hosts": hosts, "build_s": t_build, "wall_s": wall,
            "flows": len(res.send_flows), "flows_per_s": len(res.send_flows) / wall,
            "events": res.stats["events"], "mean_component": res.stats["solved_flows"]
            / max(1, res.stats["solves"]), "cct_s": cct}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--scheme", default="baseline")
    ap.add_argument("--large", default="", help="host counts, e.g. 128,512")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(small, args.seeds, args.scheme)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    r = small(args.seeds, args.scheme)
    print(f"16 hosts, {args.scheme}: {r['seeds']} seeds in {r['wall_s']:.2f} s: "
          f"{r['runs_per_s']:.0f} runs/s, {r['flows_per_s']:.0f} flows/s "
          f"(500 seeds: {500 / r['runs_per_s']:.1f} s)")
    for n in (int(x) for x in args.large.split(",") if x):
        r = large(n, args.scheme)
        print(f"{n} hosts, {args.scheme}: {r['flows']} flows, {r['events']} events in "
              f"{r['wall_s']:.2f} s ({r['flows_per_s']:.0f} flows/s; fabric built in "
              f"{r['build_s']:.3f} s; mean component {r['mean_component']:.1f} flows; "
              f"model CCT {r['cct_s']:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
