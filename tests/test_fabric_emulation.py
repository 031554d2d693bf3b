"""Emulation tests of the fabric and the switch agents (root; marker `emulation`)."""

import json
import os
import subprocess
import sys
import time

import pytest

from emulator.launch.fabric import LiveFabric
from runtime.records import AgentFinal
from runtime.telemetry import read_records
from tests.conftest import _root_veths
from tests.fabric_util import ENV, REPO_ROOT, finish, run_streams, start_receiver
from topologies import wiring
from topologies.dumbbell import DumbbellTopo
from topologies.leafspine import LeafSpineTopo

pytestmark = pytest.mark.emulation

RATE = wiring.DEFAULT_RATE_BPS               # 10 Mbit/s: the paper's 10 Gbps at D = 1000
SLOW_PORT = wiring.leaf_port_to_host(0, 1)   # dumbbell: the switch port towards h1
RED_DEFAULT = {"cmd": "red", "enabled": True, "kmin_bytes": 50_000, "kmax_bytes": 100_000,
               "pmax": 0.2}


def _assert_clean(fab, veths_before):
    assert not fab.leftovers, f"teardown had to remove: {fab.leftovers}"
    for name, pid in list(fab.pids.items()) + list(fab.agent_pids.items()):
        assert not os.path.exists(f"/proc/{pid}"), f"process {pid} ({name}) still there"
    assert _root_veths() <= veths_before


@pytest.fixture(scope="module")
def dumbbell(tmp_path_factory):
    """h0, h1, h2 on one switch; the port towards h1 runs at half the link rate."""
    rundir = str(tmp_path_factory.mktemp("dumbbell"))
    veths = _root_veths()
    fab = LiveFabric(DumbbellTopo(3, rundir=rundir, port_rates={"leaf0": {SLOW_PORT: RATE / 2}}))
    fab.start()
    yield fab
    fab.stop()
    _assert_clean(fab, veths)
    final = read_records(os.path.join(rundir, "leaf0.jsonl"), AgentFinal)
    assert len(final) == 1 and final[0].counters["total"]["pkts"] > 0


def _reset(fab, switch="leaf0"):
    fab.agent(switch, RED_DEFAULT)
    fab.agent(switch, {"cmd": "symphony", "enabled": True, "k": 0.01})
    fab.agent(switch, {"cmd": "drop_fraction", "value": 0.0})
    return fab.agent(switch, {"cmd": "stats"})["counters"]["total"]


def _delta(fab, before, switch="leaf0"):
    after = fab.agent(switch, {"cmd": "stats"})["counters"]["total"]
    return {k: after[k] - before[k] for k in before}


def _send(src_ip, dst_ip, packets, rate, **kw):
    args = ["--src", src_ip, "--dst", dst_ip, "--packets", packets, "--rate-bps", rate]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}"] + ([] if v is True else [v])
    return args


H = [wiring.host_ip(0, i) for i in range(3)]


def test_stream_above_bottleneck_rate_gets_red_marks(dumbbell):
    before = _reset(dumbbell)
    [rx], _ = run_streams([(dumbbell["h1"], H[1])],
                          [(dumbbell["h0"], _send(H[0], H[1], 150, 0.8 * RATE))])
    d = _delta(dumbbell, before)
    st = rx["steps"]["1/0"]
    assert st["pkts"] == 150 and rx["bad_icrc"] == 0
    assert st["ce"] > 0 and d["marks_red"] + d["marks_both"] == st["ce"]
    assert d["marks_symphony"] == 0


def test_stream_below_bottleneck_rate_gets_no_marks(dumbbell):
    before = _reset(dumbbell)
    [rx], _ = run_streams([(dumbbell["h1"], H[1])],
                          [(dumbbell["h0"], _send(H[0], H[1], 80, 0.3 * RATE))])
    d = _delta(dumbbell, before)
    assert rx["steps"]["1/0"] == {**rx["steps"]["1/0"], "pkts": 80, "ce": 0}
    assert d["marks_red"] + d["marks_symphony"] + d["marks_both"] == 0


