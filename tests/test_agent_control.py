"""The switch agent's control channel survives any datagram (no root).

An ``Agent`` is built without NFQUEUE (its one port is ``lo``, which exists in every
namespace) and its control socket bound to an abstract name; datagrams go through
``Agent._serve_control``, the agent loop's one dispatch point, exactly as the loop calls
it. After each: a JSON reply with ``ok`` true/false, no internal error, and the agent's
parameters still what the typed configs allow; after all of them the pipeline still
forwards a packet.
"""

import json
import os
import random
import socket

import pytest

from runtime import wire
from runtime.codec import to_dict
from switch_agent.agent import Agent
from switch_agent.config import (MAX_RATE_BPS, MIN_RATE_BPS, MIN_T_WIN_S, AgentConfig,
                                 PortParams, RedParams, SymphonyParams)
from switch_agent import control
from switch_agent.control import COMMANDS, MAX_DATAGRAM_BYTES

PORT = "lo"
RATE_BPS = 1e7
N_FUZZ = 1500


class Rig:
    def __init__(self, tmp_path):
        cfg = AgentConfig(switch="s1", red=RedParams(), symphony=SymphonyParams(t_win_s=0.1),
                          scheme="symphony",
                          ports={PORT: PortParams(RATE_BPS, 262144, 9100)},
                          telemetry_path=str(tmp_path / "s1.jsonl"))
        self.agent = Agent(cfg)
        name = f"\0symphony-emu-test/{os.getpid()}/{id(self)}"
        self.agent.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.agent.ctl.bind(name)
        self.agent.ctl.setblocking(False)
        self.client = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.client.bind("")                      # autobind: an address to reply to
        self.client.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        self.client.settimeout(2)
        self.name = name

    def send(self, data: bytes) -> dict:
        self.client.sendto(data, self.name)
        self.agent._serve_control()
        return json.loads(self.client.recv(1 << 20))

    def command(self, cmd) -> dict:
        return self.send(json.dumps(cmd).encode())

    def close(self):
        self.agent.ctl.close()
        self.client.close()
        self.agent.telemetry.close()

    def assert_sane(self):
        """The agent's live parameters are what the typed configs allow."""
        a = self.agent
        RedParams(**to_dict(a.pipeline.red))
        SymphonyParams(**to_dict(a.pipeline.tracker.params))
        assert 0 <= a.pipeline.drop_fraction <= 1
        for port in a.pipeline.ports.values():
            assert MIN_RATE_BPS <= port.queue.rate_Bps * 8 <= MAX_RATE_BPS
        assert a.control_errors == 0


@pytest.fixture
def rig(tmp_path):
    r = Rig(tmp_path)
    yield r
    r.close()


def roce_packet(job: int = 1) -> bytes:
    body = wire.build_data(job, 0, 1, 5, wire.OP_SEND_MIDDLE, bytes(64))
    return wire.build_ip_packet("10.0.0.2", "10.0.1.2", 50000,
                                wire.with_icrc("10.0.0.2", "10.0.1.2", 50000, body))


# --- the datagrams, one by one ----------------------------------------------

