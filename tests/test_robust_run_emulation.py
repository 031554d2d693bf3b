"""Nothing outlives a run (root): ``symphony-emu run`` as a user runs it, ended by
Ctrl-C or SIGTERM at random moments (teardown included) and by SIGKILL, each followed
by a check, from the run's ledger, that none of its processes and namespaces remain
(and so none of the interfaces and iptables rules inside them); after a SIGKILL,
``symphony-emu clean`` and the same command again. And a permanent link failure: the
unfinished collectives are reported as failed, never as slow."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from emulator.launch import ledger
from emulator.rundir import RunFolder
from tests.conftest import _root_veths
from topologies.wiring import REPO_ROOT

pytestmark = pytest.mark.emulation

SPEC = ('name = "robust"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "dumbbell"\nhosts = 3\nlink_rate_gbps = 10.0\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nrings = "single"\nchunk_bytes = 65536\npasses = 4\n'
        '[run]\nschemes = ["symphony"]\nseeds = [1]\ntimeout_s = 60\n')


def start(spec_path, out, *extra):
    return subprocess.Popen([sys.executable, "-m", "emulator.cli", "run", str(spec_path),
                             "--out", str(out), "--no-plots", *extra],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def left_behind(out) -> list[str]:
    """Every process and namespace that a run folder's ledger names and that still lives:
    recorded processes (same pid and start time) and any process inside one of the
    run's network namespaces."""
    found = []
    for d in ledger.run_dirs_with_ledgers(str(out)):
        recs = ledger.read(d)
        live = [r for r in recs if r["kind"] in ("node", "process") and r.get("pid")
                and ledger.alive(r["pid"], r.get("start"))]
        found += [f"{r['kind']} {r['name']} pid {r['pid']}" for r in live]
        inodes = {r["netns"] for r in live if r.get("netns")}
        found += [f"pid {p} in a run namespace" for p in ledger._processes_in(inodes)]
        found += [f"netns {r['name']}" for r in recs
                  if r["kind"] == "netns" and os.path.exists(f"/var/run/netns/{r['name']}")]
    return found


