"""The switch side of the simulation backend against what its parts compute on their own:
DCQCN sharing a port between two flows, the queue model against the simulated port's own
FIFO, RED's marking rate against RED's curve over the queue each packet saw, strict
priority for the lagging step, and Symphony's per-job counters against the tracker run
standalone over the packets the switches were handed. No root; seconds each."""

import os

import numpy as np
import pytest

from emulator import plan as planning
from emulator.home import root as project_root
from emulator.rundir import RunFolder
from emulator.sim import network as simnet
from emulator.sim import run as simrun
from emulator.spec import load
from runtime import wire
from runtime.records import FlowReceived, Window
from runtime.telemetry import read_records
from switch_agent.queue_model import red_probability
from switch_agent.symphony import SymphonyTracker

FIG9 = os.path.join(project_root(), "runs", "fig9.toml")      # h0, h1 -> h2 through leaf0
FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
DROP_TAIL = 'topology.flow_control="drop"'   # these check drop-tail ports (the figures: PFC)


class Recorded:
    """The run's switch pipelines, each port tracing what it queued (time, bytes, the
    queue model's backlog, RoCE?), every packet handed to a pipeline (time, bytes, and
    whether the queue took it: a full buffer drops it before any scheme sees it),
    and each simulated port's FIFO backlog right after each packet was offered to it."""

    def __init__(self, monkeypatch):
        self.pipes, self.handed, self.fifo = {}, [], {}
        rec = self

        class Pipeline(simrun.SwitchPipeline):
            def __init__(self, *a, **kw):
                super().__init__(*a, **kw)
                for port in self.ports.values():
                    port.trace = []
                rec.pipes[id(self)] = self

            def handle(self, pkt, outdev, now_s):
                port = self.ports.get(outdev)
                drops = port.counters.model_drops if port else 0
                out = super().handle(pkt, outdev, now_s)
                queued = port is not None and port.counters.model_drops == drops
                rec.handed.append((id(self), now_s, bytes(pkt), queued))
                return out

        offer = simnet.OutPort.offer

        def offered(port, pkt, now):
            offer(port, pkt, now)
            in_service = max(0.0, port.free_at - now) * port.rate_bps / 8
            rec.fifo.setdefault(port.name, []).append(sum(port.queued) + in_service)

        monkeypatch.setattr(simrun, "SwitchPipeline", Pipeline)
        monkeypatch.setattr(simnet.OutPort, "offer", offered)


def _rate_in_second_half(flow: FlowReceived) -> float:
    """bits/s a receiver got over the second half of the time both flows ran."""
    ts, bs = zip(*flow.goodput_samples)
    return lambda t0, t1: (np.interp(t1, ts, bs) - np.interp(t0, ts, bs)) * 8 / (t1 - t0)


@pytest.mark.pure          # records through a subclass and a patched port
@pytest.mark.parametrize("profile", ["zhu", "hpcc"])
def test_two_flows_into_one_port_share_it_and_red_marks_at_its_computed_rate(
        tmp_path, monkeypatch, profile):
    """Two 16 MB flows into h2's port, both from t = 0, under either DCQCN (Zhu's, and
    HPCC's mlx settings): over the second half each gets half the port within 2 %; the
    switch's queue model holds exactly the simulated FIFO's backlog at every packet; and
    RED marks as many packets as its curve gives for the queues they met (within 4 sd of
    the binomial count)."""
    rec = Recorded(monkeypatch)
    spec = load(FIG9, [f"profile={profile}", DROP_TAIL, "messages.0.start_ms=0.0",
                       "messages.0.bytes=16000000", "messages.1.bytes=16000000"])
    rundir = str(tmp_path / "baseline-seed1")
    meas = simrun.run_sim(spec, "baseline", 1, rundir)
    assert meas.sim.port_drops == 0
    recv = RunFolder(rundir).host_records(FlowReceived)
    assert len(recv) == 2
    t0, t1 = max(f.start_s for f in recv), min(f.end_s for f in recv)
    rates = [_rate_in_second_half(f)((t0 + t1) / 2, t1) for f in recv]
    line = planning.compile(spec, "baseline", 1).link_rate_bps
    assert all(abs(r / np.mean(rates) - 1) < 0.02 for r in rates), rates
    assert sum(rates) > 0.95 * line, (rates, line)        # payload of a busy port

    (pipe,) = rec.pipes.values()
    (port,) = [p for p in pipe.ports.values() if p.name.endswith("eth3")]    # toward h2
    trace = np.array(port.trace)                       # (t, bytes, modelled backlog, roce)
    fifo = np.array(rec.fifo[port.name])
    assert len(fifo) == len(trace) > 7000
    assert np.abs(trace[:, 2] - fifo).max() < 1e-3       # bytes: the same queue
    red = pipe.red
    f = port.queue.rate_Bps * 8 / red.rate_ref_bps if red.rate_ref_bps else 1.0
    kmin, kmax = red.kmin_bytes * f, red.kmax_bytes * f
    p = np.array([red_probability(q, kmin, kmax, red.pmax) if q > kmin else 0.0
                  for q in trace[trace[:, 3] == 1, 2]])
    marks = port.counters.marks_red + port.counters.marks_both
    assert p.sum() > 100, "the queue never reached RED's range: nothing tested"
    assert abs(marks - p.sum()) < 4 * np.sqrt((p * (1 - p)).sum()), (marks, p.sum())


