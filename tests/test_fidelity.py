"""The fidelity monitor's pure parts: the qdisc dump parser, the per-port checks (queue
model vs kernel, Mininet-HiFi's busy-link invariant) and the run verdict built from them."""

import struct
from dataclasses import replace

import pytest

from emulator.analysis.summary import Transport
from emulator.analysis.verdict import fidelity
from emulator.measurements import AgentMeasurements, Measurements, SimStats, UnderlayUse
from switch_agent import kernel_queues as kq
from switch_agent.fidelity import PortFidelity
from tests.records_util import rank_summary

RATE_BPS = 5e6                     # 625 000 B/s


# --- the netlink parser ----------------------------------------------------------------

def attr(kind, body):
    data = struct.pack("=HH", 4 + len(body), kind) + body
    return data + b"\0" * (-len(data) % 4)


def qdisc_msg(ifindex, parent, kind, bytes_, backlog, drops=0, seq=1):
    body = kq._TCMSG.pack(0, ifindex, 0x10000, parent, 0)
    body += attr(kq.TCA_KIND, kind.encode() + b"\0")
    body += attr(kq.TCA_STATS, kq._TC_STATS.pack(bytes_, 10, drops, 0, 0, 0, 2, backlog))
    return kq._NLMSGHDR.pack(16 + len(body), kq.RTM_NEWQDISC, 2, seq, 0) + body


def done_msg():
    return kq._NLMSGHDR.pack(20, kq.NLMSG_DONE, 2, 1, 0) + b"\0" * 4


def test_a_dump_datagram_parses_into_qdiscs_and_done():
    data = (qdisc_msg(5, kq.TC_H_ROOT, "htb", 123456, 0)
            + qdisc_msg(5, 0x10001, "bfifo", 100000, 8280, drops=3) + done_msg())
    qs, done = kq.parse_dump(data)
    assert done
    assert qs == [kq.QdiscStats(5, "htb", True, 123456, 10, 0, 0),
                  kq.QdiscStats(5, "bfifo", False, 100000, 10, 3, 8280)]


def test_port_samples_take_sent_bytes_from_the_root_and_backlog_from_the_leaves():
    qs = [kq.QdiscStats(5, "htb", True, 5000, 5, 0, 9999),
          kq.QdiscStats(5, "bfifo", False, 4000, 4, 1, 4140),
          kq.QdiscStats(5, "bfifo", False, 900, 1, 2, 4140),      # pq: the second class
          kq.QdiscStats(7, "htb", True, 10, 1, 0, 0)]
    got = kq.port_samples(qs, [5, 7, 9])
    assert got == {5: kq.PortSample(5000, 8280, 3), 7: kq.PortSample(10, 0, 0)}


def test_an_error_message_raises():
    err = kq._NLMSGHDR.pack(36, kq.NLMSG_ERROR, 0, 1, 0) + struct.pack("=i", -1) + b"\0" * 16
    with pytest.raises(OSError):
        kq.parse_dump(err)


# --- per-port checks -------------------------------------------------------------------

def test_queue_error_counts_only_samples_with_a_queue():
    f = PortFidelity(RATE_BPS)
    f.sample(0.0, 0.0, 0.0, 0)             # idle: not a sample
    f.sample(0.1, 20_000, 16_000, 0)
    f.sample(0.2, 10_000, 12_000, 0)
    s = f.summary()
    assert s["queue_samples"] == 2
    assert s["queue_err_mean_bytes"] == 3000 and s["queue_err_max_bytes"] == 4000


def test_the_worst_sample_is_kept_with_both_sides():
    f = PortFidelity(RATE_BPS)
    f.sample(10.1, 20_000, 16_000, 0)
    f.sample(10.2, 2_000, 30_000, 0)       # the kernel's queue 28 KB longer
    f.sample(10.3, 10_000, 12_000, 0)
    assert f.summary()["queue_err_worst"] == {"t_s": 10.2, "model_bytes": 2_000,
                                              "kernel_bytes": 30_000}
    assert PortFidelity(RATE_BPS).summary()["queue_err_worst"] is None


