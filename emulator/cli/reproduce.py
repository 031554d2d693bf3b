"""``symphony-emu reproduce``: the paper's figures on every backend into data, and the
page from the data (``emulator.launch.reproduce``, ``emulator.analysis.figures``)."""

from __future__ import annotations

import os
import sys

from emulator import home

PAGE = home.path("docs", "results.md")


def write_page(data: str, to: str) -> str:
    """The results page from ``data`` (every figure of runs/ listed, run or not)."""
    from emulator.analysis import figures
    from emulator.launch import reproduce as rp
    return figures.write(data, rp.RUNS, to, rp.seeds_for, rp.figures())


def cmd_reproduce(args) -> int:
    from emulator.launch import reproduce as rp
    data = os.path.abspath(args.data or rp.DATA)
    if args.page:
        if not os.path.isdir(data):
            print(f"symphony-emu reproduce: --data {data}: no such folder (run the figures "
                  "first)", file=sys.stderr)
            return 2
        made = write_page(data, os.path.abspath(args.to or PAGE))
        print(f"page: {made}")
        return 0
    known = rp.figures()
    bad = [f for f in args.figures if f not in known]
    if bad:
        print(f"symphony-emu reproduce: {', '.join(bad)}: allowed: {', '.join(known)} "
              "(the specs in runs/ with [[paper]] tables)", file=sys.stderr)
        return 2
    backends = args.backend or list(rp.BACKENDS)
    if "emulation" in backends and os.geteuid() != 0:
        print("symphony-emu reproduce: --backend emulation needs root (network namespaces, "
              "iptables); --backend fluid and sim do not", file=sys.stderr)
        return 2
    figs = args.figures or known
    print("symphony-emu reproduce: " + "; ".join(
        f"{f}: " + ", ".join(f"{b} {rp.seeds_for(f, b, args.seeds)} seeds" for b in backends)
        for f in figs))
    from emulator.cli.common import out_dir, progress_printer
    out = out_dir(args.out, "reproduce")
    print(f"symphony-emu reproduce: -> {out} (run again with --out {out} to resume)")
    from emulator.sim.run import SimError
    try:
        for path in rp.reproduce(figs, backends, out, data, args.seeds, args.jobs,
                                 progress_printer):
            print(f"data: {path}")
    except (SimError, ValueError) as e:
        print(f"symphony-emu reproduce: {e}", file=sys.stderr)
        return 2
    return 0