def test_symphony_marks_the_later_step_never_the_earlier(dumbbell):
    """Two flows of one job through one uncongested port: step 0 (lagging) and step 1
    (outpacing). RED cannot fire (no queue); Symphony marks only step 1."""
    _reset(dumbbell)
    fab = dumbbell
    fab.agent("leaf0", {"cmd": "red", "enabled": False})
    reply = fab.agent("leaf0", {"cmd": "symphony", "k": 1.0})
    assert reply["k"] == 1.0
    before = fab.agent("leaf0", {"cmd": "stats"})["counters"]["total"]
    [rx], _ = run_streams(
        [(fab["h2"], H[2])],
        [(fab["h0"], _send(H[0], H[2], 120, 0.4 * RATE, step=0, no_last=True)),
         (fab["h1"], _send(H[1], H[2], 120, 0.4 * RATE, step=1, sport=50000))])
    d = _delta(fab, before)
    lagging, outpacing = rx["steps"]["1/0"], rx["steps"]["1/1"]
    assert lagging["pkts"] == outpacing["pkts"] == 120
    assert lagging["ce"] == 0
    assert outpacing["ce"] > 0 and d["marks_symphony"] == outpacing["ce"]
    assert d["marks_red"] == d["marks_both"] == 0

    # Switched off while running: the same traffic gets no marks at all.
    fab.agent("leaf0", {"cmd": "symphony", "enabled": False})
    before = fab.agent("leaf0", {"cmd": "stats"})["counters"]["total"]
    [rx], _ = run_streams(
        [(fab["h2"], H[2])],
        [(fab["h0"], _send(H[0], H[2], 40, 0.4 * RATE, step=0, no_last=True)),
         (fab["h1"], _send(H[1], H[2], 40, 0.4 * RATE, step=1, sport=50000))])
    assert rx["steps"]["1/1"]["ce"] == 0 and _delta(fab, before)["marks_symphony"] == 0


_PROBE_RECEIVER = r"""
import json, socket, select, sys, time
socks = []
for port in (4791, 5000):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, 13, 1)        # IP_RECVTOS
    s.bind((sys.argv[1], port)); socks.append(s)
print("ready", flush=True)
got, deadline = [], time.monotonic() + 10
while time.monotonic() < deadline and len(got) < int(sys.argv[2]):
    for s in select.select(socks, [], [], 0.2)[0]:
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(4))
        tos = [v[0] for l, k, v in anc if k == socket.IP_TOS]
        got.append([s.getsockname()[1], data.hex(), tos[0] if tos else None])
print(json.dumps(got), flush=True)
"""

_PROBE_SENDER = r"""
import socket, sys
from runtime import wire
src, dst = sys.argv[1], sys.argv[2]
data = wire.build_data(1, 0, 0, 5, wire.OP_SEND_MIDDLE, b"x" * 64)
ack = wire.build_ack(wire.pkey_of(1), wire.dest_qp(0, 0), 5)
probes = [(4791, 2, wire.with_icrc(src, dst, 40000, data)),       # valid RoCE, ECT(0)
          (5000, 2, b"not roce at all"),                           # other UDP port
          (4791, 2, b"\x00\x01\x02"),                              # too short for a BTH
          (4791, 2, wire.with_icrc(src, dst, 40000, ack)),         # ACK: not a data packet
          (4791, 0, wire.with_icrc(src, dst, 40000, data))]        # RoCE but Not-ECT
# Eight full-size packets first use up the port's token bucket and build a queue at the
# (half-rate) egress port, so the probes that follow them find it (and RED, with kmin 0,
# marks what it may).
filler = wire.with_icrc(src, dst, 39999, wire.build_data(1, 0, 9, 0, wire.OP_SEND_MIDDLE,
                                                         bytes(4096)))
f = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
f.setsockopt(socket.IPPROTO_IP, 10, 2); f.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
f.bind((src, 39999))
socks = []
for i, (port, ecn, payload) in enumerate(probes):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, 10, 2)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ecn)
    s.bind((src, 40000 + i)); socks.append(s)
for _ in range(8):
    f.sendto(filler, (dst, 4791))
for s, (port, ecn, payload) in zip(socks, probes):
    s.sendto(payload, (dst, port))
print("[" + ",".join('[%d,"%s",%d]' % (p, pl.hex(), e) for p, e, pl in probes)
      + ',[4791,"%s",2]]' % filler.hex())
"""


def test_non_roce_and_malformed_packets_pass_unmodified(dumbbell):
    fab = dumbbell
    _reset(fab)
    # RED that marks every ECT RoCE data packet: only those may change.
    fab.agent("leaf0", {"cmd": "red", "kmin_bytes": 0, "kmax_bytes": 1})
    # Towards h1, the half-rate port: the fillers, paced at the full rate by h0's NIC, are
    # sure to leave a queue there (towards h2 they arrive exactly as fast as the port
    # drains, and a probe could find the queue empty and its token bucket refilled).
    rx = fab["h1"].popen([sys.executable, "-c", _PROBE_RECEIVER, H[1], "13"],
                         stdout=subprocess.PIPE, text=True, env=ENV, cwd=REPO_ROOT)
    assert rx.stdout.readline().strip() == "ready"
    tx = fab["h0"].popen([sys.executable, "-c", _PROBE_SENDER, H[0], H[1]],
                         stdout=subprocess.PIPE, text=True, env=ENV, cwd=REPO_ROOT)
    sent = json.loads(tx.communicate(timeout=20)[0])
    filler, sent = sent[-1][1], sent[:-1]
    got = json.loads(rx.communicate(timeout=20)[0].strip().splitlines()[-1])
    assert len(got) == 13, got
    got = [g for g in got if g[1] != filler]
    # Two sockets are read with select: order holds per port, not across ports.
    for port in (4791, 5000):
        assert [(pl, t) for p, pl, t in got if p == port] == \
            [(pl, expect) for (p, pl, _), expect in zip(sent, [3, 2, 2, 2, 0]) if p == port], \
            "payload changed, or a packet other than the ECT RoCE data packet was CE-marked"
    assert fab.agent("leaf0", {"cmd": "stats"})["counters"]["total"]["not_ect_unmarked"] >= 1
    _reset(fab)