def test_a_queue_model_flag_names_its_samples_and_which_side_held_more():
    port = {"queue_err_mean_bytes": 28_000, "queue_samples": 1,
            "queue_err_worst": {"t_s": 103.5, "model_bytes": 2_000, "kernel_bytes": 30_000}}
    f = fidelity(meas_with({"leaf3-eth6": port}, name="leaf3", t_start=100.0),
                 RATE_BPS, 4096, [1.2], [])
    assert f.reasons == [
        "leaf3:leaf3-eth6: the queue model is 28.0 KB off the kernel's backlog on average "
        "(> 2 frames) over 1 sample; the worst at t = 3.50 s: model 2.0 KB, kernel 30.0 KB "
        "(the kernel's shaper sent late)"]
    port["queue_err_worst"] = {"t_s": 103.5, "model_bytes": 30_000, "kernel_bytes": 2_000}
    port["queue_samples"] = 4
    f = fidelity(meas_with({"leaf3-eth6": port}, name="leaf3", t_start=100.0),
                 RATE_BPS, 4096, [1.2], [])
    assert f.reasons[0].endswith("over 4 samples; the worst at t = 3.50 s: model 30.0 KB, "
                                 "kernel 2.0 KB (the kernel sent what the model holds)")


def test_a_port_busy_for_a_whole_interval_is_held_to_its_rate():
    f = PortFidelity(RATE_BPS)
    f.sample(0.0, 0, 100_000, 0)           # 100 KB queued: busy for 160 ms at least
    f.sample(0.1, 0, 90_000, 62_500)       # sent exactly rate x 0.1 s
    f.sample(0.2, 0, 90_000, 62_500 + 50_000)   # sent only 80 %
    s = f.summary()
    assert s["busy_intervals"] == 2
    assert s["busy_util"] == pytest.approx(112_500 / 125_000)
    assert s["busy_util_min"] == pytest.approx(0.8)


def test_an_interval_that_may_have_idled_is_not_judged():
    f = PortFidelity(RATE_BPS)
    f.sample(0.0, 0, 30_000, 0)            # 30 KB drains in 48 ms < 100 ms
    f.sample(0.1, 0, 0, 30_000)
    assert f.summary()["busy_intervals"] == 0 and f.summary()["busy_util"] is None


# --- the verdict -----------------------------------------------------------------------

def meas_with(port_fidelity: dict, name: str = "leaf0", **fields) -> Measurements:
    """A run whose one agent reports these ports' fidelity; ``fields``: the rest."""
    return Measurements(agents={name: AgentMeasurements(fidelity=port_fidelity)}, **fields)


def test_a_faithful_port_adds_no_reason():
    f = fidelity(meas_with({"leaf0-eth1": {"queue_err_mean_bytes": 2000, "busy_intervals": 10,
                                           "busy_util": 0.99}}), RATE_BPS, 4096, [1.2], [])
    assert f.faithful, f.reasons
    assert f.queue_err_mean_bytes_max == 2000 and f.busy_util_min == 0.99


@pytest.mark.parametrize("port, words", [
    ({"queue_err_mean_bytes": 30_000}, ["leaf0:leaf0-eth1", "queue model is 30.0 KB off"]),
    ({"busy_intervals": 5, "busy_util": 0.7},
     ["leaf0:leaf0-eth1", "busy port sent at 70% of its rate", "Mininet-HiFi"]),
    ({"busy_intervals": 5, "busy_util": 1.3}, ["sent at 130% of its rate"]),
])
def test_an_unfaithful_port_is_named(port, words):
    f = fidelity(meas_with({"leaf0-eth1": port}), RATE_BPS, 4096, [1.2], [])
    assert not f.faithful
    text = " ".join(f.reasons)
    assert all(w in text for w in words), text


def test_too_few_busy_intervals_are_not_judged():
    f = fidelity(meas_with({"leaf0-eth1": {"busy_intervals": 2, "busy_util": 0.5}}),
                 RATE_BPS, 4096, [1.2], [])
    assert f.faithful and f.busy_util_min is None


# --- retransmission timeouts -----------------------------------------------------------

TRANSPORT = Transport(packets=1000, retransmits=40, timeouts=3, naks=0, cnps=10,
                      switch_drops=0)


def test_a_timeout_without_any_drop_is_unfaithful():
    f = fidelity(meas_with({}), RATE_BPS, 4096, [1.2], [], TRANSPORT)
    assert not f.faithful
    assert "3 retransmission timeouts although no switch dropped a packet" in f.reasons[0]


