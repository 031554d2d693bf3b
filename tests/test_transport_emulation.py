"""Emulation tests of the host transport: go-back-N + DCQCN over the fabric (root)."""

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from emulator.launch.fabric import LiveFabric
from emulator.plan import transport_params
from emulator.plan.messages import Message
from emulator.spec.schema import Spec
from hosts.cc import CcConfig
from runtime.records import FlowReceived, FlowSent, PortSample
from runtime.scale import DEFAULT as DEFAULT_SCALE, PAPER_LINK_RATE_BPS
from runtime.telemetry import read_records
from tests.conftest import _root_veths
from tests.fabric_util import read_flows, run_messages
from topologies import wiring
from topologies.dumbbell import DumbbellTopo

pytestmark = pytest.mark.emulation

RATE = wiring.DEFAULT_RATE_BPS
CC = CcConfig.default("dcqcn_paper", PAPER_LINK_RATE_BPS, DEFAULT_SCALE)
TRANSPORT = transport_params(Spec(name="transport", path=""), DEFAULT_SCALE)
TO_H2 = wiring.leaf_port_to_host(0, 2)
KMIN, KMAX = 50_000, 100_000


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """h0, h1, h2 on one switch, Symphony off (these tests are about the transport)."""
    rundir = str(tmp_path_factory.mktemp("transport"))
    veths = _root_veths()
    fab = LiveFabric(DumbbellTopo(3, rundir=rundir))        # baseline agents: RED only
    fab.start()
    fab.rundir = rundir
    yield fab
    fab.stop()
    assert not fab.leftovers and _root_veths() <= veths


def _reset(fab):
    fab.agent("leaf0", {"cmd": "red", "enabled": True, "kmin_bytes": KMIN, "kmax_bytes": KMAX,
                        "pmax": 0.2})
    fab.agent("leaf0", {"cmd": "drop_fraction", "value": 0.0})


def test_one_flow_reaches_line_rate(net, tmp_path):
    _reset(net)
    res = run_messages(net, [Message("h0", "h1", 2_000_000)], str(tmp_path), cc=CC, transport=TRANSPORT)
    assert all(r["ok"] for r in res.values()), res
    [snd] = read_flows(str(tmp_path), FlowSent)
    goodput = snd.bytes * 8 / (snd.end_s - snd.start_s)
    pacing = res["h0"]["pacing"]
    print(f"\none flow: goodput {goodput / 1e6:.2f} Mbit/s = {goodput / RATE:.1%} of the "
          f"{RATE / 1e6:.0f} Mbit/s line rate (payload bytes, first send to last ACK); "
          f"pacing late mean {pacing['mean_late_s'] * 1e3:.2f} ms, "
          f"max {pacing['max_late_s'] * 1e3:.2f} ms")
    assert goodput >= 0.9 * RATE
    assert snd.retransmits == 0 and snd.cnps == 0


def _jain(xs):
    xs = np.asarray(xs, dtype=float)
    return xs.sum() ** 2 / (len(xs) * (xs ** 2).sum())


def _bytes_at(samples, t):
    """Delivered bytes at time t from (time, cumulative bytes) samples."""
    ts, bs = zip(*samples)
    return float(np.interp(t, ts, bs))


