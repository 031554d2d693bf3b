"""Marking at enqueue vs at dequeue, replayed on a run's own arrivals (issue 19).

    python -m emulator.analysis.marking_point RUN_OR_SWEEP_FOLDER... [--json FILE]

The agents mark on the backlog a packet *finds* (docs/architecture.md §5.2); HPCC's
switch, whose configuration the paper followed, marks on the backlog it *leaves behind*
when it is dequeued (``SwitchNotifyDequeue``). An agent cannot do the latter: the verdict
is due before the arrivals that backlog holds. So this replays each port offline. A run
made with ``[switch] trace_arrivals = true`` has every packet its ports' queue models
queued (time, frame bytes, the backlog found); per port:

1. the same fluid queue (``switch_agent.queue_model.EgressQueue``, same rate, buffer and
   burst) is fed the arrivals again and must find the recorded backlogs (a check that the
   replay is the agent's model: the largest difference is printed);
2. a packet's last byte leaves at ``t + q / rate`` (a FIFO draining at the port rate);
   a second replay, stopped at each of those times, gives the backlog left behind;
3. RED's probability (the run's thresholds, per port scaled if the run scaled them) on
   both backlogs, for the RoCE data packets (the ones RED may mark).

Printed per run and over all runs: RoCE packets, the expected marks (sum of p) at enqueue
and at dequeue and their ratio, the share of packets whose two probabilities differ by
more than 0.05, and how far ahead the dequeue rule sees the queue (the mean sojourn time
of marked-probability packets). It is an open-loop comparison: the senders reacted to
the enqueue marks; what they would have done with the others is not replayed. A port
whose rate changed during the run (an imbalance) is skipped and named.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

from emulator.rundir import RunFolder, run_folders
from runtime.records import Arrivals
from switch_agent.config import RedParams
from switch_agent.queue_model import EgressQueue, red_probability

DIFFER_P = 0.05


@dataclass(frozen=True)
class PortMarks:
    """One port's RoCE data packets replayed (:func:`replay_port`)."""
    switch: str
    port: str
    packets: int
    marks_enqueue: float            # the sum of RED's p on the backlog found
    marks_dequeue: float            # ... on the backlog left behind
    differ: int                     # packets whose two p differ by more than DIFFER_P
    lead_s: float                   # mean sojourn of marked-probability packets
    replay_error_bytes: float       # the largest difference from the recorded backlogs


@dataclass(frozen=True)
class Totals:
    """Ports' replays together (:func:`_totals`)."""
    packets: int
    marks_enqueue: float
    marks_dequeue: float
    ratio: float | None             # dequeue over enqueue
    differ_share: float
    lead_s: float
    replay_error_bytes: float


@dataclass(frozen=True)
class RunMarks:
    """Every traced port of one run (:func:`replay_run`)."""
    run: str
    scheme: str
    seed: int
    ports: list[PortMarks]
    skipped: list[str]              # switch:port whose rate changed during the run
    total: Totals

    def to_json(self) -> dict:
        """As ``--json`` writes it: the totals beside the ports."""
        own = asdict(self)
        return {**{k: v for k, v in own.items() if k != "total"}, **asdict(self.total)}


def backlogs(rec: Arrivals) -> tuple[list[float], list[float], float]:
    """(backlog each packet found incl. itself, -1 if dropped; backlog it left behind when
    its last byte left, None if dropped; the largest difference from the recorded found
    backlogs) of one port's arrival record."""
    t, nbytes, recorded = rec.t_s, rec.bytes, rec.q_bytes
    q1 = EgressQueue(rec.rate_bps, rec.buffer_bytes, rec.burst_bytes)
    found, worst = [], 0.0
    for ti, li, qi in zip(t, nbytes, recorded):
        q = q1.enqueue(li, ti)
        found.append(q)
        if (q < 0) != (qi < 0):
            worst = float("inf")              # one replay dropped what the other queued
        elif q >= 0:
            worst = max(worst, abs(q - qi))
    rate_Bps = rec.rate_bps / 8
    q2 = EgressQueue(rec.rate_bps, rec.buffer_bytes, rec.burst_bytes)
    left, j, n = [], 0, len(t)
    for i in range(n):
        if found[i] < 0:
            left.append(None)
            continue
        t_out = t[i] + found[i] / rate_Bps    # FIFO: its last byte leaves then
        while j < n and t[j] <= t_out:
            q2.enqueue(nbytes[j], t[j])
            j += 1
        left.append(q2.backlog(t_out))
    return found, left, worst