@pytest.mark.parametrize("counters, lossy", [
    ({"model_drops": 2, "fault_drops": 0}, False),              # a buffer overflowed
    ({"model_drops": 0, "fault_drops": 5}, False),              # injected loss
    ({}, True),                                                 # loss/link_down, or pq
])
def test_a_timeout_is_explained_by_a_drop_or_a_lossy_run(counters, lossy):
    meas = Measurements(agents={"leaf0": AgentMeasurements(counters=counters)})
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [], TRANSPORT, lossy)
    assert f.faithful, f.reasons


def test_no_timeouts_no_reason():
    f = fidelity(meas_with({}), RATE_BPS, 4096, [1.2], [], replace(TRANSPORT, timeouts=0))
    assert f.faithful


def test_a_host_socket_drop_is_named_and_explains_the_timeout(tmp_path):
    meas = meas_with({}, rank_summaries={"h1": rank_summary("h1", udp={"RcvbufErrors": 7})})
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [], TRANSPORT)
    assert f.reasons == ["hosts' sockets dropped 7 packets (a rank process fell behind "
                            "reading them: CPU)"]


def test_udp_counters_parse_the_namespaces_snmp_table(tmp_path):
    from hosts.rank import udp_counters
    p = tmp_path / "snmp"
    p.write_text("Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\n"
                 "Udp: 100 0 3 90 3 0\n")
    assert udp_counters(str(p)) == {"InErrors": 3, "RcvbufErrors": 3, "SndbufErrors": 0}
    assert udp_counters(str(tmp_path / "missing")) == {}


def test_a_short_step_may_beat_the_bound_by_one_burst_but_no_more():
    # a 2-rank all-reduce of 64 KB: 2 steps of 32 KB; each may start with a full token
    # bucket (L2_BURST_BYTES leave at once), so the fastest CCT is the bound less 2 bursts
    from emulator.analysis.verdict import fastest_cct_s
    from emulator.plan.layout import layout, theoretical_cct_s
    from emulator.spec.schema import JobSpec, TopologySpec
    from topologies.wiring import L2_BURST_BYTES
    topo = TopologySpec(kind="dumbbell", hosts=2)
    lay = layout(JobSpec(hosts=("all",), rings="single", size_bytes=65536), topo, lambda s: s)
    rate = 5e6
    theo = theoretical_cct_s(lay, rate, 4096)
    fastest = fastest_cct_s(lay, theo, rate)
    assert lay.steps == 2
    assert fastest == pytest.approx(theo - 2 * L2_BURST_BYTES * 8 / rate)
    assert 0.70 < fastest / theo < 0.75          # 9100 B of each ~33 KB step
    meas = Measurements()
    ok = fidelity(meas, rate, 4096, [0.94], [], floors=[0.94 * theo / fastest])
    assert ok.faithful, ok.reasons
    broken = fidelity(meas, rate, 4096, [0.60], [], floors=[0.60 * theo / fastest])
    assert any("faster than the link allows" in r for r in broken.reasons)


# --- each server's own CPU (a fabric over servers reached by ssh) -------------------------

def test_a_server_whose_own_cpu_was_saturated_is_named_in_the_verdict():
    meas = meas_with({}, cpu_busy=0.40, cpu_busy_servers={"s0": 0.45, "s1": 0.96, "s2": None})
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert not f.faithful
    assert f.reasons == ["server s1: CPU 96% busy (> 90%): timers and pacing slip there"]
    assert f.cpu_busy_servers["s1"] == 0.96
    meas = replace(meas, cpu_busy_servers={**meas.cpu_busy_servers, "s1": 0.89})
    assert fidelity(meas, RATE_BPS, 4096, [1.2], []).faithful


