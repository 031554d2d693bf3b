"""The marks ``SwitchPipeline.handle`` makes, pinned by numbers (no root).

For known queue depths and known Symphony tracker states, many RoCEv2 packets go
through the pipeline with an injected random source; the fraction it CE-marks must
match RED's and Symphony's probability within a binomial bound, and each mark must be
attributed to its cause (RED only / Symphony only / both, per port and per job)
exactly as the decisions were.

The expected probabilities are worked out here from their definitions, never read
from the code under test:

* RED at the congestion point (docs/architecture.md §5.2, DCQCN's CP): for a backlog
  ``q`` that includes the arriving packet, 0 at or below ``kmin``,
  ``pmax * (q - kmin) / (kmax - kmin)`` between the thresholds, 1 at or above ``kmax``.
* Symphony (the paper's Algorithm 1, lines 11-16): 0 if ``step <= step_min`` or
  ``psn_rec <= N_warmup``; else ``P = min(1, k * alpha * psn / psn_rec)``.
* A packet is marked if RED **or** Symphony says so (§3.3: a logical OR with the
  underlying congestion control), only if it is ECN-capable (docs/architecture.md §5).

The tables below are those numbers by hand. How the queue depth is held: the port's
model (``EgressQueue``) is set to ``q - frame`` bytes just before each packet at a
fixed time, so the enqueue returns exactly ``q``.
"""

import math
import random
from typing import Callable

import pytest

from runtime import wire
from switch_agent.config import RedParams, SymphonyParams
from switch_agent.pipeline import Port, SwitchPipeline
from switch_agent.queue_model import L2_HEADER_BYTES, EgressQueue
from switch_agent.symphony import SymphonyTracker

PORT = 7
RATE_BPS = 1e9
SEED = 1
Z_SIGMAS = 4.5          # a correct pipeline fails one check in ~150,000
N_PKTS = 10_000         # per point: resolves a probability to about +-0.02 (4.5 sigma at 0.5)
PAPER_RED = RedParams(True, 50_000, 100_000, 0.2)     # the paper's thresholds (§4.1)
STEEP_RED = RedParams(True, 10_000, 30_000, 1.0)      # pmax 1: the whole [0, 1] range
SYMPHONY = SymphonyParams(t_win_s=1.0)                # k 0.01, tau 0.25, N_warmup 2, N_sample 8
STEP_MIN = 5
SRC, DST = "10.0.0.2", "10.0.1.2"


def roce(step: int, psn: int, *, job: int = 1, ecn: int = wire.ECN_ECT0,
         payload_bytes: int = 64) -> bytes:
    """A RoCEv2 SEND MIDDLE data packet as the switch sees it (IPv4/UDP/BTH/ICRC)."""
    body = wire.build_data(job, 0, step, psn, wire.OP_SEND_MIDDLE, bytes(payload_bytes))
    return wire.build_ip_packet(SRC, DST, 50000, wire.with_icrc(SRC, DST, 50000, body), ecn=ecn)


def seeded() -> Callable[[], float]:
    return random.Random(SEED).random


