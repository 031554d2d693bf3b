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


def refuse_page(data: str, to: str, force: bool = False) -> str | None:
    """Why the page from ``data`` must not replace ``to`` (None: it may): a data folder
    with no figure rows, always; without ``force``, a page that would show fewer seeds of a
    figure on a backend than ``to`` shows now (its rows not in ``data``)."""
    from emulator.analysis import figures
    new = figures.seeds_in_data(data)
    if not new:
        return (f"--data {data}: no figure rows in it (no <figure>.csv with a row); run the "
                f"figures first (symphony-emu reproduce FIG); {to} left as it was")
    if force or not os.path.exists(to):
        return None
    with open(to) as f:
        old = figures.seeds_on_page(f.read())
    lost = [f"{fig} {b} ({n} seeds, {new.get((fig, b), 0)} in --data)"
            for (fig, b), n in old.items() if new.get((fig, b), 0) < n]
    if lost:
        return (f"--page: the page from --data {data} would show less than {to} does: "
                f"{', '.join(lost)}; {to} left as it was (--force writes it anyway)")
    return None


def cmd_reproduce(args) -> int:
    from emulator.launch import reproduce as rp
    data = os.path.abspath(args.data or rp.DATA)
    if args.page:
        if not os.path.isdir(data):
            print(f"symphony-emu reproduce: --data {data}: no such folder (run the figures "
                  "first)", file=sys.stderr)
            return 2
        to = os.path.abspath(args.to or PAGE)
        why = refuse_page(data, to, args.force)
        if why:
            print(f"symphony-emu reproduce: {why}", file=sys.stderr)
            return 2
        try:
            made = write_page(data, to)
        except ValueError as e:             # a reading or a row the page cannot carry
            print(f"symphony-emu reproduce: {e}", file=sys.stderr)
            return 2
        print(f"page: {made}")
        return 0
    known = rp.figures()
    bad = [f for f in args.figures if f not in known]
    if bad:
        print(f"symphony-emu reproduce: {', '.join(bad)}: allowed: {', '.join(known)} "
              "(the specs in runs/ with [[paper]] tables)", file=sys.stderr)
        return 2
    from emulator.launch.backends import BACKENDS, BackendError, Options
    backends = list(dict.fromkeys(args.backend or rp.BACKENDS))
    for name in backends:
        why = BACKENDS[name].refusal(Options(jobs=args.jobs))
        if why:
            print(f"symphony-emu reproduce: {why}", file=sys.stderr)
            return 2
    figs = args.figures or known
    print("symphony-emu reproduce: " + "; ".join(
        f"{f}: " + ", ".join(f"{b} {rp.seeds_for(f, b, args.seeds)} seeds" for b in backends)
        for f in figs))
    from emulator.cli.common import out_dir, progress_printer
    out = out_dir(args.out, "reproduce")
    why = rp.misplaced_out(out, figs)
    if why:
        print(f"symphony-emu reproduce: {why}", file=sys.stderr)
        return 2
    print(f"symphony-emu reproduce: -> {out} (run again with --out {out} to resume)")
    try:
        for path in rp.reproduce(figs, backends, out, data, args.seeds, args.jobs,
                                 progress_printer):
            print(f"data: {path}")
    except (BackendError, ValueError) as e:
        print(f"symphony-emu reproduce: {e}", file=sys.stderr)
        return 2
    return 0