def test_a_cpu_meter_reads_the_busy_share_from_whichever_proc_stat_it_is_given():
    from emulator.launch.runner import CpuMeter
    # user nice system idle iowait irq softirq: 300 of 1000 ticks busy in between
    lines = iter(["cpu  100 0 100 700 100 0 0\n", "cpu  300 0 200 1300 200 0 0\n"])
    m = CpuMeter(lambda: next(lines))
    m.start()
    assert m.stop() == pytest.approx(1 - 700 / 1000) and m.steal == 0.0
    # the 8th column: ticks a hypervisor gave to other machines, counted as busy
    lines = iter(["cpu  100 0 100 700 100 0 0 50\n", "cpu  300 0 200 1300 200 0 0 150\n"])
    m = CpuMeter(lambda: next(lines))
    m.start()
    assert m.stop() == pytest.approx(1 - 700 / 1100) and m.steal == pytest.approx(100 / 1100)


def test_a_server_silent_when_its_meter_starts_is_left_unmeasured_not_a_crash():
    """A server lost between t = 0 and its meter's first read (the loop then reports its
    dead nodes): its busy share is None, and the run goes on to write its measurements."""
    from emulator.launch.runner import CpuMeter, _busy

    def silent():
        raise RuntimeError("server s1: ['head', '-n', '1', '/proc/stat'] exited 255")
    m = CpuMeter(silent)
    with pytest.raises(RuntimeError):
        m.start()
    assert _busy(m) is None
    lines = iter(["cpu  100 0 100 700 100 0 0\n", "cpu  garbage\n"])
    m = CpuMeter(lambda: next(lines))
    m.start()
    assert _busy(m) is None                  # an answer that is not /proc/stat


def test_a_saturated_cpu_says_how_much_of_it_the_hypervisor_took():
    meas = meas_with({}, cpu_busy=0.95, cpu_steal=0.21)
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert f.reasons == ["CPU 95% busy (> 90%; the hypervisor took 21% of the CPUs' "
                            "time): timers and pacing slip"]
    assert f.cpu_steal == 0.21


def test_an_underlay_that_dropped_frames_is_named_by_server():
    clean = UnderlayUse(server=0, tx_bytes=10, tx_packets=1, rx_bytes=10, rx_packets=1,
                        tx_dropped=0, tx_errors=0, rx_dropped=0, rx_errors=0, tx_bps=8.0,
                        rx_bps=8.0, capacity_bps=None, utilisation=None)
    meas = meas_with({}, underlay=[clean, replace(clean, server=1, rx_dropped=3)])
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert f.reasons == ["server s1: its underlay dropped or garbled 3 frames (tx dropped "
                            "0, errors 0; rx dropped 3, errors 0): a link cut between "
                            "servers lost what the spec's link would not"]
    meas = replace(meas, underlay=[clean, replace(clean, server=1)])
    assert fidelity(meas, RATE_BPS, 4096, [1.2], []).faithful


def test_an_underlay_busier_than_80_percent_of_its_capacity_is_named_by_server():
    """The runner measures each server's underlay over the run (counters at t = 0 and at
    the end, the busier way against the capacity); the verdict names a server whose
    underlay ran over 80 % on average, and says nothing where the capacity is unknown."""
    from emulator.measurements import underlay_use
    zero = {"server": 0, "tx_bytes": 1000, "tx_packets": 1, "rx_bytes": 500, "rx_packets": 1,
            "tx_dropped": 2, "tx_errors": 0, "rx_dropped": 0, "rx_errors": 0}
    end0 = {**zero, "tx_bytes": 1000 + 10_000_000, "rx_bytes": 500 + 5_000_000}
    end1 = {**zero, "server": 1, "tx_bytes": 1000 + 1_000_000, "rx_bytes": 500 + 9_000_000}
    use = underlay_use([zero, {**zero, "server": 1}], [end0, end1], 10.0, [9e6, None])
    # server 0: 8 Mb/s out, 4 Mb/s in, over 9 Mb/s; its 2 drops were before t = 0
    assert use[0].tx_bps == 8e6 and use[0].rx_bps == 4e6
    assert use[0].utilisation == pytest.approx(8 / 9) and use[0].tx_dropped == 0
    assert use[1].utilisation is None and use[1].rx_bps == 7.2e6
    f = fidelity(meas_with({}, underlay=use), RATE_BPS, 4096, [1.2], [])
    assert f.reasons == ["server s0: its underlay carried 89% of its 0.009 Gb/s on "
                            "average (> 80%): frames between servers queued outside the "
                            "emulated fabric"]
    use[0] = replace(use[0], utilisation=0.5)
    assert fidelity(meas_with({}, underlay=use), RATE_BPS, 4096, [1.2], []).faithful