class Rig:
    """One modelled switch port and its pipeline; the test sets the queue each packet sees.

    ``windows``: the per-job mark counters the pipeline reports as each Symphony window
    closes (the ``Window`` record the agent writes): (job, marks_red, marks_symphony).
    """

    def __init__(self, red: RedParams = PAPER_RED, *, scheme: str = "symphony", coin=None):
        self.queue = EgressQueue(RATE_BPS, 1 << 30)       # no burst: every byte queues
        self.windows: list[tuple[int, int, int]] = []
        self.pipe = SwitchPipeline({PORT: Port("p", self.queue)}, red,
                                   SymphonyTracker(SYMPHONY), coin or seeded(), scheme=scheme,
                                   on_window=lambda w: self.windows.append(
                                       (w.job, w.marks_red, w.marks_symphony)))

    def send(self, pkt: bytes, n: int = 1, *, q_bytes: float = 0.0, now_s: float = 0.5) -> list:
        """Hand ``pkt`` to the pipeline ``n`` times, each arriving at a backlog of
        ``q_bytes`` including itself (0: an empty queue); returns the verdicts."""
        frame = len(pkt) + L2_HEADER_BYTES
        out = []
        for _ in range(n):
            self.queue.backlog(now_s)                     # the model's clock to now
            self.queue.q_bytes = max(0.0, q_bytes - frame)
            out.append(self.pipe.handle(pkt, PORT, now_s))
        return out

    def counters(self) -> dict:
        return self.pipe.totals()["total"]

    def job_marks(self, jobs, now_s: float) -> dict[int, tuple[int, int]]:
        """Close each job's window (one unmarked step_min packet a window later) and sum
        the per-job counters the pipeline reported: job -> (marks_red, marks_symphony)."""
        for job in jobs:
            self.send(roce(STEP_MIN, 0, job=job), now_s=now_s + SYMPHONY.t_win_s)
        sums = {job: [0, 0] for job in jobs}
        for job, r, s in self.windows:
            sums[job][0] += r
            sums[job][1] += s
        return {job: tuple(v) for job, v in sums.items()}


def lead(rig: Rig, *, psn_rec: int, alpha: int, job: int = 1) -> float:
    """Bring ``job`` to a known tracker state through the pipeline (Algorithm 1): step_min
    = STEP_MIN, psn_rec, alpha. Each of the first ``alpha - 1`` windows carries only
    outpacing packets (cnt_op >= tau * cnt_total, cnt_total > N_sample: alpha + 1 at its
    close, and psn_rec 0 means none is marked); the last one the step_min packets PSN
    0..psn_rec. Returns a time in that last window, where the test's packets go."""
    rig.send(roce(STEP_MIN, 0, job=job), now_s=0.0)       # anchors the job's window grid
    for w in range(alpha - 1):
        rig.send(roce(STEP_MIN + 1, 0, job=job), SYMPHONY.n_sample + 1, now_s=w + 0.5)
    now = alpha - 1 + 0.5
    for psn in range(psn_rec + 1):
        rig.send(roce(STEP_MIN, psn, job=job), now_s=now)
    assert rig.pipe.tracker.state(job) == (STEP_MIN, psn_rec, alpha)
    assert rig.counters()["marks_red"] + rig.counters()["marks_symphony"] == 0
    return now


def is_ce(verdict) -> bool:
    return verdict is not None and wire.parse_ip_roce(bytes(verdict)).ecn == wire.ECN_CE


def assert_binomial(k: int, n: int, p: float, what: str) -> None:
    """``k`` of ``n`` within Z_SIGMAS binomial standard deviations of ``n * p`` (exact if
    p is 0 or 1)."""
    mean, bound = n * p, Z_SIGMAS * math.sqrt(n * p * (1 - p))
    assert abs(k - mean) <= bound, (
        f"{what}: {k}/{n} = {k / n:.4f} marked; p = {p:.4f} expects {mean:.1f} +- {bound:.1f} "
        f"({Z_SIGMAS} sigma)")


# --- RED alone -------------------------------------------------------------------------------

RED_POINTS = [   # (thresholds, backlog incl. the packet, RED's p worked out by hand)
    (PAPER_RED, 10_000, 0.0),
    (PAPER_RED, 50_000, 0.0),            # at kmin: not yet
    (PAPER_RED, 55_000, 0.02),
    (PAPER_RED, 62_500, 0.05),
    (PAPER_RED, 75_000, 0.10),
    (PAPER_RED, 87_500, 0.15),
    (PAPER_RED, 99_000, 0.196),
    (PAPER_RED, 100_000, 1.0),           # at kmax: always
    (PAPER_RED, 150_000, 1.0),
    (STEEP_RED, 12_000, 0.10),
    (STEEP_RED, 15_000, 0.25),
    (STEEP_RED, 20_000, 0.50),
    (STEEP_RED, 25_000, 0.75),
    (STEEP_RED, 29_000, 0.95),
    (STEEP_RED, 30_000, 1.0),
]


