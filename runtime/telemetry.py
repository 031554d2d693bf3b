"""The one telemetry writer and reader: aggregated records, one JSON object a line, never
a line per packet. Host processes and switch agents write them; ``emulator.rundir`` reads
a run folder's files with :func:`read_records`. Record types are listed in
docs/architecture.md §5.5 (agents) and §3 (hosts). Times are ``time.monotonic()``
seconds, the clock every process of a run on one machine shares, so agent and host
records line up without conversion."""

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