def replay_port(rec: Arrivals) -> PortMarks:
    """One port's arrival record -> its comparison (see the module docstring)."""
    red = RedParams.from_dict(rec.red)
    kmin, kmax, pmax = red.kmin_bytes, red.kmax_bytes, red.pmax
    if red.rate_ref_bps:
        f = rec.rate_bps / red.rate_ref_bps
        kmin, kmax = kmin * f, kmax * f
    found, left, worst = backlogs(rec)
    rate_Bps = rec.rate_bps / 8
    enq = deq = sojourn = weight = 0.0
    differ = packets = 0
    for q, q_left, roce in zip(found, left, rec.roce):
        if q < 0 or not roce or not red.enabled:
            continue
        p_in = red_probability(q, kmin, kmax, pmax)
        p_out = red_probability(q_left, kmin, kmax, pmax)
        packets += 1
        enq += p_in
        deq += p_out
        differ += abs(p_in - p_out) > DIFFER_P
        sojourn += q / rate_Bps * (p_in + p_out)
        weight += p_in + p_out
    return PortMarks(switch=rec.switch, port=rec.port, packets=packets, marks_enqueue=enq,
                     marks_dequeue=deq, differ=differ,
                     lead_s=sojourn / weight if weight else 0.0, replay_error_bytes=worst)


def replay_run(run: RunFolder) -> RunMarks:
    """Every traced port of one run; ``skipped``: ports whose rate changed."""
    ports, skipped = [], []
    for switch in sorted(_switches(run)):
        for rec in run.agent_records(switch, Arrivals):
            if abs(rec.final_rate_bps - rec.rate_bps) > 1e-6 * rec.rate_bps:
                skipped.append(f"{switch}:{rec.port}")
                continue
            ports.append(replay_port(rec))
    m = run.manifest
    return RunMarks(run=run.path, scheme=m.scheme, seed=m.seed, ports=ports,
                    skipped=skipped, total=_totals(ports))


def _switches(run: RunFolder) -> list[str]:
    return [n[:-len(".jsonl")] for n in os.listdir(run.path)
            if n.endswith(".jsonl") and not n.startswith("h") and n != "ledger.jsonl"]


def _totals(ports: list[PortMarks]) -> Totals:
    packets = sum(p.packets for p in ports)
    enq = sum(p.marks_enqueue for p in ports)
    deq = sum(p.marks_dequeue for p in ports)
    w = enq + deq
    return Totals(packets=packets, marks_enqueue=enq, marks_dequeue=deq,
                  ratio=deq / enq if enq else None,
                  differ_share=sum(p.differ for p in ports) / packets if packets else 0.0,
                  lead_s=sum(p.lead_s * (p.marks_enqueue + p.marks_dequeue)
                             for p in ports) / w if w else 0.0,
                  replay_error_bytes=max((p.replay_error_bytes for p in ports), default=0.0))


def _runs(paths: list[str]) -> list[RunFolder]:
    """Run folders: each path a run, a run set (``run``'s output) or a sweep (its
    variants' run sets)."""
    out = []
    for p in paths:
        if RunFolder(p).is_run:
            out.append(RunFolder(p))
            continue
        out += run_folders(p)
        for d in sorted(os.listdir(p)):
            sub = os.path.join(p, d)
            if os.path.isdir(sub) and not RunFolder(sub).is_run:
                out += run_folders(sub)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulator.analysis.marking_point",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", help="run folders, or folders of runs")
    ap.add_argument("--json", help="also write the per-run results here")
    args = ap.parse_args(argv)
    results = []
    for run in _runs(args.folders):
        res = replay_run(run)
        if not res.ports:
            print(f"{run.path}: no arrival trace (run it with --set switch.trace_arrivals=true)",
                  file=sys.stderr)
            continue
        results.append(res)
    if not results:
        print("no traced runs", file=sys.stderr)
        return 1
    print(f"{'scheme':<10}{'seed':>5}{'RoCE pkts':>11}{'marks@enq':>11}{'marks@deq':>11}"
          f"{'deq/enq':>9}{'differ':>8}{'lead(ms)':>10}{'replay err(B)':>15}")
    for r in results:
        t = r.total
        print(f"{r.scheme:<10}{r.seed:>5}{t.packets:>11}{t.marks_enqueue:>11.1f}"
              f"{t.marks_dequeue:>11.1f}{_ratio(t.ratio):>9}{t.differ_share:>8.1%}"
              f"{t.lead_s * 1e3:>10.3f}{t.replay_error_bytes:>15.1f}")
        if r.skipped:
            print(f"  skipped (rate changed): {', '.join(r.skipped)}")
    for scheme in sorted({r.scheme for r in results}):
        rs = [r for r in results if r.scheme == scheme]
        tot = _totals([p for r in rs for p in r.ports])
        print(f"{scheme}: {len(rs)} run(s), {tot.packets} RoCE packets: expected marks "
              f"{tot.marks_enqueue:.0f} at enqueue, {tot.marks_dequeue:.0f} at dequeue "
              f"(x{_ratio(tot.ratio)}); {tot.differ_share:.1%} of packets differ by "
              f"> {DIFFER_P}; the dequeue rule sees the queue {tot.lead_s * 1e3:.3f} ms "
              f"(emulated) later")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.to_json() for r in results], f, indent=1)
    return 0


def _ratio(x) -> str:
    return "-" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    sys.exit(main())
