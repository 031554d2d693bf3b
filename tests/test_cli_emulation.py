"""The interactive CLI (``symphony-emu cli``) driven by a command script on a live fabric
(root): each added command does what its help says."""

import io
import json
import logging
import os
import re

import pytest
from mininet.log import lg

from emulator.cli.live import LiveSession, SymphonyCLI
from emulator.spec import load
from tests.conftest import _root_veths
from topologies import fabric

pytestmark = pytest.mark.emulation

SPEC = ('name = "cli"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'link_rate_gbps = 10.0\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = 32768\npasses = 2\n'
        '[run]\ntimeout_s = 120\n')


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(level=1)
        self.text = []

    def emit(self, record):
        self.text.append(record.getMessage())


def run_script(session, tmp_path, lines):
    script = tmp_path / "cmds.txt"
    script.write_text("\n".join(lines) + "\n")
    cap = Capture()
    lg.addHandler(cap)
    help_text = io.StringIO()                  # Cmd's own output (help)
    try:
        with open(os.devnull) as stdin:        # a script needs no terminal
            SymphonyCLI(session, script=str(script), stdin=stdin, stdout=help_text)
    finally:
        lg.removeHandler(cap)
    return "".join(cap.text) + help_text.getvalue()


def htb_rate(session, switch, intf):
    out = session.fab[switch].cmd(f"tc class show dev {intf} classid 1:1")
    return re.search(r"rate (\S+)", out).group(1)


def test_cli_commands_do_what_their_help_says(tmp_path):
    path = tmp_path / "cli.toml"
    path.write_text(SPEC)
    veths = _root_veths()
    spec = load(str(path))
    toward = fabric.port_toward("leaf0", "spine0", spec.topology.per_leaf)
    with LiveSession(spec, "symphony", 1, str(tmp_path / "out")) as s:
        assert htb_rate(s, "leaf0", toward) == "5Mbit"
        out = run_script(s, tmp_path, [
            "help job",
            "symphony set k=0.002 tau=0.5",
            "perturb imbalance switch=leaf0 toward=spine0 ratio=2",
            "perturb imbalance switch=leaf9 toward=spine0 ratio=2",
            "perturb teleport x=1",
            "symphony sideways",
            "job passes=3",
            "job",                      # the hosts are busy: refused, named
            "wait 120",
            "jobs",
            "stats",
            "plot",
        ])
        assert "start the spec's jobs" in out                         # help job
        agent = s.fab.agent("leaf0", {"cmd": "stats"})["symphony"]
        assert agent["k"] == 0.002 and agent["tau"] == 0.5
        assert "applied: leaf0:" in out and htb_rate(s, "leaf0", toward) == "2500Kbit"
        assert "*** " in out and "leaf9" in out                        # unknown switch named
        assert "kind 'teleport': live perturbations are imbalance" in out
        assert "usage: symphony on|off|set" in out
        assert "still run an earlier job" in out
        assert "all jobs ended" in out
        assert re.search(r"run1: jobs \[1\], ended, steps (\d+)/\1", out), out
        assert re.search(r"leaf0: symphony on, marks red \d+ symphony \d+ both \d+; "
                         r"job 1: step_min \d+ alpha", out), out
        assert "plot: " in out and "overlap_and_step_rate.png" in out
        with open(tmp_path / "out" / "run1" / "summary.json") as f:
            summary = json.load(f)
        colls = summary["runs"][0]["jobs"][0]["collectives"]
        assert len(colls) == 3 and all(c["verified"] for c in colls)

        out = run_script(s, tmp_path, ["unperturb", "unperturb", "symphony off", "stats"])
        assert "undone: leaf0:" in out and "nothing to undo" in out
        assert htb_rate(s, "leaf0", toward) == "5Mbit"
        assert "leaf0: symphony off" in out
    assert _root_veths() <= veths
    assert os.path.isdir(tmp_path / "out" / "fabric")
