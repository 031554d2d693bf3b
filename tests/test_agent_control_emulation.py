"""The control plane on a live fabric (root; marker `emulation`): only the runner reaches
an agent, no datagram brings one down, and a dead agent means unmarked forwarding.

One dumbbell (h0, h1 on leaf0). A root process in h0's namespace tries to set leaf0's
``drop_fraction`` to 0.5 and to switch Symphony off — the attack of issue 13 — and fails,
while the same probe from leaf0's own namespace, and ``LiveFabric.agent``, get through. Then
1500 hostile datagrams go to the live agent through its control channel: it keeps its
pid, answers each, and still forwards (and counts) a RoCE stream. Last, the agent is
killed: NFQUEUE's ``--queue-bypass`` forwards without it.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import pytest

from emulator.launch.fabric import LiveFabric
from switch_agent import control
from tests.conftest import _root_veths
from tests.fabric_util import ENV, REPO_ROOT, run_streams, wait_until
from tests.test_agent_control import N_FUZZ, hostile_datagrams
from topologies import wiring
from topologies.dumbbell import DumbbellTopo

pytestmark = pytest.mark.emulation

H = [wiring.host_ip(0, i) for i in range(2)]
RATE = wiring.DEFAULT_RATE_BPS

# Run as root inside a namespace: try the agent's abstract socket and the old socket
# file; list the Unix sockets this namespace can see.
PROBE = r"""
import json, socket, sys
name, old_path, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
out = {"uid": __import__("os").geteuid(), "tries": []}
with open("/proc/net/unix") as f:
    out["visible"] = [l.split()[-1] for l in f if "symphony-emu" in l]
for target in ("\0" + name, old_path):
    for cmd in commands:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(""); s.settimeout(2)
        try:
            s.sendto(json.dumps(cmd).encode(), target)
            out["tries"].append(json.loads(s.recv(1 << 20)).get("ok"))
        except OSError as e:
            out["tries"].append(type(e).__name__)
        s.close()
print(json.dumps(out))
"""
ATTACK = [{"cmd": "drop_fraction", "value": 0.5}, {"cmd": "symphony", "enabled": False}]


@pytest.fixture(scope="module")
def dumbbell(tmp_path_factory):
    rundir = str(tmp_path_factory.mktemp("control"))
    veths = _root_veths()
    fab = LiveFabric(DumbbellTopo(2, rundir=rundir))
    fab.start()
    yield fab
    fab.stop()
    assert not fab.leftovers, f"teardown had to remove: {fab.leftovers}"
    assert _root_veths() <= veths


def probe(node, sw, commands):
    old_path = os.path.join(sw.rundir, f"{sw.name}.ctl")
    p = node.popen([sys.executable, "-c", PROBE, sw.control_name, old_path,
                    json.dumps(commands)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   text=True, env=ENV, cwd=REPO_ROOT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    return json.loads(out)


def test_a_root_process_in_a_host_namespace_cannot_reach_the_agent(dumbbell):
    fab, sw = dumbbell, dumbbell["leaf0"]
    fab.agent("leaf0", {"cmd": "symphony", "enabled": True})
    got = probe(fab["h0"], sw, ATTACK)
    assert got["uid"] == 0
    assert got["visible"] == []                  # h0's namespace lists no agent socket
    # abstract name: no such socket in h0's namespace; the old file: there is none
    assert got["tries"] == ["ConnectionRefusedError"] * 2 + ["FileNotFoundError"] * 2
    stats = fab.agent("leaf0", {"cmd": "stats"})
    assert stats["drop_fraction"] == 0.0 and stats["symphony"]["enabled"] is True

    # the same probe from inside the switch's namespace does get through (so the one
    # from h0 failed for the namespace, not for a wrong name)
    inside = probe(sw, sw, [{"cmd": "stats"}])
    assert inside["tries"][0] is True and len(inside["visible"]) == 1
    # and the runner's client (made in leaf0's namespace) can change things
    assert fab.agent("leaf0", {"cmd": "drop_fraction", "value": 0.0})["ok"] is True


def test_the_live_agent_survives_hostile_datagrams_and_keeps_forwarding(dumbbell):
    fab, sw = dumbbell, dumbbell["leaf0"]
    pid = sw.agent_proc.pid
    fab.agent("leaf0", {"cmd": "red", "enabled": True, "kmin_bytes": 50_000,
                        "kmax_bytes": 100_000, "pmax": 0.2})
    replies = {True: 0, False: 0}
    with control.client_socket(sw.pid) as s:
        s.settimeout(5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        for data in hostile_datagrams(random.Random(13), N_FUZZ):
            s.sendto(data, control.address(sw.control_name))
            reply = json.loads(s.recv(1 << 20))
            replies[reply["ok"]] += 1
            if not reply["ok"]:
                assert not reply["error"].startswith("internal error"), (data[:80], reply)
    assert replies[True] + replies[False] == N_FUZZ and replies[False] > 0.8 * N_FUZZ
    assert sw.agent_proc.pid == pid and sw.agent_proc.poll() is None
    stats = fab.agent("leaf0", {"cmd": "stats"})
    assert stats["control_errors"] == 0

    # put the knobs the fuzz may have turned back, then a RoCE stream through the agent
    fab.agent("leaf0", {"cmd": "drop_fraction", "value": 0.0})
    for port in sw.intfNames():
        if port != "lo":
            fab.agent("leaf0", {"cmd": "port_rate", "port": port, "rate_bps": RATE})
    before = stats["counters"]["total"]["roce_pkts"]
    [rx], _ = run_streams([(fab["h1"], H[1])],
                          [(fab["h0"], ["--src", H[0], "--dst", H[1], "--packets", 100,
                                        "--rate-bps", 0.3 * RATE])])
    assert rx["steps"]["1/0"]["pkts"] == 100
    after = fab.agent("leaf0", {"cmd": "stats"})["counters"]["total"]["roce_pkts"]
    assert after - before == 100                 # the agent forwarded them, not a bypass
    assert sw.agent_proc.pid == pid and sw.agent_proc.poll() is None


def test_a_dead_agent_means_unmarked_forwarding_not_a_black_hole(dumbbell):
    fab, sw = dumbbell, dumbbell["leaf0"]
    os.kill(sw.agent_proc.pid, signal.SIGKILL)
    assert wait_until(lambda: sw.agent_proc.poll() is not None, 5)
    time.sleep(0.2)
    out = fab["h0"].cmd(f"ping -c 3 -i 0.2 -W 1 {H[1]}")
    assert " 0% packet loss" in out, out
    [rx], _ = run_streams([(fab["h1"], H[1])],
                          [(fab["h0"], ["--src", H[0], "--dst", H[1], "--packets", 50,
                                        "--rate-bps", 0.3 * RATE])])
    assert rx["steps"]["1/0"]["pkts"] == 50 and rx["steps"]["1/0"]["ce"] == 0