@pytest.mark.parametrize("red,q_bytes,p", RED_POINTS,
                         ids=[f"pmax{r.pmax}-q{q}" for r, q, _ in RED_POINTS])
def test_red_marks_the_fraction_its_probability_gives(red, q_bytes, p):
    rig = Rig(red, scheme="baseline")
    out = rig.send(roce(STEP_MIN, 0), N_PKTS, q_bytes=q_bytes)
    marked = sum(map(is_ce, out))
    assert_binomial(marked, N_PKTS, p, f"RED kmin {red.kmin_bytes} kmax {red.kmax_bytes} "
                                       f"pmax {red.pmax}, q {q_bytes} B")
    c = rig.counters()
    assert (c["marks_red"], c["marks_symphony"], c["marks_both"]) == (marked, 0, 0)
    assert c["roce_pkts"] == N_PKTS and sum(o is not None for o in out) == marked


@pytest.mark.parametrize("rate_factor,q_bytes,p", [
    (1.0, 75_000, 0.10),        # a port at the reference rate: the thresholds as given
    (0.5, 37_500, 0.10),        # half the rate: kmin 25 KB, kmax 50 KB (HPCC's per-port rule)
    (0.5, 55_000, 1.0),         # above the halved kmax: always, where 50/100 KB gives 0.02
    (2.0, 75_000, 0.0),         # twice the rate: kmin 100 KB, not yet
])
def test_red_scaled_with_the_port_rate_marks_as_the_ports_own_thresholds_give(
        rate_factor, q_bytes, p):
    red = RedParams(True, 50_000, 100_000, 0.2, rate_ref_bps=RATE_BPS / rate_factor)
    rig = Rig(red, scheme="baseline")
    out = rig.send(roce(STEP_MIN, 0), N_PKTS, q_bytes=q_bytes)
    assert_binomial(sum(map(is_ce, out)), N_PKTS, p,
                    f"RED scaled x{rate_factor}, q {q_bytes} B")


def test_red_disabled_never_marks_even_above_kmax():
    rig = Rig(RedParams(False, 50_000, 100_000, 0.2), scheme="baseline")
    assert rig.send(roce(STEP_MIN, 0), 1000, q_bytes=200_000) == [None] * 1000
    assert rig.counters()["marks_red"] == 0


def _fill_cycles(red: RedParams, n_cycles: int) -> tuple[int, float, float, int]:
    """A real queue model fills: 4 KB packets arrive every 0.75 of their drain time, so
    each adds a quarter frame, from empty to past kmax; then the port idles empty. The
    test replays the fluid queue itself (q <- max(0, q - rate * gap) + frame) and sums
    RED's p over the packets. Returns (marked, expected, variance, packets)."""
    rig = Rig(red, scheme="baseline")
    pkt = roce(STEP_MIN, 0, payload_bytes=4096)
    frame = len(pkt) + L2_HEADER_BYTES
    gap_s = 0.75 * frame * 8 / RATE_BPS
    marked, mean, var, n, t = 0, 0.0, 0.0, 0, 0.0
    for _ in range(n_cycles):
        q = 0.0
        while q < red.kmax_bytes + frame:
            q = max(0.0, q - RATE_BPS / 8 * gap_s) + frame
            if q <= red.kmin_bytes:
                p = 0.0
            elif q >= red.kmax_bytes:
                p = 1.0
            else:
                p = red.pmax * (q - red.kmin_bytes) / (red.kmax_bytes - red.kmin_bytes)
            mean, var, n = mean + p, var + p * (1 - p), n + 1
            marked += is_ce(rig.pipe.handle(pkt, PORT, t))
            t += gap_s
        t += 1.0                                          # drains to empty
    return marked, mean, var, n


