"""One process serving several hosts (``hosts.group``, docs/architecture.md §3.4), without
root: hosts on loopback addresses of this machine's own namespace, each with its own
NIC and telemetry, served by one event loop -- messages byte-exact, each host paced at
its own line rate as if it ran alone, the protocol lines per host; and how the launcher
shares hosts out among processes."""

import json
import os
import threading
import time

import pytest

from emulator.launch.capacity import default_processes
from emulator.launch.launcher import HostProcesses, split
from hosts import group
from hosts.cc import CcConfig
from hosts.config import GroupConfig, HostConfig, MemberConfig, MessageConfig, TransportParams
from runtime import wire
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


def _members(tmp_path, n_pairs: int, linger_s: float | None = 0.1) -> list[MemberConfig]:
    """Hosts 0..2n-1: host 2i sends one message to host 2i+1, all at t = 0."""
    out = []
    for i in range(2 * n_pairs):
        peer = _ip(i + 1 if i % 2 == 0 else i - 1)
        msg = MessageConfig(peer, NBYTES, job=1, channel=i // 2, step=0)
        cfg = HostConfig(f"h{i}", _ip(i), RATE, CC, TRANSPORT, timeout_s=10.0,
                         telemetry_path=str(tmp_path / f"h{i}.jsonl"), linger_s=linger_s,
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


def _says_finished(path) -> bool:
    return path.exists() and {"finished": True} in _lines(path)


def test_a_finished_host_lingers_until_the_launcher_says_all_finished(tmp_path):
    """Each host says it finished, then serves its NIC until ``end`` comes on the control
    line (the launcher writes it once every host has said so): then all leave at once,
    long before their linger limit (3 RTOs: 1.5 s here)."""
    members = [group.Member(m, time.monotonic) for m in _members(tmp_path, 2, linger_s=None)]
    assert {m.cfg.linger_limit_s for m in members} == {1.5}
    r, w = os.pipe()
    told = []

    def launcher():                         # what emulator.launch.launcher does, by file
        outs = [tmp_path / f"h{i}.host.out" for i in range(4)]
        while not all(_says_finished(p) for p in outs):
            time.sleep(0.005)
        told.append(time.monotonic())
        os.write(w, b"end\n")

    t = threading.Thread(target=launcher, daemon=True)
    t.start()
    t0 = time.monotonic() + 0.05
    assert group.serve(members, t0, control=group.Lines(r))
    left = time.monotonic()
    t.join(1)
    assert told and left - told[0] < 0.2, (left - told[0])
    assert left - t0 < 1.0, left - t0               # the flows take 0.16 s
    for i in range(4):
        lines = _lines(tmp_path / f"h{i}.host.out")
        assert lines.index({"finished": True}) < len(lines) - 1 and lines[-1]["ok"]
    os.close(r)
    os.close(w)


def test_without_the_launchers_end_a_finished_host_lingers_its_limit(tmp_path):
    members = [group.Member(m, time.monotonic) for m in _members(tmp_path, 1, linger_s=None)]
    r, w = os.pipe()
    os.close(w)                                     # the launcher is gone: EOF
    t0 = time.monotonic()
    assert group.serve(members, t0, control=group.Lines(r))
    assert 1.5 <= time.monotonic() - t0 < 2.5
    os.close(r)


@pytest.mark.pure
@pytest.mark.parametrize("linger_s", [None, 0.1])
def test_a_lost_last_ack_is_answered_by_a_receiver_still_lingering(tmp_path, linger_s):
    """The receiver's ACK of the last packet is lost: the sender sends it again one RTO
    (0.5 s) after its last send. A receiver that lingers its default limit (3 RTOs) is
    there to ACK it and both end ok; one that left after 0.1 s (what a run at D = 1000 did
    with 0.5 s against a 1 s RTO) leaves the sender to time out."""
    ms = _members(tmp_path, 1, linger_s=linger_s)
    cfg = HostConfig.from_dict(json.loads(open(ms[0].config).read()))
    with open(ms[0].config, "w") as f:
        json.dump(HostConfig(**{**cfg.__dict__, "timeout_s": 3.0}).to_dict(), f)
    members = [group.Member(m, time.monotonic) for m in ms]
    last = -(-NBYTES // TRANSPORT.mtu_bytes) - 1
    nic = members[1].host.nic
    send, lost = nic._tx_control, []

    def lossy(frame, dst):
        bth = wire.parse_bth(frame)
        if bth.opcode == wire.OP_ACKNOWLEDGE and bth.psn == last and not lost:
            lost.append(frame)
            return True                              # sent, and lost on the way
        return send(frame, dst)

    nic._tx_control = lossy
    ok = group.serve(members, time.monotonic())
    sender = _lines(tmp_path / "h0.host.out")[-1]
    assert lost
    if linger_s is None:
        assert ok and sender["ok"] and sender["open_flows"]["sending"] == []
    else:
        assert not ok and sender["timed_out"], sender
        (flow,) = sender["open_flows"]["sending"]
        assert flow["acked"] == last and flow["timeouts"] >= 2


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


class _Process:
    """What the launcher uses of a host process here: its stdin."""

    def __init__(self):
        self.stdin = self
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data

    def flush(self) -> None:
        pass


def test_the_launcher_says_end_once_every_host_has_finished_and_only_then(tmp_path):
    hosts = ["h0", "h1", "h2"]
    procs = HostProcesses(None, {h: None for h in hosts}, str(tmp_path))
    a, b = _Process(), _Process()
    procs.groups = [(("h0", "h1"), a), (("h2",), b)]
    procs.procs = {"h0": a, "h1": a, "h2": b}
    for h in hosts:
        (tmp_path / f"{h}.host.out").write_text('{"ready": true}\n')
        procs._offsets[h], procs._partial[h] = 0, ""
    for h in hosts:
        procs.poll()
        assert a.written == b.written == b""              # not while one still runs
        with open(tmp_path / f"{h}.host.out", "a") as f:
            f.write('{"progress": 6, "of": 6}\n{"finished": true}\n')
    procs.poll()
    procs.poll()
    assert a.written == b.written == b"end\n"             # once, to every process
