"""``symphony-emu report`` and ``clean``: what a run folder holds, analysed again, and what a
killed run left on the machine, removed."""

from __future__ import annotations

import os
import sys

from emulator import home
from emulator.cli.common import print_results


def cmd_report(args) -> int:
    from emulator.analysis import report
    if not os.path.isdir(args.dir):
        print(f"symphony-emu report: {args.dir}: not a folder", file=sys.stderr)
        return 2
    from emulator.rundir import DamagedRun, OlderRun
    from runtime.records import RecordError
    try:
        summary = report.summarize(args.dir, fresh=True, twin=not args.no_twin)
    except (FileNotFoundError, DamagedRun, OlderRun, RecordError) as e:
        print(f"symphony-emu report: {e}", file=sys.stderr)
        return 2
    print_results(summary, summary.scale.dilation, args.format)
    for p in summary.plots:
        print(f"plot: {p}")
    for d in summary.damaged:      # also on stderr, and the exit code says it
        print(f"symphony-emu report: {d.why} (left out of the report)", file=sys.stderr)
    return 1 if summary.damaged else 0


def cmd_clean(args) -> int:
    from emulator.launch import ledger
    root = args.dir or home.path("runs", "out")
    if not os.path.isdir(root):
        print(f"symphony-emu clean: {root}: not a folder", file=sys.stderr)
        return 2
    dirs = ledger.run_dirs_with_ledgers(root)
    status = 0
    for d in dirs:
        st = ledger.state(d)
        if st in ("closed", "cleaned") and not args.dir:
            continue
        try:
            removed = ledger.clean(d, force=args.force)
        except ledger.StillRunning as e:
            print(f"symphony-emu clean: {e}", file=sys.stderr)
            status = 1
            continue
        except ledger.ServersUnreached as e:
            removed = e.removed
            print(f"symphony-emu clean: {e}", file=sys.stderr)
            status = 1
        print(f"{d}: " + (f"removed {', '.join(removed)}" if removed
                          else "nothing of this run is left on the machine"))
    if not dirs:
        print(f"symphony-emu clean: no run folders with a ledger under {root}")
    return status


def cmd_upgrade(args) -> int:
    from emulator.upgrade import upgrade, upgrade_summaries
    failed_any = False
    for d in args.dirs:
        if not os.path.isdir(d):
            print(f"symphony-emu upgrade: {d}: not a folder", file=sys.stderr)
            return 2
        done, current, failed = upgrade(d)
        sdone, scurrent, sfailed = upgrade_summaries(d)
        print(f"{d}: {len(done)} run folders upgraded, {len(current)} already current, "
              f"{len(failed)} left as they were; {len(sdone)} summaries upgraded, "
              f"{len(scurrent)} already current, {len(sfailed)} left as they were")
        for path, why in failed + sfailed:
            print(f"  {path}: {why}", file=sys.stderr)
        failed_any |= bool(failed or sfailed)
    return 1 if failed_any else 0