def test_red_on_a_filling_queue_uses_the_backlog_including_the_arriving_packet():
    # Narrow band (2.4 frames): p of the backlog without the packet would differ by 0.4.
    marked, mean, var, n = _fill_cycles(RedParams(True, 20_000, 30_000, 1.0), 300)
    bound = Z_SIGMAS * math.sqrt(var)
    assert abs(marked - mean) <= bound, \
        f"{marked}/{n} marked on a filling queue; sum of RED's p: {mean:.1f} +- {bound:.1f}"


# --- Symphony alone ---------------------------------------------------------------------------

SYMPHONY_POINTS = [   # (alpha, psn_rec, psn of the outpacing packet, P = min(1, k*alpha*psn/psn_rec))
    (1, 20, 20, 0.01),
    (1, 20, 500, 0.25),
    (1, 20, 1000, 0.50),
    (1, 20, 1400, 0.70),
    (2, 10, 5, 0.01),                    # behind step_min's head: still outpacing
    (3, 20, 200, 0.30),
    (3, 20, 600, 0.90),
    (1, 3, 60, 0.20),                    # psn_rec just past N_warmup = 2
    (1, 2, 1000, 0.0),                   # psn_rec = N_warmup: warm-up, never marked
    (2, 40, 5000, 1.0),                  # capped at 1
]


@pytest.mark.parametrize("alpha,psn_rec,psn,p", SYMPHONY_POINTS,
                         ids=[f"a{a}-rec{r}-psn{s}" for a, r, s, _ in SYMPHONY_POINTS])
def test_symphony_marks_the_fraction_algorithm_1_gives(alpha, psn_rec, psn, p):
    rig = Rig()
    now = lead(rig, psn_rec=psn_rec, alpha=alpha)
    out = rig.send(roce(STEP_MIN + 1, psn), N_PKTS, now_s=now)    # empty queue: RED silent
    marked = sum(map(is_ce, out))
    assert_binomial(marked, N_PKTS, p, f"Symphony alpha {alpha}, psn_rec {psn_rec}, psn {psn}")
    c = rig.counters()
    assert (c["marks_red"], c["marks_symphony"], c["marks_both"]) == (0, marked, 0)
    assert rig.job_marks([1], now) == {1: (0, marked)}


def test_symphony_never_marks_step_min_or_a_late_step():
    rig = Rig()
    now = lead(rig, psn_rec=20, alpha=3)
    out = rig.send(roce(STEP_MIN, 5000), 1000, now_s=now)       # step == step_min
    out += rig.send(roce(STEP_MIN - 1, 5000), 1000, now_s=now)  # late: becomes step_min
    assert out == [None] * 2000
    assert rig.counters()["marks_symphony"] == 0


# --- both: OR, independent coins, attribution -----------------------------------------------

def test_red_and_symphony_are_independent_coins_each_mark_attributed_to_its_cause():
    rig = Rig(STEEP_RED)
    now = lead(rig, psn_rec=20, alpha=1)
    p_red, p_sym = 0.5, 0.3                                       # q 20 kB; psn 600
    out = rig.send(roce(STEP_MIN + 1, 600), N_PKTS, q_bytes=20_000, now_s=now)
    c = rig.counters()
    marked = sum(map(is_ce, out))
    assert_binomial(c["marks_both"], N_PKTS, p_red * p_sym, "both")
    assert_binomial(c["marks_red"], N_PKTS, p_red * (1 - p_sym), "RED only")
    assert_binomial(c["marks_symphony"], N_PKTS, (1 - p_red) * p_sym, "Symphony only")
    assert_binomial(marked, N_PKTS, 1 - (1 - p_red) * (1 - p_sym), "RED or Symphony")
    assert c["marks_both"] + c["marks_red"] + c["marks_symphony"] == marked
    assert rig.job_marks([1], now) == {1: (c["marks_red"] + c["marks_both"],
                                           c["marks_symphony"] + c["marks_both"])}


