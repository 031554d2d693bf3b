"""t = 0 across processes (hosts.clock) and the verdict on what each process saw of it
(emulator.analysis.verdict.fidelity), without root."""

import pytest

from emulator.analysis.verdict import START_OFFSET_MAX_FRAMES, fidelity
from hosts import clock
from emulator.plan.layout import wire_bytes

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


def _meas(offsets: dict) -> dict:
    return {"rank_summaries": {h: {"ok": True, "pacing": {"mean_late_s": 0.0},
                                   "clock": {"offset_s": o, "late_s": 0.0, "t0_realtime": 0}}
                               for h, o in offsets.items()}}


def test_offsets_within_a_frame_pass_and_beyond_it_name_the_host_and_server():
    frame_s = wire_bytes(4096, 4096) * 8 / RATE_BPS
    limit = START_OFFSET_MAX_FRAMES * frame_s
    ok = fidelity(_meas({"h0": 0.0001, "h1": -0.9 * limit}), RATE_BPS, 4096, [1.2], [])
    assert ok["faithful"], ok["reasons"]
    assert ok["start_offset_max_s"] == pytest.approx(0.9 * limit)
    bad = fidelity(_meas({"h0": 0.0001, "h9": -1.5 * limit}), RATE_BPS, 4096, [1.2], [],
                   server_of={"h0": 0, "h9": 1})
    assert not bad["faithful"]
    (reason,) = bad["reasons"]
    assert "host h9 (server 1)" in reason and f"{-1.5 * limit * 1e3:+.2f} ms" in reason
    local = fidelity(_meas({"h9": 2 * limit}), RATE_BPS, 4096, [1.2], [])
    assert "host h9 (this machine)" in local["reasons"][0]


def test_a_run_from_before_the_clock_records_is_not_judged_on_them():
    meas = {"rank_summaries": {"h0": {"ok": True, "pacing": {"mean_late_s": 0.0}}}}
    f = fidelity(meas, RATE_BPS, 4096, [1.2], [])
    assert f["faithful"] and f["start_offset_max_s"] is None


def test_the_verdict_knows_each_host_server_from_the_run_spec():
    from emulator.analysis.verdict import server_of_hosts
    spec = {"name": "servers", "topology": {"kind": "leafspine", "pods": 2, "leaves": 2,
                                            "spines": 2, "hosts_per_leaf": 2, "cores": 2,
                                            "servers": 2},
            "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 32768}]}
    where = server_of_hosts(spec)
    assert [where[f"h{i}"] for i in range(8)] == [0] * 4 + [1] * 4
    assert server_of_hosts({**spec, "topology": {**spec["topology"], "servers": 1}}) is None