def test_a_server_is_given_as_user_at_host_port_and_reached_as_ssh_would():
    from cluster.ssh import check_target, destination
    assert destination("root@10.0.0.2") == "root@10.0.0.2"
    assert destination("root@10.0.0.2:2222") == "ssh://root@10.0.0.2:2222"
    assert destination("gpu-7") == "gpu-7" and destination("gpu-7:22") == "ssh://gpu-7:22"
    assert [check_target(t) for t in ("root@a", "a:1", "u@h.example.org:65535")] == [None] * 3
    assert check_target("@a") == check_target("a b") == check_target("a;rm") == \
        "not [user@]host[:port]"
    assert check_target("a:0") == "port '0' is not 1..65535"
    assert check_target("") == check_target(7) == "a server is a string, [user@]host[:port]"


def test_a_static_job_over_its_fluid_time_is_emulation_error():
    from emulator.analysis.verdict import judge_emulation_error
    f = fidelity(meas_with({}), RATE_BPS, 4096, [1.2], [])
    judged = judge_emulation_error(f, 1.04)
    assert judged.faithful and judged.emulation_error_x == 1.04
    judged = judge_emulation_error(f, 1.30)
    assert not judged.faithful and judged.reasons[0].startswith(
        "static routing, no congestion in the flow-level model, yet the job took 1.30x")


def test_on_several_servers_an_agent_check_names_the_switch_server():
    meas = meas_with({"leaf2-eth5": {"queue_err_mean_bytes": 20_000, "busy_intervals": 10,
                                     "busy_util": 0.5}}, name="leaf2")
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [], server_of={"leaf2": 1, "h0": 0})
    assert f.reasons == [
        "leaf2:leaf2-eth5 (server 1): the queue model is 20.0 KB off the kernel's backlog "
        "on average (> 2 frames)",
        "leaf2:leaf2-eth5 (server 1): a busy port sent at 50% of its rate (Mininet-HiFi "
        "invariant: 90%-110%)"]


# --- a lossless fabric that dropped -------------------------------------------------------

def _sim(**lossless) -> SimStats:
    return SimStats(end_s=1.0, events=1, data_packets=1, port_drops=0, no_route_drops=0,
                    drops_by_port={}, background_rx=0, wall_s=0.1, cpu_s=0.1,
                    cpu_us_per_data_packet=1.0, **lossless)


def test_a_lossless_fabric_that_dropped_is_not_faithful_and_says_why():
    from emulator.analysis.report import lossless
    meas = Measurements(sim=_sim(flow_control="pfc", pauses=40))
    ok = fidelity(meas, RATE_BPS, 4096, [1.2], [], lossless=lossless(meas))
    assert ok.faithful, ok.reasons
    meas = Measurements(sim=_sim(flow_control="pfc", pfc_drops=3))
    dropped = fidelity(meas, RATE_BPS, 4096, [1.2], [], lossless=lossless(meas))
    assert not dropped.faithful
    assert dropped.reasons == ["a lossless fabric dropped 3 frames: a switch buffer too "
                               "small for its ports' headroom ([pfc] buffer_bytes, "
                               "headroom_bytes)"]


def test_a_lossless_port_is_judged_on_its_qdisc_part_and_a_paused_interval_is_not_busy():
    """switch_agent/lossless.py holds most of a lossless port's queue: the model's backlog
    less the held bytes is what the qdisc must show, and an interval with a pause in it
    (the port sent nothing for part of it) does not count against the rate."""
    p = PortFidelity(RATE_BPS)
    per_s = RATE_BPS / 8
    p.sample(0.0, 60_000, 10_000, 0, held_bytes=50_000, paused_s=0.0)     # 0.05 s: 31250 B
    p.sample(0.05, 60_000, 10_000, int(0.01 * per_s), held_bytes=50_000, paused_s=0.04)
    p.sample(0.10, 60_000, 10_000, int(0.06 * per_s), held_bytes=50_000, paused_s=0.04)
    s = p.summary()
    assert s["queue_samples"] == 3 and s["queue_err_max_bytes"] == 0
    assert s["busy_intervals"] == 1 and s["busy_util"] == pytest.approx(1.0)