# With a coin that always shows U, a decision of probability p is "mark" exactly when
# p >= 1 or U < p: every packet's cause is known, so the counters are checked exactly.
U = 0.4
QUEUES = {0.0: 5_000, 0.25: 15_000, 0.45: 19_000, 1.0: 35_000}    # STEEP_RED: p -> q
PSNS = {0.0: None, 0.25: 500, 0.45: 900, 1.0: 5000}               # psn_rec 20, alpha 1
ECNS = (wire.ECN_ECT0, wire.ECN_ECT1, wire.ECN_CE, wire.ECN_NOT_ECT)


def test_with_a_fixed_coin_every_mark_and_every_counter_is_exact():
    rig = Rig(STEEP_RED, coin=lambda: U)
    now = lead(rig, psn_rec=20, alpha=1)
    expect = {"marks_red": 0, "marks_symphony": 0, "marks_both": 0, "not_ect_unmarked": 0}
    job_red = job_sym = 0
    for p_red, q in QUEUES.items():
        for p_sym, psn in PSNS.items():
            red, sym = p_red > U, p_sym > U
            for ecn in ECNS:
                # p_sym 0: a packet of step_min (never Symphony's)
                pkt = roce(STEP_MIN, 7, ecn=ecn) if psn is None else \
                    roce(STEP_MIN + 1, psn, ecn=ecn)
                (out,) = rig.send(pkt, q_bytes=q, now_s=now)
                what = f"RED p {p_red}, Symphony P {p_sym}, ECN {ecn:02b}"
                if not (red or sym):
                    assert out is None, what
                    continue
                if ecn == wire.ECN_NOT_ECT:
                    assert out is None, what
                    expect["not_ect_unmarked"] += 1
                    continue
                cause = "marks_both" if red and sym else "marks_red" if red else "marks_symphony"
                expect[cause] += 1
                job_red += red
                job_sym += sym
                if ecn == wire.ECN_CE:
                    assert out is None, what                     # already CE: unchanged
                else:
                    assert is_ce(out) and wire.verify_icrc(bytes(out)), what
                    # only the TOS byte and the IP checksum change
                    assert [i for i, (a, b) in enumerate(zip(out, pkt)) if a != b] in \
                        ([1, 10], [1, 11], [1, 10, 11]) and len(out) == len(pkt), what
    c = rig.counters()
    assert {k: c[k] for k in expect} == expect == {
        "marks_red": 2 * 2 * 3, "marks_symphony": 2 * 2 * 3, "marks_both": 2 * 2 * 3,
        "not_ect_unmarked": 12}
    assert rig.job_marks([1], now) == {1: (job_red, job_sym)} == {1: (24, 24)}


def test_per_job_counters_follow_each_jobs_own_decisions():
    """Job 1 runs ahead (Symphony P 1), job 2 only sends its step_min (P 0); both under a
    queue above kmax (RED 1). Each job's counters: RED for every packet, Symphony only
    for job 1's."""
    rig = Rig(PAPER_RED)
    now = lead(rig, psn_rec=20, alpha=1, job=1)
    assert lead(rig, psn_rec=20, alpha=1, job=2) == now
    for _ in range(50):
        rig.send(roce(STEP_MIN + 1, 5000, job=1), 3, q_bytes=150_000, now_s=now)
        rig.send(roce(STEP_MIN, 7, job=2), 2, q_bytes=150_000, now_s=now)
    c = rig.counters()
    assert (c["marks_red"], c["marks_symphony"], c["marks_both"]) == (100, 0, 150)
    assert rig.job_marks([1, 2], now) == {1: (150, 150), 2: (100, 0)}


def test_a_traced_port_records_every_packet_it_queued_with_the_backlog_it_found():
    rig = Rig(scheme="baseline")
    rig.pipe.ports[PORT].trace = []
    pkt = roce(STEP_MIN, 0)
    rig.send(pkt, 3, q_bytes=20_000, now_s=0.5)
    frame = len(pkt) + L2_HEADER_BYTES
    assert rig.pipe.ports[PORT].trace == [(0.5, frame, pytest.approx(20_000), 1)] * 3