def test_two_flows_share_a_bottleneck_fairly(net, tmp_path):
    _reset(net)
    before = net.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][TO_H2]
    t_begin = time.monotonic()
    res = run_messages(net, [Message("h0", "h2", 8_000_000), Message("h1", "h2", 8_000_000)],
                       str(tmp_path), cc=CC, transport=TRANSPORT)
    assert all(r["ok"] for r in res.values()), res
    recv = read_flows(str(tmp_path), FlowReceived)
    send = read_flows(str(tmp_path), FlowSent)
    t0 = max(f.start_s for f in recv)
    t1 = min(f.end_s for f in recv)
    mid = (t0 + t1) / 2
    rates = [(_bytes_at(f.goodput_samples, t1) - _bytes_at(f.goodput_samples, mid)) * 8
             / (t1 - mid) for f in recv]
    jain = _jain(rates)
    cnps = [f.cnps for f in send]
    after = net.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][TO_H2]
    q = np.array([r.max_q_bytes for r in read_records(os.path.join(net.rundir, "leaf0.jsonl"),
                                                       PortSample)
                  if r.port == TO_H2 and t_begin <= r.t_s <= t1])
    busy = q[q > 0]
    below, between, above = (busy < KMIN).mean(), ((busy >= KMIN) & (busy <= KMAX)).mean(), \
        (busy > KMAX).mean()
    print(f"\ntwo flows: second-half rates {[round(r / 1e6, 2) for r in rates]} Mbit/s, "
          f"Jain {jain:.3f}; CNPs {cnps}; queue while busy ({len(busy)} samples of 10 ms): "
          f"{below:.0%} below Kmin, {between:.0%} between, {above:.0%} above Kmax, "
          f"max {busy.max() / 1e3:.0f} KB; RED marks "
          f"{after['marks_red'] - before['marks_red']}")
    assert jain >= 0.9
    assert all(c > 0 for c in cnps), "CNPs must flow to both senders"
    assert after["model_drops"] == before["model_drops"], "DCQCN must keep the buffer from overflowing"
    assert above <= 0.2, "the queue must stay at or below Kmax most of the time"


def test_without_congestion_control_two_flows_overflow_the_port_and_still_arrive(net, tmp_path):
    """``transport.congestion_control = "none"``: the same two flows as above, sent at line
    rate whatever the CNPs say — the ablation of what DCQCN buys. The receiver still
    sends CNPs, the senders never cut, the 512 KB port overflows, and go-back-N still
    delivers every byte."""
    _reset(net)
    none = CcConfig.default("none", PAPER_LINK_RATE_BPS, DEFAULT_SCALE)
    before = net.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][TO_H2]
    res = run_messages(net, [Message("h0", "h2", 4_000_000), Message("h1", "h2", 4_000_000)],
                       str(tmp_path), cc=none, transport=TRANSPORT)
    after = net.agent("leaf0", {"cmd": "stats"})["counters"]["ports"][TO_H2]
    assert all(r["ok"] for r in res.values()), res
    send = read_flows(str(tmp_path), FlowSent)
    drops = after["model_drops"] - before["model_drops"]
    print(f"\nno congestion control: CNPs {[f.cnps for f in send]}, cuts "
          f"{[f.cuts for f in send]}, port drops {drops}, retransmits "
          f"{[f.retransmits for f in send]}")
    assert all(f.cnps > 0 for f in send), "the receiver still notifies"
    assert all(f.cuts == 0 and f.final_rate_bps == pytest.approx(RATE) for f in send)
    assert drops > 0 and sum(f.retransmits for f in send) > 0


def test_every_message_arrives_byte_exact_with_1pct_loss(net, tmp_path):
    _reset(net)
    net.agent("leaf0", {"cmd": "drop_fraction", "value": 0.01})
    try:
        msgs = [Message("h0", "h2", 1_500_000), Message("h1", "h2", 1_000_000, step=3),
                Message("h2", "h0", 700_000, channel=2), Message("h0", "h1", 5_000)]
        res = run_messages(net, msgs, str(tmp_path), cc=CC, transport=TRANSPORT)
    finally:
        net.agent("leaf0", {"cmd": "drop_fraction", "value": 0.0})
    assert all(r["ok"] for r in res.values()), res          # byte-exact, exactly once
    send = read_flows(str(tmp_path), FlowSent)
    recv = read_flows(str(tmp_path), FlowReceived)
    retx = sum(f.retransmits for f in send)
    dropped = net.agent("leaf0", {"cmd": "stats"})["counters"]["total"]["fault_drops"]
    print(f"\n1 % loss: {dropped} packets dropped by the agent, {retx} retransmissions, "
          f"{sum(f.naks for f in send)} NAKs, {sum(f.timeouts for f in send)} timeouts; "
          f"{len(recv)} messages delivered byte-exact")
    assert dropped > 0 and retx > 0
    assert len(recv) == len(msgs)


