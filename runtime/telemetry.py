"""The one telemetry writer and reader: aggregated records (``runtime.records``' types),
one JSON object a line, never a line per packet. Host processes, switch agents, the
simulator and the model write them; ``emulator.rundir`` reads a run folder's files with
:func:`read_records`. Times are ``time.monotonic()`` seconds in emulation, the clock every
process of a run on one machine shares, so agent and host records line up without
conversion."""

from __future__ import annotations

import json

from runtime.records import Record, RecordError, decode, encode


class Telemetry:
    def __init__(self, path: str | None):
        self._f = open(path, "a", buffering=1 << 16) if path else None
        self.records = 0

    def write(self, record: Record) -> None:
        if self._f is not None:
            self._f.write(json.dumps(encode(record), separators=(",", ":")) + "\n")
            self.records += 1

    def flush(self) -> None:
        if self._f is not None:
            self._f.flush()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def read_records(path: str, kind: type | None = None) -> list:
    """All records of a telemetry file (optionally only those of one record type). A line
    that is not a record of this format raises :class:`RecordError` naming the file and
    line."""
    tag = f'"{kind.TYPE}"' if kind is not None else None   # a quick look; the type decides
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line and (tag is None or tag in line):
                try:
                    rec = decode(json.loads(line))
                except (RecordError, json.JSONDecodeError) as e:
                    raise RecordError(f"{path}, line {n}: {e}") from None
                if kind is None or type(rec) is kind:
                    out.append(rec)
    return out
