"""The simulated lossless fabric (emulator/sim/pfc.py) on Fig 9's two-into-one incast:
h0 and h1 send 1 MiB each to h2 through leaf0 from t = 0, at line rate (no congestion
control, RED off). Drop-tail with a small buffer drops and resends; PFC ends with no
drop and each sender paused for the time the arithmetic gives.

The arithmetic (10 Gb/s at D = 2000: r = 5 Mb/s; W = 256 frames x 4154 B = 1063424 B per
sender). Both ingress ports fill at r/2 each (2r in, r out) until each holds the XOFF
point X = reserve + alpha F / (1 + 2 alpha) -- s >= alpha (F - 2 s), F the shared pool --
by then each sender has sent 2X. From there leaf0 lets each through at r/2: it is
paused (PAUSE to XON, its own frame in flight included) but for a PAUSE frame's time a
frame, while it sends the rest, W - 2X, so for 2 (W - 2X) / r. With HPCC's defaults
(3355443 B, 3 ports x (8368 + 4096) B: F = 3318051 B) X = 335901 B and each sender is
paused (2W - 4X) x 8 / r = 1.2532 s."""

import csv
import json
import os

import pytest

from emulator import plan as planning
from emulator.home import root as project_root
from emulator.analysis import console, export, page, report
from emulator.rundir import RunFolder
from emulator.sim import run as simrun
from emulator.spec import load
from runtime.records import FlowReceived, FlowSent, PortPause

FIG9 = os.path.join(project_root(), "runs", "fig9.toml")
INCAST = ["messages.0.start_ms=0.0", "switch.red=false", 'transport.congestion_control="none"']
PFC = 'topology.flow_control="pfc"'
RATE = 10e9 / 2000
W = 256 * 4154
FRAME_S = 4154 * 8 / RATE             # 6.6464 ms


def run(tmp_path, sets, name):
    spec = load(FIG9, INCAST + sets)
    rundir = str(tmp_path / name)
    meas = simrun.run_sim(spec, "baseline", 1, rundir)
    return spec, meas, RunFolder(rundir)


def test_drop_tail_with_a_small_buffer_drops_and_resends(tmp_path):
    _, meas, folder = run(tmp_path, ['topology.flow_control="drop"',
                                     "topology.buffer_bytes=65536"], "drop")
    assert meas.sim.flow_control == "drop" and meas.sim.pauses == 0
    assert meas.sim.port_drops > 100 and meas.sim.drops_by_port == {
        "leaf0-eth3": meas.sim.port_drops}
    assert sum(f.retransmits for f in folder.host_records(FlowSent)) > 100


def test_pfc_ends_the_incast_without_a_drop_each_sender_paused_as_computed(tmp_path):
    spec, meas, folder = run(tmp_path, [PFC], "pfc")
    params = planning.compile(spec, "baseline", 1).agents["leaf0"].pfc
    shared = params.shared_bytes(3)
    assert shared == 3318051
    x = params.reserve_bytes + params.alpha * shared / (1 + 2 * params.alpha)
    paused = (2 * W - 4 * x) * 8 / RATE
    assert paused == pytest.approx(1.2532, abs=1e-4)

    assert meas.sim.port_drops == meas.sim.pfc_drops == 0
    assert sum(f.retransmits + f.timeouts for f in folder.host_records(FlowSent)) == 0
    recv = folder.host_records(FlowReceived)
    assert len(recv) == 2 and all(r.bytes == 1 << 20 for r in recv)
    # the egress never idles: both done when 2W have left at r (within a frame)
    assert max(r.end_s for r in recv) == pytest.approx(2 * W * 8 / RATE, abs=FRAME_S)

    hosts = {r.port: r for r in folder.host_records(PortPause)}
    assert set(hosts) == {"h0-eth0", "h1-eth0"}
    for r in hosts.values():            # each within two frames' time of the arithmetic
        assert r.paused_s == pytest.approx(paused, abs=2 * FRAME_S), r.paused_s
        assert r.pauses_rx == r.resumes_rx == len(r.intervals) > 50
    # the senders' offsets at the start cancel: together within one frame's time
    assert sum(r.paused_s for r in hosts.values()) == pytest.approx(2 * paused, abs=FRAME_S)
    assert meas.sim.paused_s == {p: r.paused_s for p, r in hosts.items()}

    leaf = {r.port: r for r in folder.agent_records("leaf0", PortPause)}
    assert set(leaf) == {"leaf0-eth1", "leaf0-eth2"}          # toward h0, h1
    for port, host in (("leaf0-eth1", "h0-eth0"), ("leaf0-eth2", "h1-eth0")):
        assert leaf[port].pauses_tx == hosts[host].pauses_rx
        assert leaf[port].resumes_tx == hosts[host].resumes_rx
        # XOFF at X; what arrives before the PAUSE does fits the headroom, unused here
        assert x <= leaf[port].max_ingress_bytes <= x + 4154 + params.headroom_bytes
        assert leaf[port].drops == 0 and leaf[port].paused_s == 0.0
    assert meas.sim.pauses == sum(r.pauses_tx for r in leaf.values())


