"""cluster.servers without root or ssh: what the check of each real server concludes
from what the server said (the emulation test, tests/test_real_servers_emulation.py,
checks the same against sshd servers)."""

import subprocess
import sys

import pytest

from topologies import wiring
from cluster.servers import PreflightError, probe

GOOD = ("address=10.0.0.{i}\nuid=0\ncpus=16\nmem=68719476736\ninterface=eth1\n"
        "speed=25000\npython=1\nproject=1\nmodules=1\n")


class Said:
    """An ssh access whose servers answer the probe with ``facts[i]`` and the frame check
    with ``pings[i]``."""

    def __init__(self, facts, pings=None):
        self.facts, self.pings, self.commands = facts, pings or {}, []

    def run(self, i, command, timeout_s=30.0, **_):
        self.commands.append((i, command))
        out = self.pings.get(i, "") if command.startswith("ping") else self.facts[i]
        return subprocess.CompletedProcess(command, 0, out.encode(), b"")


def test_servers_with_everything_give_their_facts_and_are_pinged_with_a_9050_byte_frame():
    access = Said([GOOD.format(i=2), GOOD.format(i=3)],
                  {0: "ok=10.0.0.3\n", 1: "ok=10.0.0.2\n"})
    facts = probe(access, ["root@a", "root@b"])
    assert [(f.address, f.interface, f.cpus, f.speed_bps) for f in facts] == \
        [("10.0.0.2", "eth1", 16, 25e9), ("10.0.0.3", "eth1", 16, 25e9)]
    assert facts[0].mem_available_bytes == 64 << 30
    pings = [c for _, c in access.commands if c.startswith("ping")]
    assert pings[0].startswith("ping -n -q -c 1 -W 2 -M do -s 9022 10.0.0.3 ")   # + 28 = 9050


def test_each_server_that_lacks_something_is_named_with_every_reason():
    bad = ("address=10.0.0.3\nuid=1000\ncpus=4\nmem=1\ninterface=\nspeed=\nmissing=mnexec\n"
           "missing=ping\n")
    nopy = GOOD.format(i=4).replace("python=1\n", "")
    with pytest.raises(PreflightError) as e:
        probe(Said([GOOD.format(i=2), bad, nopy]), ["root@a", "me@b", "root@c:2222"])
    lines = str(e.value).splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("server s1 (me@b): logs in as uid 1000, not root")
    assert "missing mnexec, ping (scripts/setup.sh installs them)" in lines[0]
    assert "no interface holds the underlay address '10.0.0.3'" in lines[0]
    assert lines[1] == (f"server s2 (root@c:2222): no {sys.executable} (the processes run "
                        "the coordinator's Python at the same path: install the project "
                        "there as here)")


def test_an_underlay_that_cuts_jumbo_frames_is_refused_naming_both_ends():
    access = Said([GOOD.format(i=2), GOOD.format(i=3)],
                  {0: "fail=10.0.0.3\n", 1: "ok=10.0.0.2\n"})
    with pytest.raises(PreflightError) as e:
        probe(access, ["root@a", "root@b"])
    assert str(e.value) == (
        f"server s0 (root@a): a 9050-byte frame (the fabric's {wiring.FABRIC_MTU}-byte MTU "
        "plus VXLAN's 50) does not reach 10.0.0.3 from 10.0.0.2 (eth1) unfragmented: raise "
        "the underlay's MTU to at least that, on the interfaces and the switches between")