def test_fault_knob_drops_the_given_fraction(dumbbell):
    fab = dumbbell
    before = _reset(fab)
    fab.agent("leaf0", {"cmd": "drop_fraction", "value": 0.3})
    [rx], _ = run_streams([(fab["h2"], H[2])], [(fab["h0"], _send(H[0], H[2], 200, 0.5 * RATE))])
    d = _delta(fab, before)
    got = rx["steps"]["1/0"]["pkts"]
    assert got + d["fault_drops"] == 200
    assert 200 * 0.3 - 25 <= d["fault_drops"] <= 200 * 0.3 + 25   # ~4.4 sigma
    _reset(fab)


def _tc_backlog(node, intf):
    out = node.cmd(f"tc -s -j qdisc show dev {intf}")
    for q in json.loads(out):
        if q.get("kind") == "bfifo":
            return q["backlog"]
    raise AssertionError(out)


FRAME = 4140 + 14                    # the largest frame these tests send, as HTB charges it


def _sample(fab):
    """The agent's model read before and after one ``tc`` reading of the kernel's FIFO:
    (model before, kernel, model after). ``tc`` runs through the node's shell, a process
    spawn that takes ~5 ms and, on a loaded machine, sometimes far longer, so the kernel's
    reading falls anywhere between the two model readings."""
    m1 = fab.agent("leaf0", {"cmd": "stats"})["queues"][SLOW_PORT]
    k = _tc_backlog(fab["leaf0"], SLOW_PORT)
    m2 = fab.agent("leaf0", {"cmd": "stats"})["queues"][SLOW_PORT]
    return m1, k, m2


def _model_error(m1, k, m2):
    """How far the model is from where it should be: the gap between the model over the
    reading ([m1, m2] either way round) and the band [k, k + FRAME]. The kernel's FIFO
    gives up a whole frame when the shaper starts sending it; the fluid model drains it
    while it is sent, so it reads up to a frame (half a frame on average: measured
    +2.2 KB with these 4154 B frames) above ``tc``'s backlog."""
    return max(0.0, k - max(m1, m2), min(m1, m2) - (k + FRAME))


def _judge(samples, label):
    busy = [s for s in samples if s[1] > 20_000]
    assert len(busy) >= 5, samples
    errors = [_model_error(*s) for s in busy]
    signed = [(m1 + m2) / 2 - k for m1, k, m2 in busy]
    mean_err = sum(errors) / len(errors)
    print(f"\n{label}: {len(busy)} samples, peak {max(k for _, k, _ in busy)} B; model - kernel "
          f"{sum(signed) / len(signed):+.0f} B on average; outside the frame in service: "
          f"mean {mean_err:.0f} B, max {max(errors):.0f} B")
    assert mean_err <= FRAME / 4, f"mean error {mean_err:.0f} B over {len(busy)} samples"
    assert max(errors) <= 1.5 * FRAME, [round(e) for e in errors]


def test_queue_model_follows_kernel_backlog(dumbbell):
    """Sample the agent's model and the kernel's FIFO backlog side by side while a stream
    above the port's rate builds a queue, then drains it."""
    fab = dumbbell
    _reset(fab)
    rx = start_receiver(fab["h1"], H[1])
    from tests.fabric_util import blast
    tx = blast(fab["h0"], "send", *_send(H[0], H[1], 150, 0.8 * RATE))
    samples = []
    while tx.poll() is None or (samples and samples[-1][1] > 0):
        samples.append(_sample(fab))
        time.sleep(0.05)
        if len(samples) > 400:
            break
    finish(tx)
    finish(rx)
    _judge(samples, "queue model vs tc backlog")
    # The agent's own fidelity monitor saw the same: a small model error, and the busy
    # port sending at its rate (Mininet-HiFi's invariant).
    mon = fab.agent("leaf0", {"cmd": "stats"})["fidelity"][SLOW_PORT]
    print("agent's fidelity monitor:", mon)
    assert mon["queue_samples"] >= 5 and mon["queue_err_mean_bytes"] <= FRAME
    assert mon["busy_intervals"] >= 3 and 0.95 <= mon["busy_util"] <= 1.05