HOSTILE = [
    # (datagram, words the error must hold)
    (b"null", ["JSON object", "null"]),
    (b"[1]", ["JSON object", "an array", "[1]"]),
    (b"[" * 5000 + b"]" * 5000, ["nests too deeply"]),
    (b'{"cmd": "stats", "x": "\xff\xfe"}', ["UTF-8", "byte 23"]),
    (b'"stats"', ["JSON object", "a string"]),
    (b"1e999", ["finite"]),
    (b"{not json", ["not JSON"]),
    (b"", ["not JSON"]),
    (b'{"cmd": "red", "enabled": "false"}', ["red: enabled must be true or false", "'false'"]),
    (b'{"cmd": "red", "kmax_bytes": Infinity}', ["Infinity is not allowed"]),
    (b'{"cmd": "red", "kmax_bytes": 1e999}', ["1e999", "finite"]),
    (b'{"cmd": "red", "kmin_bytes": 200000}', ["red: kmin_bytes", "kmin_bytes < kmax_bytes",
                                               "200000"]),
    (b'{"cmd": "red", "pmax": -0.5}', ["red: pmax must be in [0, 1], got -0.5"]),
    (b'{"cmd": "port_rate", "port": "lo", "rate_bps": NaN}', ["NaN is not allowed"]),
    (b'{"cmd": "port_rate", "port": "lo", "rate_bps": 1e-300}',
     ["port_rate: rate_bps must be a rate in 1000..1e+12 bit/s", "1e-300"]),
    (b'{"cmd": "port_rate", "port": "lo", "rate_bps": -5}', ["rate_bps", "got -5"]),
    (b'{"cmd": "port_rate", "port": "lo", "rate_bps": "5e6"}', ["rate_bps", "'5e6'"]),
    (b'{"cmd": "port_rate", "port": "eth9", "rate_bps": 5e6}',
     ["port_rate: port must be a port of s1: lo", "'eth9'"]),
    (b'{"cmd": "port_rate", "port": ["lo"], "rate_bps": 5e6}', ["port must be", "an array"]),
    (b'{"cmd": "port_rate", "port": "lo"}', ["port_rate: missing 'rate_bps'"]),
    (b'{"cmd": "symphony", "t_win_s": 1e-300}',
     [f"symphony: t_win_s must be a time >= {MIN_T_WIN_S:g} s", "1e-300"]),
    (b'{"cmd": "symphony", "enabled": "no"}', ["enabled must be true or false", "'no'"]),
    (b'{"cmd": "symphony", "enabled": 0}', ["enabled must be true or false", "got 0"]),
    (b'{"cmd": "symphony", "n_warmup": 2.5}', ["n_warmup must be an integer >= 0", "2.5"]),
    (b'{"cmd": "symphony", "k": -1}', ["symphony: k must be in [0, 100]", "-1"]),
    (b'{"cmd": "symphony", "k": ' + b"9" * 40 + b"}", ["integer", "out of range"]),
    (b'{"cmd": "symphony", "tracking": "ring"}', ["symphony: unknown key 'tracking'",
                                                  "allowed: enabled, k, tau, t_win_s"]),
    (b'{"cmd": "symphony", "tau": {"a": 1}}', ["tau must be a number", "an object"]),
    (b'{"cmd": "drop_fraction", "value": "0.5"}', ["drop_fraction", "must be in [0, 1]",
                                                   "'0.5'"]),
    (b'{"cmd": "drop_fraction", "value": 1.5}', ["drop_fraction must be in [0, 1], got 1.5"]),
    (b'{"cmd": "drop_fraction", "value": true}', ["drop_fraction", "True"]),
    (b'{"cmd": "drop_fraction"}', ["drop_fraction: missing 'value'"]),
    (b'{"cmd": "stats", "verbose": 1}', ["stats: unknown key 'verbose'; allowed: none"]),
    (b'{"cmd": "reboot"}', ["'reboot' is not a command", "allowed: stats, symphony, red"]),
    (b'{"cmd": ["stats"]}', ["is not a command"]),
    (b'{"cmd": "red", "enabled": false, "bogus": 1}', ["red: unknown key 'bogus'",
                                                       "allowed: enabled, kmin_bytes"]),
    (b'{"cmd": "red", "pmax": "' + b"x" * 1000 + b'"}', ["1000 characters", "at most 256"]),
]


@pytest.mark.parametrize("data, words", HOSTILE, ids=[str(i) for i in range(len(HOSTILE))])
def test_a_hostile_datagram_is_answered_with_an_error_and_changes_nothing(rig, data, words):
    before = rig.command({"cmd": "stats"})
    reply = rig.send(data)
    assert reply["ok"] is False, reply
    for w in words:
        assert w in reply["error"], (w, reply["error"])
    after = rig.command({"cmd": "stats"})
    for key in ("red", "symphony", "drop_fraction", "scheme"):
        assert after[key] == before[key], key
    assert rig.agent.pipeline.ports[1].queue.rate_Bps * 8 == RATE_BPS
    rig.assert_sane()


def test_red_enabled_false_as_a_string_leaves_red_on(rig):
    assert rig.send(b'{"cmd": "red", "enabled": "false"}')["ok"] is False
    assert rig.agent.pipeline.red.enabled is True
    assert rig.command({"cmd": "red", "enabled": False}) == {"ok": True, **to_dict(
        RedParams(enabled=False))}
    assert rig.agent.pipeline.red.enabled is False


def test_a_datagram_longer_than_the_limit_is_refused_by_its_length(rig):
    big = json.dumps({"cmd": "stats", "pad": "x" * (MAX_DATAGRAM_BYTES + 100)}).encode()
    reply = rig.send(big)
    assert reply == {"ok": False, "error": f"a command is at most {MAX_DATAGRAM_BYTES} "
                                           "bytes; this one is longer"}


def test_valid_commands_still_apply(rig):
    assert rig.command({"cmd": "symphony", "k": 0.5, "t_win_s": 0.2}) == \
        {"ok": True, "enabled": True, "k": 0.5, "t_win_s": 0.2}
    assert rig.command({"cmd": "symphony", "enabled": False})["enabled"] is False
    assert rig.agent.pipeline.scheme.name == "baseline"
    assert rig.command({"cmd": "port_rate", "port": "lo", "rate_bps": 5e6}) == \
        {"ok": True, "port": "lo", "rate_bps": 5e6}
    assert rig.agent.pipeline.ports[1].queue.rate_Bps * 8 == 5e6
    assert rig.command({"cmd": "drop_fraction", "value": 0.25})["drop_fraction"] == 0.25
    assert rig.command({"cmd": "red", "kmin_bytes": 1000, "kmax_bytes": 2000})["kmax_bytes"] \
        == 2000


