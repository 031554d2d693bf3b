"""`symphony-emu`: the command line (also `python -m emulator`).

    symphony-emu demo [--out DIR] [--leaves 4 --spines 4 --hosts-per-leaf 4] [--packets 200]
                      [--routing ecmp|static] [--k 0.01] [--seed 1]

``demo`` is the main job for now: a leaf-spine with the switch agents, baseline vs
Symphony on step-misaligned traffic, with a table and plots (see emulator/fabric_demo.py).
Experiment specs (`run`, `report`, `validate`) come with the collectives.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from topologies import fabric


def _out_dir(arg: str | None, name: str) -> str:
    if arg:
        return os.path.abspath(arg)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(fabric.REPO_ROOT, "runs", "out", f"{stamp}-{name}")


def _positive_int(s: str) -> int:
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _cmd_demo(args) -> int:
    from emulator.fabric_demo import DemoConfig, run
    try:
        fabric.check_shape(args.leaves, args.spines, args.hosts_per_leaf, args.routing)
    except ValueError as e:
        print(f"symphony-emu demo: {e}", file=sys.stderr)
        return 2
    if not 0 < args.load <= 1:
        print(f"symphony-emu demo: --load must be in (0, 1], got {args.load}", file=sys.stderr)
        return 2
    if args.leaves < 2:
        print("symphony-emu demo: needs at least 2 leaves (rings cross the fabric)", file=sys.stderr)
        return 2
    cfg = DemoConfig(leaves=args.leaves, spines=args.spines, hosts_per_leaf=args.hosts_per_leaf,
                     routing=args.routing, packets_per_flow=args.packets, k=args.k,
                     load=args.load,
                     seed=args.seed)
    out = _out_dir(args.out, "demo")
    print(f"symphony-emu demo: output in {out}")
    summary = run(cfg, out)
    print("\nplots:")
    for p in summary["plots"]:
        print(f"  {p}")
    print(f"summary: {os.path.join(out, 'summary.json')}")
    bad = any(r["nfqueue_drops"] or r["traffic"]["bad_icrc"] or r["leftovers"]
              for r in summary["runs"])
    return 1 if bad else 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="symphony-emu", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="leaf-spine + switch agents: baseline vs Symphony marks")
    d.add_argument("--out", help="output folder (default runs/out/<time>-demo)")
    d.add_argument("--leaves", type=_positive_int, default=4)
    d.add_argument("--spines", type=int, default=4)
    d.add_argument("--hosts-per-leaf", type=_positive_int, default=4)
    d.add_argument("--routing", choices=fabric.ROUTING_MODES, default="ecmp")
    d.add_argument("--packets", type=_positive_int, default=200, help="4 KB packets per flow")
    d.add_argument("--load", type=float, default=0.5,
                   help="each host's send rate as a fraction of its link rate (0, 1]")
    d.add_argument("--k", type=float, default=0.01, help="Symphony's gain k")
    d.add_argument("--seed", type=int, default=1)
    d.set_defaults(func=_cmd_demo)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if os.geteuid() != 0:
        print(f"symphony-emu {args.command}: needs root (network namespaces, iptables)",
              file=sys.stderr)
        return 2
    # SIGTERM tears down like Ctrl-C: the fabric's context manager removes what it made.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\nsymphony-emu: interrupted; everything this run created has been removed",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