@pytest.fixture(scope="module")
def leafspine(tmp_path_factory):
    rundir = str(tmp_path_factory.mktemp("leafspine"))
    veths = _root_veths()
    fab = LiveFabric(LeafSpineTopo(4, 4, 4, rundir=rundir))
    fab.start()
    yield fab
    fab.stop()
    _assert_clean(fab, veths)


def test_leafspine_every_host_reaches_every_other(leafspine):
    assert len(leafspine.hosts) == 16
    assert leafspine.net.pingAll(timeout="2") == 0.0


def _spine_roce_pkts(fab):
    return {name: r["counters"]["total"]["roce_pkts"]
            for name, r in fab.agents({"cmd": "stats"}).items() if name.startswith("spine")}


def test_ecmp_spreads_flows_over_all_spines(leafspine):
    fab = leafspine
    before = _spine_roce_pkts(fab)
    dst = wiring.host_ip(1, 0)
    [rx], _ = run_streams([(fab["h4"], dst)],
                          [(fab["h0"], _send(wiring.host_ip(0, 0), dst, 2, 0.5 * RATE,
                                             flows=48, payload=512))])
    assert sum(st["pkts"] for st in rx["steps"].values()) == 96
    after = _spine_roce_pkts(fab)
    per_spine = {s: after[s] - before[s] for s in after}
    print(f"\nECMP: packets per spine for 48 flows: {per_spine}")
    assert sum(per_spine.values()) == 96
    assert all(n > 0 for n in per_spine.values()), per_spine


def test_static_routing_puts_ring_r_on_spine_r(tmp_path, no_leftovers):
    fab = LiveFabric(LeafSpineTopo(2, 2, 2, routing="static", rundir=str(tmp_path)))
    no_leftovers.append(fab)
    with fab:
        for i in (0, 1):
            src, dst = wiring.host_ip(0, i), wiring.host_ip(1, i)
            before = _spine_roce_pkts(fab)
            run_streams([(fab[wiring.host_name(1, i, 2)], dst)],
                        [(fab[wiring.host_name(0, i, 2)],
                          _send(src, dst, 2, 0.5 * RATE, flows=16, payload=512))])
            after = _spine_roce_pkts(fab)
            assert {s: after[s] - before[s] for s in after} == \
                {f"spine{i}": 32, f"spine{1 - i}": 0}


def test_mn_custom_command_line_works(tmp_path):
    """The documented `mn --custom ... --controller none` use, with pingall."""
    veths = _root_veths()
    r = subprocess.run(["mn", "--custom", os.path.join(REPO_ROOT, "topologies", "leafspine.py"),
                        "--topo", "leafspine,2,2,1", "--controller", "none", "--test", "pingall"],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                       env=dict(os.environ, SYMPHONY_EMU_RUNDIR=str(tmp_path)))
    assert "Results: 0% dropped" in r.stdout + r.stderr, r.stdout + r.stderr
    assert _root_veths() <= veths


def test_background_traffic_fills_the_queue_model_and_triggers_red(dumbbell):
    """Non-RoCE traffic (iperf3 UDP) is charged to the queue model: a RoCE stream far
    below the port's rate gets RED marks only because background traffic fills the port,
    and the model follows the kernel's backlog meanwhile."""
    fab = dumbbell
    before = _reset(fab)
    srv = fab["h1"].popen(["iperf3", "-s", "-1", "-B", H[1]], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    rx = start_receiver(fab["h1"], H[1])
    from tests.fabric_util import blast
    # 0.6 + 0.05 of the link rate into a port of 0.5: the queue grows ~190 KB/s, for 2 s
    bg = fab["h0"].popen(["iperf3", "-c", H[1], "-u", "-b", str(int(0.6 * RATE)), "-l", "1400",
                          "-t", "2", "-B", H[0]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    tx = blast(fab["h0"], "send", *_send(H[0], H[1], 20, 0.05 * RATE, delay=0.5))
    samples = []
    while bg.poll() is None:
        samples.append(_sample(fab))
        time.sleep(0.05)
    finish(tx)
    roce = finish(rx)["steps"]["1/0"]
    srv.communicate(timeout=10)
    d = _delta(fab, before)
    assert d["other_pkts"] > 500, "iperf3's packets did not go through the agent"
    assert roce["pkts"] == 20 and roce["ce"] > 0, roce
    assert d["marks_red"] + d["marks_both"] == roce["ce"] and d["marks_symphony"] == 0
    print(f"\nbackground: RoCE CE {roce['ce']}/{roce['pkts']}")
    _judge(samples, "background: queue model vs tc backlog")