def test_symphony_reconfiguration_does_not_switch_the_pq_scheme_off(tmp_path):
    r = Rig(tmp_path)
    try:
        r.agent.pipeline.set_scheme("pq")
        assert r.command({"cmd": "symphony", "k": 0.5})["ok"] is True
        assert r.agent.pipeline.scheme.name == "pq"
    finally:
        r.close()


def test_a_bug_behind_the_dispatch_point_is_answered_and_logged_not_fatal(rig, monkeypatch):
    def broken():
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(rig.agent, "stats", broken)
    reply = rig.command({"cmd": "stats"})
    assert reply == {"ok": False, "error": "internal error ZeroDivisionError: a bug"}
    assert rig.agent.control_errors == 1
    rig.agent.telemetry.flush()
    with open(rig.agent.cfg.telemetry_path) as f:
        errors = [json.loads(line) for line in f if '"control_error"' in line]
    assert len(errors) == 1 and "ZeroDivisionError" in errors[0]["traceback"]


# --- the fuzz -----------------------------------------------------------------------

HOSTILE_VALUES = [None, "", "false", "true", "NaN", "Infinity", "1e-300", 0, -1, 1, 2,
                  0.5, 1e-300, -1e-300, 5e-324, 1e308, -1e308, 2**63, -2**63, 2**64, 1e3,
                  1e12, 1e13, 0.999, 1.0000001, True, False, [], [1], {}, {"cmd": "stats"},
                  "x" * 300, "lo", "eth0", "\u0000", "\udcff", [[[[]]]]]
LITERALS = [b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"9" * 30, b"9" * 5000,
            b"[" * 3000, b"\xff", b"\"\\ud800\""]


def hostile_datagrams(rng: random.Random, n: int):
    """``n`` datagrams: valid commands with hostile values, raw literals spliced in,
    random bytes, random JSON, truncations, deep nesting."""
    keys = sorted({k for ks, _ in COMMANDS.values() for k in ks} | {"cmd", "bogus"})
    for i in range(n):
        kind = i % 7
        if kind == 0:                                  # a command, hostile values
            cmd = {"cmd": rng.choice(list(COMMANDS) + ["", "STATS", None, 1])}
            for k in rng.sample(keys, rng.randrange(0, 4)):
                cmd[k] = rng.choice(HOSTILE_VALUES)
            yield json.dumps(cmd).encode("utf-8", errors="surrogatepass")
        elif kind == 1:                                # a raw literal as a value
            c = rng.choice(list(COMMANDS))
            k = rng.choice(COMMANDS[c][0] or ("x",))
            yield b'{"cmd": "%s", "%s": %s}' % (c.encode(), k.encode(), rng.choice(LITERALS))
        elif kind == 2:                                # random bytes
            yield bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        elif kind == 3:                                # random JSON structure
            yield json.dumps(_random_json(rng, 4)).encode()
        elif kind == 4:                                # a valid command cut short / bit-flipped
            good = bytearray(json.dumps({"cmd": "red", "enabled": True, "kmin_bytes": 1000,
                                         "kmax_bytes": 5000, "pmax": 0.1}).encode())
            if rng.random() < 0.5:
                yield bytes(good[:rng.randrange(len(good))])
            else:
                good[rng.randrange(len(good))] ^= 1 << rng.randrange(8)
                yield bytes(good)
        elif kind == 5:                                # deep nesting, in an array or value
            depth = rng.choice([50, 500, 990, 1100, 5000, 20000])
            body = b"[" * depth + b"]" * depth
            yield body if rng.random() < 0.5 else b'{"cmd": "red", "pmax": ' + body + b"}"
        else:                                          # numbers at the edges of each range
            c = rng.choice(["symphony", "red", "port_rate", "drop_fraction"])
            cmd = {"cmd": c}
            for k in COMMANDS[c][0]:
                if rng.random() < 0.6:
                    cmd[k] = rng.choice([0, 1, -1, 1e-7, 1e-6, 0.999999, 1e3, 999.9, 1e12,
                                         1.1e12, 2, 2.5, True, "lo", 10**18])
            yield json.dumps(cmd).encode()


def _random_json(rng, depth):
    r = rng.random()
    if depth == 0 or r < 0.3:
        return rng.choice(HOSTILE_VALUES[:30])
    if r < 0.6:
        return [_random_json(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["cmd", "k", "value", "port", "x"]): _random_json(rng, depth - 1)
            for _ in range(rng.randrange(4))}


