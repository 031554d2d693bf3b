"""One process serving several hosts (``hosts.group``, docs/architecture.md §3.4), without
root: hosts on loopback addresses of this machine's own namespace, each with its own
NIC and telemetry, served by one event loop -- messages byte-exact, each host paced at
its own line rate as if it ran alone, the protocol lines per host; and how the launcher
shares hosts out among processes."""

import json
import os
import time

import pytest

from emulator.launch.launcher import default_processes, split
from hosts import group
from hosts.cc import CcConfig
from hosts.config import GroupConfig, HostConfig, MemberConfig, MessageConfig, TransportParams
from runtime.scale import Scale

SCALE = Scale(1000)                    # 10 Gb/s at D = 1000: 10 Mb/s per host
CC = CcConfig.default("none", 10e9, SCALE)
RATE = CC.params.line_rate_bps
TRANSPORT = TransportParams(rto_s=0.5, nak_timeout_s=0.1)
_NET = f"127.{100 + (os.getpid() >> 16 & 7)}.{os.getpid() >> 8 & 255}"
NBYTES = 200_000                        # 49 packets: 0.16 s at 10 Mb/s


def _ip(i: int) -> str:
    """Host i's address (i < 8): a last octet in 1..248, from this process's id."""
    assert 0 <= i < 8
    return f"{_NET}.{(os.getpid() % 31) * 8 + i + 1}"


def _members(tmp_path, n_pairs: int) -> list[MemberConfig]:
    """Hosts 0..2n-1: host 2i sends one message to host 2i+1, all at t = 0."""
    out = []
    for i in range(2 * n_pairs):
        peer = _ip(i + 1 if i % 2 == 0 else i - 1)
        msg = MessageConfig(peer, NBYTES, job=1, channel=i // 2, step=0)
        cfg = HostConfig(f"h{i}", _ip(i), RATE, CC, TRANSPORT, timeout_s=10.0,
                         telemetry_path=str(tmp_path / f"h{i}.jsonl"), linger_s=0.1,
                         sends=(msg,) if i % 2 == 0 else (),
                         receives=() if i % 2 == 0 else (msg,))
        path = tmp_path / f"h{i}.host.json"
        path.write_text(json.dumps(cfg.to_dict()))
        out.append(MemberConfig(str(path), str(tmp_path / f"h{i}.host.out")))
    return out


def _lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("n_pairs", [1, 4])
def test_one_loop_serves_several_hosts_each_at_its_own_line_rate(tmp_path, n_pairs):
    members = [group.Member(m, time.monotonic) for m in _members(tmp_path, n_pairs)]
    t0 = time.monotonic() + 0.05
    assert group.serve(members, t0)
    line_time = NBYTES * 8 / RATE
    for i in range(2 * n_pairs):
        lines = _lines(tmp_path / f"h{i}.host.out")
        summary = lines[-1]
        assert summary["type"] == "host_summary" and summary["ok"], summary
        assert summary["process"]["hosts"] == 2 * n_pairs
        if i % 2 == 0:
            (flow,) = [json.loads(x) for x in (tmp_path / f"h{i}.jsonl").read_text().splitlines()
                       if '"send_flow"' in x]
            took = flow["end_s"] - flow["start_s"]
            # every sender at its own line rate, together: not n times slower for sharing
            # the process, not faster than its line (the NIC clock holds it)
            assert 0.97 * line_time < took < 1.5 * line_time, (i, took, line_time)
            frame_time = (4096 + 82) * 8 / RATE
            assert summary["pacing"]["mean_late_s"] < 0.3 * frame_time, summary["pacing"]
        assert [x for x in lines if "progress" in x][-1] == {"progress": 1, "of": 1}


def test_a_host_that_times_out_is_not_ok_and_the_others_still_finish(tmp_path):
    ms = _members(tmp_path, 2)
    # host 3 expects a message nobody sends: it times out; hosts 0..2 are unaffected
    cfg = HostConfig.from_dict(json.loads(open(ms[3].config).read()))
    lost = MessageConfig(_ip(2), 1000, job=1, channel=9, step=0)
    bad = HostConfig(**{**cfg.__dict__, "receives": cfg.receives + (lost,), "timeout_s": 1.0})
    with open(ms[3].config, "w") as f:
        json.dump(bad.to_dict(), f)
    members = [group.Member(m, time.monotonic) for m in ms]
    assert not group.serve(members, time.monotonic())
    oks = [_lines(tmp_path / f"h{i}.host.out")[-1]["ok"] for i in range(4)]
    assert oks == [True, True, True, False]
    assert _lines(tmp_path / "h3.host.out")[-1]["timed_out"]


def test_a_group_config_needs_a_host_and_a_namespace_pid_not_below_zero():
    with pytest.raises(ValueError, match="members"):
        GroupConfig(())
    with pytest.raises(ValueError, match="netns_pid"):
        MemberConfig("h0.host.json", "h0.host.out", -1)


@pytest.mark.parametrize("n,k,sizes", [(16, 2, [8, 8]), (5, 2, [3, 2]), (3, 8, [1, 1, 1]),
                                        (1, 1, [1])])
def test_hosts_are_shared_out_evenly_and_in_order(n, k, sizes):
    hosts = [f"h{i}" for i in range(n)]
    shares = split(hosts, k)
    assert [len(s) for s in shares] == sizes
    assert sum(shares, []) == hosts


def test_default_is_one_process_per_cpu_and_at_most_eight_hosts_each():
    cpus = len(os.sched_getaffinity(0))
    assert default_processes(1) == 1
    assert default_processes(16) == min(16, max(cpus, 2))
    assert default_processes(64) >= 8
    assert all(-(-n // default_processes(n)) <= 8 for n in (8, 16, 33, 64, 128))
