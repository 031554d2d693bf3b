"""t = 0 across processes (hosts.clock) and the verdict on what each process saw of it
(emulator.analysis.verdict.fidelity), without root."""

from dataclasses import replace

import pytest

from emulator.analysis.verdict import START_OFFSET_MAX_FRAMES, fidelity
from emulator.measurements import ClockCheck, Measurements
from hosts import clock
from emulator.plan.layout import wire_bytes
from tests.records_util import rank_summary

RATE_BPS = 10e6                     # D = 1000: a 4 KB frame is 3.3 ms


def test_the_start_line_becomes_this_process_own_monotonic_t0():
    line = clock.start_line(1000.25, 1000.05)
    # this process's realtime reads 1000.10 (0.05 s after sending: offset plus transit)
    # while its monotonic clock reads 77.0: t = 0 is 0.15 s ahead on both
    t0, seen = clock.parse_start(line, realtime_now=1000.10, monotonic_now=77.0)
    assert t0 == pytest.approx(77.15)
    assert seen == {"t0_realtime": 1000.25, "offset_s": pytest.approx(0.05), "late_s": 0.0}


def test_a_line_that_arrives_after_t0_says_how_late():
    t0, seen = clock.parse_start(clock.start_line(10.0, 9.8), 10.3, 5.0)
    assert t0 == pytest.approx(4.7) and seen["late_s"] == pytest.approx(0.3)


@pytest.mark.parametrize("line", ["0.25\n", "{}\n", '{"t0_realtime": "x", "sent_realtime": 1}\n',
                                  '{"t0_realtime": NaN, "sent_realtime": 1}\n', "not json\n"])
def test_a_bad_start_line_is_refused_by_name(line):
    with pytest.raises(clock.StartError, match="start line .*expected|finite"):
        clock.parse_start(line, 1.0, 1.0)


def _meas(offsets: dict) -> Measurements:
    return Measurements(rank_summaries={
        h: rank_summary(h, clock={"offset_s": o, "late_s": 0.0, "t0_realtime": 0})
        for h, o in offsets.items()})


def test_offsets_within_a_frame_pass_and_beyond_it_name_the_host_and_server():
    frame_s = wire_bytes(4096, 4096) * 8 / RATE_BPS
    limit = START_OFFSET_MAX_FRAMES * frame_s
    ok = fidelity(_meas({"h0": 0.0001, "h1": -0.9 * limit}), RATE_BPS, 4096, [1.2], [])
    assert ok.faithful, ok.reasons
    assert ok.start_offset_max_s == pytest.approx(0.9 * limit)
    bad = fidelity(_meas({"h0": 0.0001, "h9": -1.5 * limit}), RATE_BPS, 4096, [1.2], [],
                   server_of={"h0": 0, "h9": 1})
    assert not bad.faithful
    (reason,) = bad.reasons
    assert "host h9 (server 1)" in reason and f"{-1.5 * limit * 1e3:+.2f} ms" in reason
    local = fidelity(_meas({"h9": 2 * limit}), RATE_BPS, 4096, [1.2], [])
    assert "host h9 (this machine)" in local.reasons[0]


def test_a_run_from_before_the_clock_records_is_not_judged_on_them():
    meas = Measurements(rank_summaries={"h0": rank_summary("h0")})
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert f.faithful and f.start_offset_max_s is None


