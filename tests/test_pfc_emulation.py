"""The emulated lossless fabric (root; switch_agent/lossless.py, hosts/nic.py) on
tests/test_sim_pfc.py's two-into-one incast -- Fig 9's dumbbell, h0 and h1 send 1 MiB
each to h2 from t = 0 at line rate, no congestion control, RED off -- with real PAUSE
frames: leaf0's agent sends them out of its ports toward h0 and h1, their NICs stop.

It must end as the simulation does: no drop, no retransmission, both messages whole,
each sender paused for about the time the arithmetic gives (1.2532 s; test_sim_pfc's
docstring), and every PAUSE a host counted is in the capture at its interface, decoded
by tshark as 802.1Qbb (MAC control opcode 0x0101, class 3).

Then the same incast one hop further up (``SPINE_INCAST``, 2 MiB each, a 1 MiB shared
buffer a switch so that the pause reaches the hosts): h0 on leaf0 and h1 on leaf1
send to h2 on leaf2 through the one spine, whose port toward leaf2 is the bottleneck;
the spine pauses the leaves, whose agents stop releasing toward it and, full in turn,
pause their hosts -- PAUSE between two switch agents, and its spread back to the
senders."""

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from emulator.rundir import RunFolder
from runtime.records import FlowReceived, FlowSent, PortPause
from topologies.wiring import REPO_ROOT

pytestmark = pytest.mark.emulation

FIG9 = os.path.join(REPO_ROOT, "runs", "fig9.toml")
SETS = ["messages.0.start_ms=0.0", "switch.red=false", 'transport.congestion_control="none"',
        'topology.flow_control="pfc"', "variants=[]", "paper=[]"]
RATE = 10e9 / 2000
FRAME_S = 4154 * 8 / RATE             # 6.6464 ms
PAUSED_S = 1.2532                     # each sender, by test_sim_pfc's arithmetic
SPINE_INCAST = ('name = "spine-incast"\n[scale]\ndilation = 2000\n'
                '[topology]\nkind = "leafspine"\nleaves = 3\nspines = 1\nhosts_per_leaf = 1\n'
                'link_rate_gbps = 10.0\nflow_control = "pfc"\n'
                '[pfc]\nbuffer_bytes = 1048576\n'
                '[transport]\ncongestion_control = "none"\n[switch]\nred = false\n'
                '[[messages]]\nsrc = "h0"\ndst = "h2"\nbytes = 2097152\n'
                '[[messages]]\nsrc = "h1"\ndst = "h2"\nbytes = 2097152\n'
                '[run]\nschemes = ["baseline"]\nseeds = [1]\ntimeout_s = 120\n')


