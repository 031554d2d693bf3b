"""What the commands share: their output folder, their spec with --set, the size guard,
progress lines and the result tables (``emulator.cli``'s command modules use these)."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from emulator import home
from emulator.progress import Every

if TYPE_CHECKING:
    from emulator.analysis.summary import Summary


def out_dir(arg: str | None, name: str) -> str:
    """The output folder of command ``name``: ``arg``, or a new one under runs/out/. A path
    that is, or lies under, an existing file ends the command with a one-line error."""
    if arg:
        out = os.path.abspath(arg)
        up = out
        while not os.path.exists(up):
            up = os.path.dirname(up)
        if not os.path.isdir(up):
            print(f"symphony-emu: --out {arg}: {up} is a file, not a folder (name a "
                  "folder, new or one of an earlier run)", file=sys.stderr)
            raise SystemExit(2)
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return home.path("runs", "out", f"{stamp}-{name}")


def sets(args) -> list[str]:
    """The command's ``--set`` items, and ``--servers a,b`` as ``topology.servers``."""
    sets = list(getattr(args, "set", None) or [])
    if getattr(args, "servers", None):
        import json
        sets.append("topology.servers=" + json.dumps(
            [t.strip() for t in args.servers.split(",") if t.strip()]))
    return sets


def load_spec(args):
    from emulator.spec import load
    from emulator.spec.check import SpecError
    try:
        spec = load(args.spec, sets(args))
    except SpecError as e:
        print(f"symphony-emu {args.command}: {e}", file=sys.stderr)
        return None
    print_warnings(args.command, spec)
    return spec


def print_warnings(command: str, spec) -> None:
    from emulator.plan.timing import warnings
    for w in warnings(spec):
        print(f"symphony-emu {command}: warning: {spec.path}: {w}", file=sys.stderr)


def fits(command: str, spec, scheme: str, seed: int, force: bool, label: str = "") -> bool:
    """The emulation's size guard (``emulator.launch.backends.Emulation.check``): False,
    saying why, if this machine cannot emulate the spec; ``force`` (--force-size) skips it."""
    from emulator.launch.backends import BACKENDS, BackendError, Options
    try:
        BACKENDS["emulation"].check(spec, scheme, seed, Options(force_size=force), label)
    except BackendError as e:
        print(f"symphony-emu {command}: {e}", file=sys.stderr)
        return False
    return True


def seeds_text(seeds) -> str:
    seeds = list(seeds)
    if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return str(seeds)


def progress_printer(label: str, unit: str = "steps"):
    """``show(done, total, elapsed)``: on a terminal one line kept up to date, else a
    line every 10 s of ``elapsed`` and one when all are done."""
    every, state = Every(10.0), {"last": None}

    def show(done: int, total: int, elapsed: float) -> None:
        eta = f"{elapsed * (total / done - 1):5.0f}s" if done else "    ?"
        line = f"{label}: {unit} {done}/{total} ({done / max(1, total):4.0%}), " \
               f"elapsed {elapsed:5.0f}s, ETA {eta}"
        if sys.stdout.isatty():
            print(f"\r{line:<78}", end="", flush=True)
        elif every.due(elapsed) or done == total and state["last"] != done:
            print(line, flush=True)
        state["last"] = done
    return show


def print_results(summary: Summary, dilation: float, fmt: str) -> None:
    """The results as our tables (``table``) or as nccl-tests prints its own (``nccl-tests``:
    their columns and footer; the verdicts after them either way)."""
    from emulator.analysis import console, nccl
    if fmt == "nccl-tests":
        console.print_which(summary)
        print(nccl.nccl_tests_text(summary), end="")
        console.print_verdicts(summary)
    else:
        console.print_tables(summary, dilation)
