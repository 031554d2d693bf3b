"""Agent telemetry: aggregated records written as JSON lines (DESIGN.md §5.5).

Never a line per packet. Record types (``"type"`` key):

* ``start``   agent configuration at start-up
* ``window``  one closed Symphony window of one job: t_s (window start), job, step_min,
              psn_rec, alpha, cnt_total, cnt_op, marks_red, marks_symphony
* ``port``    one queue sample of one egress port: t_s, port, q_bytes (model backlog at
              the sample), max_q_bytes (since the previous sample), and cumulative counters
* ``control`` a command received on the control socket and its result
* ``final``   all counters at exit, plus the kernel's NFQUEUE counters

Times are ``time.monotonic()`` seconds (the clock shared by every process of a run on
one machine), so agent and host records line up without conversion.
"""

from __future__ import annotations

import json


class Telemetry:
    def __init__(self, path: str | None):
        self._f = open(path, "a", buffering=1 << 16) if path else None
        self.records = 0

    def write(self, record: dict) -> None:
        if self._f is not None:
            self._f.write(json.dumps(record, separators=(",", ":")) + "\n")
            self.records += 1

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def read_records(path: str, kind: str | None = None) -> list[dict]:
    """All records of a telemetry file (optionally only one ``type``)."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rec = json.loads(line)
                if kind is None or rec.get("type") == kind:
                    out.append(rec)
    return out
