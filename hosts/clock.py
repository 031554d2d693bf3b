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
line arrived (it then starts at once).

That one-way offset is the clocks' offset *plus* the line's transit (0.4-5 ms over ssh
here), and it bounds the offset from one side only. So before the start line the
coordinator also measures each process's clock the way NTP does: a few probe lines
``{"probe": k, "sent_realtime": s}``, each answered at once with
``{"probe": k, "seen_realtime": r}`` and read back at ``e``; from the probe with the
shortest round trip, the process's clock is ``r - (s + e) / 2`` off the coordinator's,
give or take half that round trip (:func:`estimate`). The verdict refuses a run whose
bound, ``|offset| + round trip / 2``, exceeds what its dilation tolerates, naming the
process's server (``emulator.analysis.verdict``). Pure: the clocks are passed in.
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


PROBES = 8                    # probe round trips per process before t = 0


def probe_line(seq: int, sent_realtime: float) -> str:
    return json.dumps({"probe": seq, "sent_realtime": sent_realtime}) + "\n"


def answer(line: str, realtime_now: float) -> dict | None:
    """A probe line's answer (None: the line is not a probe)."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or "probe" not in msg:
        return None
    return {"probe": msg["probe"], "seen_realtime": realtime_now}


def estimate(samples: list[tuple[float, float, float]]) -> dict | None:
    """The process's clock against the coordinator's from probe round trips ``(s, r, e)``:
    sent (coordinator), seen (process), answer read (coordinator). From the shortest
    round trip: ``offset_s`` (process minus coordinator), ``rtt_s``, and ``bound_s``, how
    far apart the two clocks can be at most (whatever each way's share of the trip)."""
    ok = [(s, r, e) for s, r, e in samples if e >= s]
    if not ok:
        return None
    s, r, e = min(ok, key=lambda x: x[2] - x[0])
    offset, rtt = r - (s + e) / 2, e - s
    return {"offset_s": offset, "rtt_s": rtt, "bound_s": abs(offset) + rtt / 2,
            "probes": len(ok)}
