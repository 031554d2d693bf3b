"""measurements.json's type (emulator/measurements.py): what a writer builds is what the
analysis reads back, parts and host summaries as their types; a key no writer writes is
refused by name; a run not done reads as empty."""

import json

import pytest

from emulator.measurements import (AgentMeasurements, ClockCheck, Measurements,
                                   PerturbationFired, SimStats, underlay_use)
from emulator.rundir import DamagedRun, RunFolder
from runtime.records import MessageSummary
from tests.records_util import rank_summary


def every_field() -> Measurements:
    """An emulated run's measurements with every part filled, and a model's fields too."""
    host = MessageSummary(name="h1", ip="10.0.0.2", timed_out=False, ok=False, udp={},
                          counters={}, cnp_suppressed=0, open_flows=0,
                          pacing={"packets": 1, "mean_late_s": 0.0, "max_late_s": 0.0},
                          sends=1, sends_completed=1, receives=1, receives_ok=0,
                          missing=[[1, 0, 0, "10.0.0.1"]], bad={})
    counters = {"server": 0, "tx_bytes": 8000, "tx_packets": 8, "rx_bytes": 4000,
                "rx_packets": 4, "tx_dropped": 0, "tx_errors": 0, "rx_dropped": 0,
                "rx_errors": 0}
    return Measurements(
        t_start=1234.5, timed_out=True, timed_out_in="run", broken=["leaf1: lost"],
        host_exit={"h0": 0, "h1": None},
        rank_summaries={"h0": rank_summary("h0", clock={"offset_s": 1e-4}), "h1": host},
        agents={"leaf0": AgentMeasurements(counters={"pkts": 9}, nfqueue={"held_packets": 9},
                                           fidelity={"leaf0-eth1": {"busy_util": 0.97}}),
                "leaf1": AgentMeasurements(lost="server s1 no longer answers"),
                "spine0": AgentMeasurements(dead=-9)},
        perturbations=[PerturbationFired(t_s=0.5, fired_s=0.51, what="leaf0 -> spine0 down")],
        perturbation_effects=["leaf0: 3 packets without a route"], captures=["h0.pcapng"],
        cpu_busy=0.4, cpu_steal=0.01, cpu_busy_servers={"s0": 0.5, "s1": None},
        clocks=[ClockCheck(hosts=["h0", "h1"], probes=8, offset_s=1e-4, rtt_s=4e-4,
                           bound_s=3e-4), ClockCheck(hosts=["h2"], probes=0)],
        underlay=underlay_use(None, [counters], 2.0, [1e6]), underlay_unread=None,
        teardown_leftovers=["interface h0-eth0"], wall_s=2.0,
        sim=SimStats(end_s=1.5, events=10, data_packets=4, port_drops=1, no_route_drops=0,
                     drops_by_port={"leaf0-eth5": 1}, background_rx=0, wall_s=0.2,
                     cpu_s=0.2, cpu_us_per_data_packet=5e4),
        host_delay_s=1.13e-4, not_modelled=["HTB's token bucket"],
        unfinished_flows=[[1, 0, 2, "10.0.0.1", "10.0.0.2"]], model_stats={"solves": 3})


def test_what_a_writer_builds_reads_back_the_same_through_the_run_folder(tmp_path):
    meas = every_field()
    folder = RunFolder(str(tmp_path / "run"))
    assert folder.measurements == Measurements() and not folder.done   # not done: empty
    (tmp_path / "run").mkdir()
    folder.write_measurements(meas)
    got = folder.measurements
    assert got == meas
    assert isinstance(got.rank_summaries["h1"], MessageSummary) and \
        got.rank_summaries["h1"].missing == [[1, 0, 0, "10.0.0.1"]]
    assert got.underlay[0].tx_bps == 32_000 and got.underlay[0].utilisation == 0.032
    with open(folder.file("measurements.json")) as f:
        on_disk = json.load(f)
    # the hosts' summaries as their records, everything else as its fields
    assert on_disk["rank_summaries"]["h0"]["type"] == "rank_summary"
    assert on_disk["agents"]["spine0"] == {"counters": {}, "nfqueue": {}, "fidelity": {},
                                           "dead": -9, "lost": None}


def test_a_key_no_writer_writes_is_refused_by_name(tmp_path):
    folder = RunFolder(str(tmp_path))
    folder.write_measurements(Measurements(backend="fluid", t_start=0.0))
    with open(folder.file("measurements.json")) as f:
        data = json.load(f)
    data["agents"] = {"leaf0": {"counters": {}, "drops": 3}}
    with open(folder.file("measurements.json"), "w") as f:
        json.dump(data, f)
    with pytest.raises(DamagedRun, match=r"not this run format's measurements \(Measurements"
                                         r"\.agents\[leaf0\]: unknown keys \['drops'\]"):
        folder.measurements
