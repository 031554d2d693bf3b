"""The run's t = 0 across processes and servers (docs/architecture.md §9).

Every process times its records with its own ``time.monotonic()``, which means nothing on
another server. So the coordinator gives t = 0 in ``CLOCK_REALTIME``, the clock servers
share (through NTP or PTP), on one line of each process's stdin, with the realtime it sent
the line at::

    {"t0_realtime": 1764625200.25, "sent_realtime": 1764625200.05}

and each process converts t = 0 to its own monotonic clock when the line arrives. What it
saw is kept in its summary (``clock``): ``offset_s``, its realtime at arrival minus the
sender's at sending (the two clocks' offset plus the line's transit, an upper bound on how
far this process's t = 0 is from the coordinator's), and ``late_s``, how far past t = 0 the
line arrived (it then starts at once). The report refuses a run whose offsets exceed what
its dilation tolerates (``emulator.analysis.report``). Pure: the clocks are passed in.
"""

from __future__ import annotations

import json
import math


class StartError(ValueError):
    pass


def start_line(t0_realtime: float, sent_realtime: float) -> str:
    return json.dumps({"t0_realtime": t0_realtime, "sent_realtime": sent_realtime}) + "\n"


def parse_start(line: str, realtime_now: float, monotonic_now: float) -> tuple[float, dict]:
    """The start line -> (t = 0 on this process's monotonic clock, what it saw)."""
    try:
        msg = json.loads(line)
        t0_real, sent = float(msg["t0_realtime"]), float(msg["sent_realtime"])
    except (ValueError, TypeError, KeyError) as e:
        raise StartError(f"start line {line.strip()[:120]!r}: expected "
                         '{"t0_realtime": s, "sent_realtime": s} ' f"({e})") from None
    if not (math.isfinite(t0_real) and math.isfinite(sent)):
        raise StartError(f"start line {line.strip()[:120]!r}: times must be finite")
    t0 = monotonic_now + (t0_real - realtime_now)
    return t0, {"t0_realtime": t0_real, "offset_s": realtime_now - sent,
                "late_s": max(0.0, realtime_now - t0_real)}