@pytest.fixture(scope="module")
def incast(tmp_path_factory):
    out = tmp_path_factory.mktemp("pfc") / "out"
    args = [a for s in SETS for a in ("--set", s)]
    p = subprocess.run([sys.executable, "-m", "emulator.cli", "run", FIG9, "--seeds", "1",
                        "--scheme", "baseline", "--no-plots", "--pcap", "h0,h1",
                        "--out", str(out), *args],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return out / "baseline-seed1", p.stdout


def test_the_incast_ends_without_a_drop_and_is_faithful(incast):
    rundir, stdout = incast
    folder = RunFolder(str(rundir))
    recv = folder.host_records(FlowReceived)
    assert len(recv) == 2 and all(r.bytes == 1 << 20 for r in recv)
    assert sum(f.retransmits + f.timeouts for f in folder.host_records(FlowSent)) == 0
    (run,) = json.loads((rundir.parent / "summary.json").read_text())["runs"]
    assert run["fidelity"]["faithful"], run["fidelity"]["reasons"]
    assert run["lossless"]["drops"] == 0 and run["transport"]["switch_drops"] == 0
    assert "lossless fabric (PFC): 1 of 1 runs paused" in stdout
    assert "switch drops (lossless): 0 of 1 runs" in stdout


def test_each_sender_is_paused_about_as_long_as_the_arithmetic_says(incast):
    rundir, _ = incast
    folder = RunFolder(str(rundir))
    hosts = {r.port: r for r in folder.host_records(PortPause)}
    assert set(hosts) == {"h0-eth0", "h1-eth0"}
    print("\npaused: " + ", ".join(f"{p} {r.paused_s:.4f} s ({r.pauses_rx} PAUSE, "
                                    f"{r.resumes_rx} XON)" for p, r in sorted(hosts.items())))
    for r in hosts.values():   # the emulated MMU counts a frame out at its qdisc's door
        assert r.paused_s == pytest.approx(PAUSED_S, abs=6 * FRAME_S), r.paused_s
        assert r.pauses_rx >= r.resumes_rx > 20
    leaf = {r.port: r for r in folder.agent_records("leaf0", PortPause)}
    assert set(leaf) == {"leaf0-eth1", "leaf0-eth2"}
    for port, host in (("leaf0-eth1", "h0-eth0"), ("leaf0-eth2", "h1-eth0")):
        assert (leaf[port].pauses_tx, leaf[port].resumes_tx) == \
            (hosts[host].pauses_rx, hosts[host].resumes_rx)
        assert leaf[port].drops == 0
    with open(rundir / "pauses.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["port"] for r in rows} == set(hosts)
    assert all(0 <= float(r["start_s"]) < float(r["end_s"]) < 4.0 for r in rows)


def test_tshark_decodes_every_pause_in_the_capture_as_pfc(incast):
    rundir, _ = incast
    if shutil.which("tshark") is None:
        pytest.skip("tshark is not installed (scripts/setup.sh installs it)")
    folder = RunFolder(str(rundir))
    hosts = {r.port: r for r in folder.host_records(PortPause)}
    for h in ("h0", "h1"):
        out = subprocess.run(["tshark", "-r", str(rundir / f"{h}.pcapng"), "-Y",
                              "macc.opcode == 0x0101", "-T", "fields", "-e",
                              "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        frames = [line.split("\t") for line in out.stdout.splitlines() if line.strip()]
        assert frames and all(vector == "0x0008" for vector, _ in frames)   # class 3 only
        xoff = sum(q == "65535" for _, q in frames)
        xon = sum(q == "0" for _, q in frames)
        assert xoff + xon == len(frames)
        r = hosts[f"{h}-eth0"]
        assert (xoff, xon) == (r.pauses_rx, r.resumes_rx)


@pytest.fixture(scope="module")
def spine_incast(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pfc-spine")
    spec = tmp / "spine-incast.toml"
    spec.write_text(SPINE_INCAST)
    p = subprocess.run([sys.executable, "-m", "emulator.cli", "run", str(spec), "--no-plots",
                        "--out", str(tmp / "out")],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return tmp / "out" / "baseline-seed1"


def test_a_spine_pauses_the_leaves_and_they_pause_their_hosts_without_a_drop(spine_incast):
    folder = RunFolder(str(spine_incast))
    recv = folder.host_records(FlowReceived)
    assert len(recv) == 2 and all(r.bytes == 2 << 20 for r in recv)
    assert sum(f.retransmits + f.timeouts for f in folder.host_records(FlowSent)) == 0
    spine = {r.port: r for r in folder.agent_records("spine0", PortPause)}
    leaves = {sw: {r.port: r for r in folder.agent_records(sw, PortPause)}
              for sw in ("leaf0", "leaf1")}
    print("\n" + "; ".join(f"{p}: {r.pauses_tx} XOFF out" for p, r in sorted(spine.items()))
          + "; " + "; ".join(f"{p}: paused {r.paused_s:.3f} s" for ports in leaves.values()
                             for p, r in sorted(ports.items()) if r.pauses_rx))
    sent = {p: r.pauses_tx for p, r in spine.items() if r.pauses_tx}
    assert len(sent) == 2, spine                       # toward leaf0 and leaf1
    for sw, ports in leaves.items():                   # each leaf's uplink was paused ...
        up = [r for r in ports.values() if r.pauses_rx]
        assert len(up) == 1 and up[0].paused_s > 0.1, (sw, ports)
        assert all(r.drops == 0 for r in ports.values())
    assert sum(sent.values()) == sum(r.pauses_rx for ports in leaves.values()
                                     for r in ports.values())
    hosts = {r.port: r for r in folder.host_records(PortPause)}
    assert {"h0-eth0", "h1-eth0"} <= set(hosts)        # ... and paused its host in turn
    assert all(r.drops == 0 for r in spine.values())
