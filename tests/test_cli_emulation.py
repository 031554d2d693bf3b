"""The interactive CLI (``symphony-emu cli``) driven by a command script on a live fabric
(root): each added command does what its help says, every example of the guide's (docs/usage.md)
live-CLI section is accepted, and bad arguments are named while the session goes on."""

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
from tests.test_live_commands import README_EXAMPLES, SPEC_TEXT as SPEC, readme_mininet_examples
from topologies import wiring

pytestmark = pytest.mark.emulation


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


def errors(out: str) -> list[str]:
    """The CLI's error lines (Mininet's own start line aside)."""
    return [x for x in out.splitlines()
            if x.startswith("*** ") and not x.startswith("*** Starting CLI")]


def htb_rate(session, switch, intf):
    out = session.fab[switch].cmd(f"tc class show dev {intf} classid 1:1")
    return re.search(r"rate (\S+)", out).group(1)


def test_cli_commands_do_what_their_help_says(tmp_path):
    path = tmp_path / "cli.toml"
    path.write_text(SPEC)
    veths = _root_veths()
    spec = load(str(path))
    toward = wiring.port_toward("leaf0", "spine0", spec.topology.per_leaf)
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

        # Every README example, in the README's order (a job first, perturbations after
        # it ended, undone before Mininet's own commands): none is refused.
        readme = [c for cmds in README_EXAMPLES.values() for c in cmds]
        job_part = [c for c in readme if not c.startswith(("perturb", "unperturb"))]
        perturb_part = [c for c in readme if c.startswith("perturb")]
        out = run_script(s, tmp_path, job_part + perturb_part + ["stats", "unperturb",
                                                                 "unperturb all"]
                         + readme_mininet_examples())
        assert errors(out) == [], out
        assert out.count("4 switches: ") == 3 and '"k": 0.01' in out     # on, off, set
        assert re.search(r"started job\(s\) \[1\] -> .*run2", out) and "all jobs ended" in out
        assert "plot: " in out
        spine1 = wiring.port_toward("leaf0", "spine1", spec.topology.per_leaf)
        for what in (f"applied: leaf0:{toward}", f"{5 / 1.3:g} Mbit/s",   # 5 Mbit/s / 1.3
                     f"applied: leaf0:{spine1} down", "applied: spine0 drops 1.00% of RoCE",
                     "applied: background h0->h5 1 Mbit/s"):                # 2 Gb/s / 2000
            assert what in out, (what, out)
        assert out.count("undone: ") == 4 and f"undone: leaf0:{spine1} up" in out
        assert "3 received" in out                                   # h0 ping -c 3 h5
        assert "qdisc htb" in out                                    # leaf0 tc -s qdisc
        assert "state UP" in s.fab["leaf0"].cmd(f"ip link show {spine1}")
        with open(tmp_path / "out" / "run2" / "summary.json") as f:
            colls = json.load(f)["runs"][0]["jobs"][0]["collectives"]
        assert len(colls) == 1 and colls[0]["verified"]

        # Bad arguments: each named with what is allowed, and the session goes on.
        bad = {
            "job passes=abc": "*** passes='abc': must be an integer (collectives per job)",
            "job passes=1.5": "*** passes=1.5: must be an integer",
            "job passes=": "*** 'passes=': no value after '='",
            "job passes=0": "*** passes=0 (job 1): must be in 1..10000",
            "job colour=red": "*** unknown option colour='red'; allowed: passes=N",
            "job 7": "*** job id '7': the spec's jobs are [1]",
            "wait abc": "*** wait 'abc': SECONDS must be a number",
            "plot 9": "*** no run 9; runs are 1..2",
            "perturb link_down switch=leaf0 toward=spine1 at_ms=5":
                "*** at_ms: a live perturbation applies now",
            "perturb loss switch=spine0": "fraction = None: the loss perturbation needs fraction",
            "perturb loss switch=spine0 fraction=2": "fraction = 2.0: must be in (0, 1)",
            "unperturb sideways": "*** usage: unperturb [all]",
            "symphony set k": "*** 'k': expected key=value",
        }
        out = run_script(s, tmp_path, list(bad) + ["jobs"])
        for line, message in bad.items():
            assert message in out, (line, out)
        assert len(errors(out)) == len(bad), out
        assert re.search(r"run2: jobs \[1\], ended", out)              # still there
    assert _root_veths() <= veths
    assert os.path.isdir(tmp_path / "out" / "fabric")


def test_the_topology_script_runs_as_mininet_users_run_scripts(tmp_path):
    # `sudo python3 topologies/leafspine.py [SPEC]`: the system's Python (no Mininet there:
    # the script goes on in the project's environment), the main job's fabric with its
    # agents, the CLI; `exit` removes everything
    import shutil
    import subprocess
    from topologies.wiring import REPO_ROOT
    python = shutil.which("python3", path="/usr/bin:/bin") or "python3"
    script = tmp_path / "cmds.txt"
    script.write_text("nodes\nexit\n")
    veths = _root_veths()
    p = subprocess.run([python, os.path.join(REPO_ROOT, "topologies", "leafspine.py"),
                        "--script", str(script), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "*** table1: 16 hosts, scheme symphony" in p.stdout + p.stderr
    nodes = (p.stdout + p.stderr).split("available nodes are:")[1].split()
    assert {"h0", "h15", "leaf0", "leaf3", "spine0", "spine3"} <= set(nodes)
    assert _root_veths() == veths               # nothing left behind
