"""The switch agent's marks at the shell level (root; marker ``emulation``).

The unit tests (tests/test_marking.py) pin the pipeline's marking; this pins the shell
around it: the NFQUEUE agent, its queue model of a real shaped port, its RNG and its
telemetry. One switch, h0 -> h1; the port towards h1 shaped below the link rate; a
paced RoCE stream a little faster than that port, so the queue climbs slowly and
steadily through a wide RED band. From the agent's own ``port`` telemetry (every 10 ms:
backlog, packets, marks) each interval whose backlog stayed in the band gives its
packets and marks; the marks must match RED's probability (docs/architecture.md §5.2)
for the backlog the agent saw, within a binomial bound, over the whole band and in
each quarter of it.
"""

import math
import os

import pytest

from emulator.launch.fabric import LiveFabric
from runtime import wire
from runtime.records import PortSample
from runtime.telemetry import read_records
from tests.fabric_util import run_streams
from topologies import wiring
from topologies.dumbbell import DumbbellTopo

pytestmark = pytest.mark.emulation

PORT = wiring.leaf_port_to_host(0, 1)          # leaf0 towards h1
PORT_RATE_BPS = wiring.DEFAULT_RATE_BPS / 2    # 5 Mbit/s
KMIN_BYTES, KMAX_BYTES, PMAX = 20_000, 220_000, 0.5
PAYLOAD_BYTES = 1024
IP_BYTES = wire.OVERHEAD_BYTES + PAYLOAD_BYTES
FRAME_BYTES = IP_BYTES + 14                    # what the model (and HTB) charges a packet
OVERLOAD = 1.05                                # the stream, in IP bytes, over the port rate
SEND_S = 7.0
Z_SIGMAS = 4.5


def red_p(q_bytes: float) -> float:
    """RED's probability for a backlog in the band (§5.2), written out by hand."""
    return PMAX * (q_bytes - KMIN_BYTES) / (KMAX_BYTES - KMIN_BYTES)


def band_intervals(records: list[PortSample]) -> list[tuple[float, int, int]]:
    """(backlog the interval's packets saw, packets, marks) for each sampling interval of
    ``PORT`` whose backlog at both ends lay in the band, a frame clear of each threshold.

    A sample catches the sawtooth at a random phase: on average half a frame below
    the peaks the arriving packets see (each includes itself), so the interval's
    packets saw the mean of its end samples plus half a frame."""
    recs = [r for r in records if r.port == PORT]
    out = []
    lo, hi = KMIN_BYTES + FRAME_BYTES, KMAX_BYTES - 2 * FRAME_BYTES
    for a, b in zip(recs, recs[1:]):
        if lo <= a.q_bytes <= hi and lo <= b.q_bytes <= hi:
            out.append(((a.q_bytes + b.q_bytes) / 2 + FRAME_BYTES / 2,
                        b.pkts - a.pkts, b.marks - a.marks))
    return out


def check_marks(intervals, what: str) -> str:
    """Marks against RED's p over ``intervals``: binomial sd over the packets, plus the
    timing slack of a frame of backlog per packet (where in its interval a packet came)."""
    n = sum(i[1] for i in intervals)
    marks = sum(i[2] for i in intervals)
    mean = sum(k * red_p(q) for q, k, _ in intervals)
    sd = math.sqrt(sum(k * red_p(q) * (1 - red_p(q)) for q, k, _ in intervals))
    slack = n * PMAX * FRAME_BYTES / (KMAX_BYTES - KMIN_BYTES)
    bound = Z_SIGMAS * sd + slack
    line = (f"{what}: {marks}/{n} marked = {marks / n:.4f}; RED expects {mean:.1f} "
            f"(p {mean / n:.4f}) +- {bound:.1f}")
    assert abs(marks - mean) <= bound, line
    return line


def test_a_queue_climbing_through_the_red_band_is_marked_at_reds_rate(tmp_path, no_leftovers):
    rundir = str(tmp_path)
    fab = LiveFabric(DumbbellTopo(2, rundir=rundir, port_rates={"leaf0": {PORT: PORT_RATE_BPS}}))
    no_leftovers.append(fab)
    h0, h1 = wiring.host_ip(0, 0), wiring.host_ip(0, 1)
    rate_bps = OVERLOAD * PORT_RATE_BPS
    packets = int(SEND_S * rate_bps / 8 / IP_BYTES)
    with fab:
        reply = fab.agent("leaf0", {"cmd": "red", "enabled": True, "kmin_bytes": KMIN_BYTES,
                                    "kmax_bytes": KMAX_BYTES, "pmax": PMAX})
        assert reply["ok"], reply
        before = fab.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][PORT]
        [rx], [tx] = run_streams(
            [(fab["h1"], h1)],
            [(fab["h0"], ["--src", h0, "--dst", h1, "--packets", packets, "--rate-bps", rate_bps,
                          "--payload", PAYLOAD_BYTES])])
        after = fab.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][PORT]
    got = rx["steps"]["1/0"]
    marks = {k: after[k] - before[k] for k in ("marks_red", "marks_symphony", "marks_both")}
    # Everything arrived (the band is far below the 512 KB buffer) and the CE marks the
    # receiver read are the agent's RED marks.
    assert got["pkts"] == packets and rx["bad_icrc"] == 0, (got, tx)
    assert marks == {"marks_red": got["ce"], "marks_symphony": 0, "marks_both": 0}

    intervals = band_intervals(read_records(os.path.join(rundir, "leaf0.jsonl"), PortSample))
    n = sum(i[1] for i in intervals)
    assert n >= 0.5 * packets, \
        f"only {n} of {packets} packets arrived while the backlog was in the band: {intervals}"
    lines = [check_marks(intervals, f"band {KMIN_BYTES}-{KMAX_BYTES} B")]
    width = (KMAX_BYTES - KMIN_BYTES) / 4
    for j in range(4):
        lo = KMIN_BYTES + j * width
        quarter = [i for i in intervals if lo <= i[0] < lo + width]
        if sum(i[1] for i in quarter) >= 200:
            lines.append(check_marks(quarter, f"  quarter {lo:.0f}-{lo + width:.0f} B"))
    print(f"\nstream {tx['rate_bps'] / 1e6:.3f} Mbit/s (max late {tx['max_late_s'] * 1e3:.1f} ms) "
          f"into a {PORT_RATE_BPS / 1e6:.1f} Mbit/s port, {len(intervals)} intervals in band:\n"
          + "\n".join(lines))
    assert len(lines) == 5, "each quarter of the band should see >= 200 packets"