def test_pq_serves_the_lagging_step_first_at_its_own_rate(tmp_path):
    """Fig 9's two flows of one job (step 0 lagging, step 1 ahead) into one port, without
    congestion control marks (RED off, as the emulation's test): under pq the lagging
    step's packets take the port and it finishes as if alone (its bytes at the port's
    rate, within 3 %), the step ahead after it; in a FIFO the lagging step shares."""
    spec = load(FIG9, [DROP_TAIL, "messages.0.start_ms=0.0", "switch.red=false"])
    line = planning.compile(spec, "baseline", 1).link_rate_bps
    alone = spec.messages[0].bytes * 8 / line
    fct = {}
    for scheme in ("baseline", "pq"):
        rundir = str(tmp_path / f"{scheme}-seed1")
        meas = simrun.run_sim(spec, scheme, 1, rundir)
        fct[scheme] = {f.step: f.end_s - f.start_s
                       for f in RunFolder(rundir).host_records(FlowReceived)}
        if scheme == "pq":
            assert meas.agents["leaf0"].counters["pq_high"] >= 256   # all of step 0
    assert fct["pq"][0] < 1.03 * alone / 0.975, (fct, alone)   # payload share of a frame
    assert fct["pq"][1] > fct["pq"][0] + 0.5 * alone
    assert fct["baseline"][0] > 1.3 * fct["pq"][0], fct


@pytest.mark.pure          # records through a subclass and a patched port
def test_symphony_counters_equal_the_tracker_run_standalone_over_the_packet_trace(
        tmp_path, monkeypatch):
    """Fig 5's job under Symphony: each switch's per-job windows (packets, outpacing
    packets, alpha, step_min, psn_rec) as the run wrote them equal those of a fresh
    tracker fed, by this test, every RoCE data packet that switch's queue took, at the
    time it was handed it (this seed overflows a buffer too: what is dropped is not
    counted)."""
    rec = Recorded(monkeypatch)
    spec = load(FIG5, [DROP_TAIL, "jobs.0.chunk_bytes=262144", "jobs.0.passes=2"])
    rundir = str(tmp_path / "symphony-seed4")
    meas = simrun.run_sim(spec, "symphony", 4, rundir)
    plan = planning.compile(spec, "symphony", 4)
    names = {}                                  # pipeline -> switch, by its ports' names
    for pid, pipe in rec.pipes.items():
        (sw,) = {p.name.rsplit("-eth", 1)[0] for p in pipe.ports.values()}
        names[pid] = sw
    checked = 0
    for pid, sw in names.items():
        windows = []
        tracker = SymphonyTracker(plan.agents[sw].symphony, on_window=windows.append)
        for who, t, pkt, queued in rec.handed:
            hdr = wire.parse_ip_roce(pkt) if who == pid and queued else None
            if hdr is not None and hdr.job != wire.FOREIGN_JOB:
                tracker.observe(hdr.job, hdr.step, hdr.psn, hdr.last, t)
        wrote = [r for r in read_records(os.path.join(rundir, f"{sw}.jsonl"), Window)]
        keys = ("job", "window", "cnt_total", "cnt_op", "alpha", "step_min", "psn_rec")
        assert [tuple(getattr(r, k) for k in keys) for r in wrote] == \
            [tuple(getattr(w, k) for k in keys) for w in windows], sw
        checked += len(windows)
    marks = sum(a.counters["marks_symphony"] + a.counters["marks_both"]
                for a in meas.agents.values())
    assert checked > 50 and marks > 0, (checked, marks)
    assert meas.sim.port_drops > 0 and not all(q for *_, q in rec.handed)


class _Far:
    """The far end of a port under test: what reached it, and when."""

    def __init__(self):
        self.got = []

    def arrive(self, node, pkt, t):
        self.got.append((node, len(pkt), t))


@pytest.mark.pure         # a stand-in for the network at the port's far end
@pytest.mark.parametrize("spare_bytes, accepted", [(0, 5), (-1, 4)])
def test_drop_tail_admits_a_frame_only_if_it_fits_the_buffer_whole(spare_bytes, accepted):
    """A port's buffer of exactly 5 frames (wire size: IP + Ethernet, as HTB charges)
    takes 5 frames offered at once and drops the 6th; one byte less and the 5th no longer
    fits, so it takes 4 and drops 2. Admission counts the frame offered, not only what
    waits: a buffer judged on what waits alone takes a frame past its size."""
    from emulator.sim.loop import Loop
    pkt = bytes(1000)
    frame = len(pkt) + simnet.L2_BYTES
    loop, far = Loop(), _Far()
    port = simnet.OutPort("leaf0-eth1", 1e9, 5 * frame + spare_bytes, loop, far, "h2")
    for _ in range(6):
        port.offer(pkt, 0.0)
    assert (port.drops, port.queued[0]) == (6 - accepted, accepted * frame)
    assert port.max_q_bytes == accepted * frame <= port.buffer_bytes
    loop.run(1.0, lambda: len(far.got) == accepted)
    assert [n for n, _, _ in far.got] == ["h2"] * accepted and port.sent == accepted