def _read(path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def wait_for(pred, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def spec_path(tmp_path):
    p = tmp_path / "robust.toml"
    p.write_text(SPEC)
    return p


def test_ctrl_c_and_sigterm_at_random_moments_and_in_teardown_leave_nothing(spec_path,
                                                                           tmp_path):
    veths = _root_veths()
    rng = random.Random(13)
    # a run here: ~2 s to build, ~4 s of job, ~1 s to tear down; 12 moments across all
    moments = sorted(rng.uniform(0.3, 9.0) for _ in range(12))
    outcomes = []
    for i, at in enumerate(moments):
        out = tmp_path / f"sig{i}"
        sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
        p = start(spec_path, out)
        time.sleep(at)
        if p.poll() is None:
            os.killpg(p.pid, sig) if sig == signal.SIGINT else p.send_signal(sig)
        text = p.communicate(timeout=60)[0]
        assert "Traceback" not in text, text
        assert left_behind(out) == [], (at, sig, text)
        states = [ledger.state(d) for d in ledger.run_dirs_with_ledgers(str(out))]
        assert all(s == "closed" for s in states), (at, states, text)
        outcomes.append(p.returncode)
    # and two aimed at the teardown: the moment the job's last step is reported
    for i, sig in enumerate((signal.SIGINT, signal.SIGTERM), start=len(moments)):
        out = tmp_path / f"sig{i}"
        p = start(spec_path, out)
        seen = ""
        while "(100%)" not in seen and p.poll() is None:
            seen = p.stdout.readline()
        if p.poll() is None:
            os.killpg(p.pid, sig) if sig == signal.SIGINT else p.send_signal(sig)
        text = seen + p.communicate(timeout=60)[0]
        assert "Traceback" not in text, text
        assert left_behind(out) == [], (sig, text)
        assert all(ledger.state(d) == "closed" for d in ledger.run_dirs_with_ledgers(str(out)))
    assert _root_veths() - veths == set()
    assert 130 in outcomes                          # some signals came mid-run
    # after a Ctrl-C, the same command runs again into the same folder
    i = outcomes.index(130)
    again = start(spec_path, tmp_path / f"sig{i}")
    text = again.communicate(timeout=120)[0]
    assert again.returncode == 0 and "a run that did not finish" in text, text


def test_sigkill_of_the_runner_then_clean_then_the_same_command(spec_path, tmp_path):
    out = tmp_path / "killed"
    p = start(spec_path, out)
    rundir = out / "symphony-seed1"
    # wait until the hosts run (their processes are in the ledger), then SIGKILL
    assert wait_for(lambda: any(r["kind"] == "process" and ".group.json" in r["name"]
                                for r in ledger.read(str(rundir))), 60)
    time.sleep(1.0)
    p.kill()
    p.wait()
    # every process dies with the runner: nothing lives a moment later
    assert wait_for(lambda: left_behind(out) == [], 5), left_behind(out)
    assert ledger.state(str(rundir)) == "killed"
    cl = subprocess.run([sys.executable, "-m", "emulator.cli", "clean", str(out)],
                        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert cl.returncode == 0, cl.stderr
    assert str(rundir) in cl.stdout
    assert ledger.state(str(rundir)) == "cleaned"
    # the same command again: the killed run's folder is taken back, the run completes
    again = start(spec_path, out)
    text = again.communicate(timeout=120)[0]
    assert again.returncode == 0, text
    summary = json.loads((out / "summary.json").read_text())
    assert [r["fidelity"]["errors"] for r in summary["runs"]] == [[]]
    assert left_behind(out) == []


def test_sigkill_then_the_same_command_without_clean(spec_path, tmp_path):
    out = tmp_path / "killed2"
    p = start(spec_path, out)
    rundir = out / "symphony-seed1"
    assert wait_for(lambda: any(r["kind"] == "process" for r in ledger.read(str(rundir))), 60)
    p.kill()
    p.wait()
    again = start(spec_path, out)
    text = again.communicate(timeout=120)[0]
    assert again.returncode == 0, text
    assert "a run that did not finish" in text
    assert left_behind(out) == []


def test_a_permanent_link_failure_fails_the_collectives_it_cuts(tmp_path):
    # leaf-spine, static routing: ring 0 rides spine0; its leaf0 link goes down for good
    # 1 s into the run (a pass takes ~0.85 s), with nothing to re-route to under static
    # routing. The ranks time out; no collective of theirs from then on may get a CCT.
    spec = tmp_path / "down.toml"
    spec.write_text(
        'name = "down"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'routing = "static"\nlink_rate_gbps = 10.0\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nrings = "rail"\nchunk_bytes = 262144\npasses = 3\n'
        '[[perturbations]]\nkind = "link_down"\nswitch = "leaf0"\ntoward = "spine0"\n'
        'at_ms = 0.5\n'
        '[run]\nschemes = ["baseline"]\nseeds = [1]\ntimeout_s = 8\n')
    out = tmp_path / "down-out"
    p = start(spec, out)
    text = p.communicate(timeout=180)[0]
    assert p.returncode != 0, text
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    colls = run["jobs"][0]["collectives"]
    assert [c["failed"] for c in colls] == [False, True, True], colls
    assert [c["cct_s"] is None for c in colls] == [False, True, True]
    assert run["jobs"][0]["jct_s"] is None
    assert any("pass 1: never completed" in e for e in run["fidelity"]["errors"]), run["fidelity"]
    # the packets the link failure cost are counted, though no agent saw them
    (effect,) = run["fidelity"]["perturbation_effects"]
    assert int(effect.split("dropped ")[1].split()[0]) > 0, effect
    assert summary["comparison"].get("baseline", {}).get("cct_s") is None
    assert "leaf0:leaf0-eth3 down" in text and "FAILED: did not complete" in text, text


def test_a_dead_agent_stops_the_run_at_once_as_an_error(spec_path, tmp_path):
    out = tmp_path / "agent-dies"
    p = start(spec_path, out, "--set", "jobs.0.passes=12")        # ~5 s of job
    rundir = out / "symphony-seed1"
    # kill the switch's agent once the job runs (a host has applied a step)
    assert wait_for(lambda: '"progress"' in _read(rundir / "h0.host.out"), 60)
    (agent,) = [r for r in ledger.read(str(rundir))
                if r["kind"] == "process" and "leaf0.agents.json" in r["name"]]
    os.kill(agent["pid"], signal.SIGKILL)
    t_kill = time.monotonic()
    text = p.communicate(timeout=60)[0]
    assert p.returncode == 1, text
    assert "Traceback" not in text, text
    meas = RunFolder(str(rundir)).measurements
    assert meas.broken == [f"the switch agent of leaf0 died (exit -9; leaf0.agent.log)"]
    assert meas.wall_s < 6.0                 # stopped, not run to its 60 s timeout
    summary = json.loads((out / "summary.json").read_text())
    (run,) = summary["runs"]
    assert meas.broken[0] in run["fidelity"]["errors"]
    assert summary["excluded"] and left_behind(out) == []
    assert time.monotonic() - t_kill < 30