def test_a_buffer_small_enough_to_drop_under_drop_tail_is_lossless_under_pfc(tmp_path):
    """The same 200 KB for the whole switch that drop-tail overflows per port: PFC holds
    the senders back instead, and the incast takes its line-rate time."""
    _, meas, folder = run(tmp_path, [PFC, "pfc.buffer_bytes=200000"], "small")
    assert meas.sim.pfc_drops == meas.sim.port_drops == 0
    end = max(r.end_s for r in folder.host_records(FlowReceived))
    assert end == pytest.approx(2 * W * 8 / RATE, abs=FRAME_S)


@pytest.mark.parametrize("sets", [["run.schemes=['pq']"], ["pfc.control_priority=false"]])
def test_pq_and_acks_behind_data_are_lossless_too(tmp_path, sets):
    """pq's two classes both in the one lossless priority; or ACKs and CNPs in it, behind
    the data and paused with it: no drop, both messages whole."""
    spec = load(FIG9, INCAST + [PFC] + sets)
    scheme = spec.run.schemes[0]
    meas = simrun.run_sim(spec, scheme, 1, str(tmp_path / "run"))
    assert meas.sim.pfc_drops == meas.sim.port_drops == 0 and meas.sim.pauses > 0
    recv = RunFolder(str(tmp_path / "run")).host_records(FlowReceived)
    assert sorted(r.bytes for r in recv) == [1 << 20, 1 << 20]


def test_a_lossless_run_reports_its_pauses_in_the_summary_tables_trace_and_console(
        tmp_path, capsys):
    _, meas, _ = run(tmp_path, [PFC], "pfc")
    summary = report.summarize(str(tmp_path), plots=False)
    (r,) = summary.runs
    assert r.fidelity.faithful, r.fidelity.reasons
    x = r.lossless
    assert (x.pauses, x.resumes, x.drops) == (meas.sim.pauses, meas.sim.resumes, 0)
    assert x.ports_paused == 2 and x.paused_s == pytest.approx(sum(meas.sim.paused_s.values()))
    assert x.max_paused_s == max(meas.sim.paused_s.values())

    rundir = str(tmp_path / "pfc")
    export.write_run(rundir, force=True)
    with open(os.path.join(rundir, "pauses.csv")) as f:
        rows = list(csv.DictReader(f))
    for port, paused in meas.sim.paused_s.items():      # every interval, to the ns
        mine = [row for row in rows if row["port"] == port]
        assert mine and {row["node"] for row in mine} == {port.split("-")[0]}
        total = sum(float(row["end_s"]) - float(row["start_s"]) for row in mine)
        assert total == pytest.approx(paused, abs=1e-6 * len(mine))
    with open(os.path.join(rundir, "trace.json")) as f:
        ev = json.load(f)["traceEvents"]
    slices = [e for e in ev if e.get("cat") == "pfc"]
    assert len(slices) == len(rows)
    assert sum(e["dur"] for e in slices) == pytest.approx(x.paused_s * 1e6, rel=1e-6)

    with open(page.run_page(r)) as f:
        html = f.read()
    assert "Lossless fabric (PFC)" in html and f"<td>{x.pauses}</td>" in html
    assert 'href="pauses.csv"' in html

    console.print_tables(summary, summary.scale.dilation)     # what `report` prints
    assert (
        f"lossless fabric (PFC): 1 of 1 runs paused ({x.pauses} PAUSE frames, 2 ports and "
        f"{x.paused_s * 1e3:.1f} port-ms paused at most in one run); 0 dropped"
    ) in capsys.readouterr().out.splitlines()
    assert x.pauses > 50 and x.paused_s > 2.4          # the arithmetic's 2 x 1.2532 s


def test_a_drop_tail_run_has_no_lossless_part(tmp_path):
    run(tmp_path, ['topology.flow_control="drop"'], "drop")
    (r,) = report.summarize(str(tmp_path), plots=False).runs
    assert r.lossless is None


def test_a_spine_pauses_the_leaves_and_they_pause_their_hosts(tmp_path):
    """tests/test_pfc_emulation.py's spine incast, simulated: h0 (leaf0) and h1 (leaf1)
    into h2 (leaf2) through one spine. The spine's port toward leaf2 is the bottleneck;
    it pauses both leaves' uplinks, and they their hosts; nothing is dropped."""
    from tests.test_pfc_emulation import SPINE_INCAST
    path = tmp_path / "spine.toml"
    path.write_text(SPINE_INCAST)
    rundir = str(tmp_path / "run")
    meas = simrun.run_sim(load(str(path)), "baseline", 1, rundir)
    folder = RunFolder(rundir)
    assert meas.sim.port_drops == meas.sim.pfc_drops == 0
    assert sum(f.retransmits + f.timeouts for f in folder.host_records(FlowSent)) == 0
    spine = {r.port: r for r in folder.agent_records("spine0", PortPause)}
    assert sum(1 for r in spine.values() if r.pauses_tx) == 2
    for sw in ("leaf0", "leaf1"):
        up = [r for r in folder.agent_records(sw, PortPause) if r.pauses_rx]
        assert len(up) == 1 and up[0].paused_s > 0.1, sw
    assert {"h0-eth0", "h1-eth0"} <= {r.port for r in folder.host_records(PortPause)}