def _capture(net, tmp_path, kmin=0, kmax=1):
    """A transfer to h2 captured on h2's interface, with RED marking every ECT packet that
    finds a queue (so CNPs flow)."""
    _reset(net)
    net.agent("leaf0", {"cmd": "red", "kmin_bytes": kmin, "kmax_bytes": kmax})
    pcap = str(tmp_path / "h2.pcap")
    dump = net["h2"].popen(["tcpdump", "-i", "h2-eth0", "-s", "0", "-U", "-w", pcap,
                            "udp port 4791"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)
    try:
        res = run_messages(net, [Message("h0", "h2", 300_000), Message("h1", "h2", 300_000)],
                           str(tmp_path / "run"), cc=CC, transport=TRANSPORT)
    finally:
        time.sleep(0.5)
        dump.terminate()
        dump.wait(10)
        _reset(net)
    assert all(r["ok"] for r in res.values()), res
    return pcap


def test_capture_dissects_as_roce_in_scapy(net, tmp_path):
    from scapy.contrib.roce import AETH, BTH, CNPPadding
    from scapy.layers.inet import IP
    from scapy.utils import rdpcap

    pkts = [p for p in rdpcap(_capture(net, tmp_path)) if p.haslayer(BTH)]
    kinds = {"data": 0, "ack": 0, "cnp": 0}
    for p in pkts:
        bth = p[BTH]
        assert bth.compute_icrc(None) == bytes(p[IP])[-4:], p.summary()   # valid ICRC
        if bth.opcode in (0x00, 0x01, 0x02, 0x04):
            kinds["data"] += 1
            assert bth.pkey & 0x8000 and p[IP].tos & 3 in (2, 3)
        elif bth.opcode == 0x11:
            assert p.haslayer(AETH)
            kinds["ack"] += 1
        elif bth.opcode == 0x81:
            assert bth.becn == 1 and p.haslayer(CNPPadding)
            kinds["cnp"] += 1
    print(f"\ncapture: {kinds}")
    assert all(kinds.values()), kinds


@pytest.mark.skipif(shutil.which("tshark") is None,
                    reason="tshark is not installed (apt-get install tshark)")
def test_capture_dissects_as_roce_in_tshark(net, tmp_path):
    pcap = _capture(net, tmp_path)
    out = subprocess.run(["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
                          "-e", "infiniband.bth.opcode", "-e", "infiniband.invariant.crc"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    opcodes = [line.split("\t")[0] for line in out.stdout.splitlines() if line.strip()]
    seen = {int(o, 0) for o in opcodes if o}
    print(f"\ntshark: {len(opcodes)} packets, opcodes {sorted(hex(o) for o in seen)}")
    assert {0x11, 0x81} <= seen and seen & {0x00, 0x01, 0x02, 0x04}


def test_nic_scheduler_shares_the_line_rate_round_robin(net, tmp_path):
    """Two flows from one host to two receivers: the host's send loop serves both, the sum
    stays at the line rate (the host's own shaper never has to drop or queue much)."""
    _reset(net)
    qdisc_before = net["h0"].cmd("tc -s -j qdisc show dev h0-eth0")
    res = run_messages(net, [Message("h0", "h1", 2_000_000), Message("h0", "h2", 2_000_000)],
                       str(tmp_path), cc=CC, transport=TRANSPORT)
    assert all(r["ok"] for r in res.values()), res
    send = read_flows(str(tmp_path), FlowSent)
    start = min(f.start_s for f in send)
    end = max(f.end_s for f in send)
    total = sum(f.bytes for f in send) * 8 / (end - start)
    durations = [f.end_s - f.start_s for f in send]
    import json
    drops = [q["drops"] for q in json.loads(net["h0"].cmd("tc -s -j qdisc show dev h0-eth0"))
             if q["kind"] == "bfifo"][0] - \
        [q["drops"] for q in json.loads(qdisc_before) if q["kind"] == "bfifo"][0]
    print(f"\nNIC scheduler: two flows together {total / 1e6:.2f} Mbit/s "
          f"({total / RATE:.1%} of line rate), durations {[round(d, 2) for d in durations]} s, "
          f"host qdisc drops {drops}, pacing late mean "
          f"{res['h0']['pacing']['mean_late_s'] * 1e3:.2f} ms")
    assert 0.9 * RATE <= total <= 1.0 * RATE
    assert max(durations) / min(durations) < 1.1, "round-robin: both finish together"
    assert drops == 0
