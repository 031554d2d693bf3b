"""The simulator installs as a package anywhere: the project built as a wheel from the
files git tracks, installed (not editable) into a fresh venv that has no Mininet, then a
simulated run, a ``predict``, a ``report`` and the simulator's tests run from it, in a
folder that holds the specs and the tests but none of the code (docs/usage.md, "The
simulator alone"). About a minute; the registry only once (pip's cache after)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from topologies.wiring import REPO_ROOT

SIM_TESTS = ("tests/test_sim.py", "tests/test_sim_switch.py", "tests/test_sim_report.py")
# what pip says when it cannot reach the package registry (then the test cannot run here)
OFFLINE = ("NewConnectionError", "Temporary failure in name resolution",
           "No matching distribution found", "Could not find a version")


def _run(cmd, cwd, timeout=600, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)


def _tracked_copy(dst: str) -> None:
    """The files git tracks (and this change's new ones), as a clone would have them."""
    files = _run(["git", "ls-files", "-co", "--exclude-standard"], REPO_ROOT).stdout.split()
    for f in files:
        if os.path.isfile(os.path.join(REPO_ROOT, f)):
            os.makedirs(os.path.join(dst, os.path.dirname(f)), exist_ok=True)
            shutil.copy2(os.path.join(REPO_ROOT, f), os.path.join(dst, f))


def _skip_if_offline(res) -> None:
    if res.returncode != 0 and any(s in res.stderr for s in OFFLINE):
        pytest.skip(f"the package registry is not reachable: {res.stderr.strip()[-200:]}")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list the project's files")
def test_wheel_in_a_venv_without_mininet_runs_the_simulator(tmp_path):
    src, work, venv = tmp_path / "src", tmp_path / "work", tmp_path / "venv"
    _tracked_copy(str(src))
    base = getattr(sys, "_base_executable", sys.executable)
    assert _run([base, "-m", "venv", str(venv)], tmp_path).returncode == 0
    py = str(venv / "bin" / "python")
    made = _run([py, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                 str(src)], tmp_path)
    _skip_if_offline(made)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    wheel, = (tmp_path / "dist").glob("symphony_emu-*.whl")
    got = _run([py, "-m", "pip", "install", "-q", str(wheel), "pytest"], tmp_path)
    _skip_if_offline(got)
    assert got.returncode == 0, got.stderr[-3000:]
    assert _run([py, "-c", "import mininet"], tmp_path).returncode != 0   # none in the venv
    # the specs and tests, none of the code: what runs is the installed wheel
    work.mkdir()
    shutil.copytree(src / "runs", work / "runs")
    shutil.copytree(src / "tests", work / "tests")
    exe = str(venv / "bin" / "symphony-emu")
    env = dict(os.environ, PYTHONPATH="")
    sim = _run([exe, "run", "runs/table1.toml", "--backend", "sim", "--seeds", "1",
                "--set", "jobs.0.passes=1", "--no-plots", "--out", "sim"], work, env=env)
    assert sim.returncode == 0, sim.stdout[-2000:] + sim.stderr[-2000:]
    summary = json.loads((work / "sim" / "summary.json").read_text())
    assert {r["scheme"] for r in summary["runs"]} == {"baseline", "symphony"}
    where = _run([py, "-c", "import emulator; print(emulator.__file__)"], tmp_path, env=env)
    assert "site-packages" in where.stdout
    pred = _run([exe, "predict", "runs/fig5.toml", "--seeds", "2", "--no-plots",
                 "--out", "pred"], work, env=env)
    assert pred.returncode == 0, pred.stdout[-2000:] + pred.stderr[-2000:]
    rep = _run([exe, "report", "sim"], work, env=env)
    assert rep.returncode == 0, rep.stdout[-2000:] + rep.stderr[-2000:]
    assert "baseline" in rep.stdout and "symphony" in rep.stdout
    tests = _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not emulation",
                  *SIM_TESTS], work, env=env, timeout=900)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert " passed" in tests.stdout.splitlines()[-1]
