"""What every host process shares: a JSON-lines telemetry writer and the
``--config FILE`` entry point that runs one configuration and prints its summary."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Callable


class Telemetry:
    """Aggregated records, one JSON object a line (never a line per packet)."""

    def __init__(self, path: str | None):
        self._f = open(path, "a") if path else None

    def write(self, rec: dict) -> None:
        if self._f is not None:
            self._f.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def config_main(prog: str, doc: str, run: Callable[[dict], dict],
                argv: list[str] | None = None) -> int:
    """Parse ``--config FILE``, run it, print the summary as JSON; exit 0 iff it is ok."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.split("\n")[0])
    ap.add_argument("--config", required=True, help="the process's configuration (JSON)")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    summary = run(cfg)
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1
