"""What every host process shares: the ``--config FILE`` entry point that reads a
``HostConfig``, waits at the launcher's ready barrier and prints its summary."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Callable

from hosts.config import HostConfig

PROFILE_ENV = "SYMPHONY_EMU_PROFILE_DIR"    # set: each host process writes <dir>/<host>.prof


def config_main(prog: str, doc: str, run: Callable[[HostConfig, Callable[[], float]], dict],
                argv: list[str] | None = None) -> int:
    """Parse ``--config FILE`` (a ``HostConfig``), run it, print the summary as JSON; exit
    0 iff it is ok. ``run(cfg, wait_start)`` calls ``wait_start()`` once its set-up is
    done: that prints ``{"ready": true}`` and returns t = 0 from stdin (the launcher's
    ready barrier, docs/architecture.md §9)."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    ap.add_argument("--config", required=True, help="the process's configuration (JSON)")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = HostConfig.from_dict(json.load(f))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    profile_dir = os.environ.get(PROFILE_ENV)
    if profile_dir:                    # a CPU profile of this process (benchmarks/host_cpu.py)
        import cProfile
        prof = cProfile.Profile()
        summary = prof.runcall(run, cfg, wait_start)
        prof.dump_stats(os.path.join(profile_dir, f"{cfg.name}.prof"))
    else:
        summary = run(cfg, wait_start)
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


def wait_start() -> float:
    print(json.dumps({"ready": True}), flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        raise SystemExit("no start time on stdin")
    return float(line)