def test_fuzz_of_hostile_datagrams_never_breaks_the_agent(rig):
    rng = random.Random(13)
    accepted = rejected = stats_ok = 0
    for data in hostile_datagrams(rng, N_FUZZ):
        reply = rig.send(data)
        assert isinstance(reply, dict) and isinstance(reply.get("ok"), bool), (data[:80], reply)
        if reply["ok"]:
            accepted += 1
            stats_ok += "counters" in reply
        else:
            rejected += 1
            assert isinstance(reply["error"], str) and reply["error"], data[:80]
            assert not reply["error"].startswith("internal error"), (data[:80], reply)
        rig.assert_sane()
    assert accepted + rejected == N_FUZZ
    assert rejected > 0.8 * N_FUZZ and accepted > 20       # both paths were exercised
    # the agent still answers and its pipeline still forwards and counts
    stats = rig.command({"cmd": "stats"})
    assert stats["ok"] and stats["control_errors"] == 0
    before = rig.agent.pipeline.ports[1].counters.pkts
    rig.agent.pipeline.handle(roce_packet(), 1, 1.0)
    assert rig.agent.pipeline.ports[1].counters.pkts == before + 1
    rig.agent.telemetry.flush()
    with open(rig.agent.cfg.telemetry_path) as f:
        records = [json.loads(line) for line in f]
    # one ``control`` record per datagram but the accepted stats; rejected ones cut short
    assert [r["type"] for r in records] == ["control"] * (N_FUZZ - stats_ok)
    assert max(len(json.dumps(r)) for r in records) < 2000


def test_the_fuzz_holds_every_kind_of_hostile_datagram():
    data = list(hostile_datagrams(random.Random(13), N_FUZZ))
    assert len(data) == N_FUZZ >= 1000
    assert sum(len(d) > 10_000 for d in data) >= 20                 # deep nesting
    assert sum(b"Infinity" in d or b"NaN" in d for d in data) >= 20
    assert sum(_not_utf8(d) for d in data) >= 100
    assert sum(d.startswith(b"{") for d in data) >= 700


def _not_utf8(d: bytes) -> bool:
    try:
        d.decode()
        return False
    except UnicodeDecodeError:
        return True


def test_send_command_reaches_an_agent_by_its_abstract_name(rig):
    # the runner's client in the agent's own namespace (here: this one, no setns)
    import threading
    name = rig.name[1:]                                   # without the leading NUL
    assert control.address(name) == rig.name
    rig.agent.ctl.setblocking(True)
    server = threading.Thread(target=rig.agent._serve_control)
    server.start()
    reply = control.send_command(name, {"cmd": "drop_fraction", "value": 0.125}, 2.0)
    server.join(2)
    assert reply == {"ok": True, "drop_fraction": 0.125}
    with pytest.raises(ConnectionRefusedError):           # nothing bound by that name
        control.send_command(name + "-nobody", {"cmd": "stats"}, 2.0)


def test_control_names_are_abstract_unique_and_fit_a_socket_address():
    a = control.control_name("/work/runs/x", "leaf0")
    assert a != control.control_name("/work/runs/y", "leaf0")
    assert a != control.control_name("/work/runs/x", "leaf1")
    assert len(control.address(control.control_name("/r" * 500, "s" * 40)).encode()) <= 107


# --- the fidelity monitor's two sides at one instant ------------------------------------

class _LateKernel:
    """A kernel whose counters are read 20 ms after the agent's loop took its time, its
    queue drained over those 20 ms as a real port's would."""

    def __init__(self, ifindex, t_s, backlog_bytes):
        self.ifindex, self.t_s, self.backlog = ifindex, t_s, backlog_bytes

    def sample(self, ifindexes):
        from switch_agent.kernel_queues import PortSample
        return {self.ifindex: PortSample(sent_bytes=0, backlog_bytes=self.backlog, drops=0)}


def test_the_queue_model_is_compared_with_the_kernel_at_the_kernels_instant(tmp_path):
    rig = Rig(tmp_path)
    try:
        a = rig.agent
        (ifindex, port), = a.pipeline.ports.items()
        port.queue.enqueue(60_000, 100.0)           # 60 KB at t = 100 s, 10 Mbit/s
        late = 100.0 + 0.020                        # the dump: 20 ms later, 25 KB sent
        sent = port.queue.burst_bytes + 0.020 * RATE_BPS / 8   # its bucket, then the rate
        a.kernel = _LateKernel(ifindex, late, int(60_000 - sent))
        a._sample_kernel()
        s = a.fidelity[ifindex].summary()
        # read at the loop's 100.0 the model would be 25 KB over the kernel's queue
        assert s["queue_samples"] == 1 and s["queue_err_max_bytes"] < 1_500
        assert s["queue_err_worst"]["t_s"] == late
    finally:
        a.kernel = None
        rig.close()