def test_the_verdict_knows_each_host_server_from_the_run_spec():
    from emulator import plan as planning
    from emulator.analysis.verdict import server_of_hosts
    from emulator.spec import validate
    spec = {"name": "servers", "topology": {"kind": "leafspine", "pods": 2, "leaves": 2,
                                            "spines": 2, "hosts_per_leaf": 2, "cores": 2,
                                            "servers": 2},
            "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 32768}]}

    def fabric(raw):
        return planning.compile(validate(raw, "servers.toml"), "baseline", 1).fabric
    where = server_of_hosts(fabric(spec))
    assert [where[f"h{i}"] for i in range(8)] == [0] * 4 + [1] * 4
    assert server_of_hosts(fabric({**spec, "topology": {**spec["topology"],
                                                        "servers": 1}})) is None


def test_the_verdict_knows_each_host_server_on_real_servers_from_the_run_spec(tmp_path):
    """A run on real servers keeps their list in its manifest's spec (the spec's own
    checks see a count); the verdict places hosts by it even where the run's ssh_config
    file does not exist (a run folder read on another machine: its manifest's plan)."""
    import json

    from emulator import plan as planning
    from emulator.analysis.verdict import server_of_hosts
    from emulator.spec import load
    cfg = tmp_path / "ssh_config"
    cfg.write_text("")
    spec_file = tmp_path / "real.toml"
    spec_file.write_text(
        'name = "real"\n[topology]\nkind = "leafspine"\npods = 2\nleaves = 2\nspines = 2\n'
        f'hosts_per_leaf = 2\ncores = 2\nservers = ["root@10.0.0.2", "root@10.0.0.3"]\n'
        f'ssh_config = "{cfg}"\n[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = 32768\n')
    spec = load(str(spec_file))
    assert spec.raw["topology"]["servers"] == ["root@10.0.0.2", "root@10.0.0.3"]
    assert spec.topology.servers == 2 and spec.topology.server_targets == (
        "root@10.0.0.2", "root@10.0.0.3")
    stored = json.dumps(planning.compile(spec, "baseline", 1).to_dict())
    cfg.unlink()
    where = server_of_hosts(planning.RunPlan.from_dict(json.loads(stored)).fabric)
    assert [where[f"h{i}"] for i in range(8)] == [0] * 4 + [1] * 4


def test_a_probed_clock_is_placed_from_its_shortest_round_trip():
    """NTP's rule: from the probe with the shortest round trip, the process's clock is
    r - (s + e) / 2 off, give or take half that trip, whichever way the trip split."""
    assert clock.answer(clock.probe_line(3, 100.0), 100.004) == {"probe": 3,
                                                                "seen_realtime": 100.004}
    assert clock.answer(clock.start_line(1.0, 0.5), 1.0) is None
    assert clock.answer("not json\n", 1.0) is None
    # a slow first probe (5 ms out, 1 ms back), then a quick one (0.2 ms each way); the
    # process's clock is 2 ms ahead
    samples = [(10.000, 10.007, 10.006), (10.010, 10.0122, 10.0104)]
    est = clock.estimate(samples)
    assert est["rtt_s"] == pytest.approx(0.0004) and est["probes"] == 2
    assert est["offset_s"] == pytest.approx(0.002) and est["bound_s"] == pytest.approx(0.0022)
    # an answer read before it was sent is no sample; none: no estimate
    assert clock.estimate([(5.0, 5.0, 4.0)]) is None and clock.estimate([]) is None


def test_the_verdict_judges_the_probed_bound_and_names_the_process_and_its_server():
    """A run with probed clocks is judged by the bound, not by the start line's one-way
    offset (which adds the line's transit): a 4 ms transit with clocks 0.1 ms apart is
    faithful; clocks 5 ms apart are not, whatever the transit."""
    from emulator.analysis.verdict import fidelity
    probe = ClockCheck(hosts=["h4", "h5", "h6", "h7"], offset_s=0.0001, rtt_s=0.0006,
                       bound_s=0.0004, probes=8)
    meas = Measurements(
        rank_summaries={"h4": rank_summary("h4", clock={"offset_s": 0.004, "late_s": 0.0})},
        clocks=[probe])
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert f.faithful and f.clock_bound_max_s == 0.0004
    meas = replace(meas, clocks=[replace(probe, offset_s=-0.005, bound_s=0.0053)])
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [], server_of={"h4": 1})
    assert f.reasons == [
        "clocks: the process of hosts h4-h7 (server 1) runs -5.00 ms off the coordinator's "
        "clock, give or take 0.30 (half the shortest of 8 round trips): up to 5.30 ms (> 1 "
        "frame of 3.32 ms at this dilation): its records are not on the others' timeline"]
