"""Runs that fail in a sweep (emulator.sim.pool.run_many): a worker process killed by a
signal, or a run that cannot get memory, is named in one line with its likely cause, and
every other run of the sweep is still made."""

import os
import signal

import pytest

from emulator.home import root as project_root
from emulator.sim import pool
from emulator.sim.run import SimError
from emulator.spec import load

FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]
REAL_RUN = pool.run_sim


def _tasks(out, seeds):
    spec = load(FIG5, SMALL)
    return [(f"baseline-seed{k}", spec, "baseline", k, str(out / f"baseline-seed{k}"),
             None, 1) for k in seeds]


def _killed_at_seed_2(spec, scheme, seed, rundir, paths=None, repeat=1, progress=None):
    if seed == 2:                        # as the kernel's OOM killer would
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL_RUN(spec, scheme, seed, rundir, paths, repeat=repeat)


def _no_memory_at_seed_2(spec, scheme, seed, rundir, paths=None, repeat=1, progress=None):
    if seed == 2:
        raise MemoryError("Unable to allocate 64.0 MiB for an array")
    return REAL_RUN(spec, scheme, seed, rundir, paths, repeat=repeat)


def test_a_worker_killed_by_a_signal_is_named_and_the_other_runs_are_kept(
        tmp_path, capsys, monkeypatch):
    import multiprocessing
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the killing run_sim reaches the workers by fork")
    monkeypatch.setattr(pool, "run_sim", _killed_at_seed_2)
    with pytest.raises(SimError, match=r"^1 of 3 runs failed: baseline-seed2 "):
        pool.run_many(_tasks(tmp_path, (1, 2, 3)), jobs=2)
    said = capsys.readouterr().out.splitlines()
    dead = [line for line in said if line.startswith("baseline-seed2:")]
    assert dead == ["baseline-seed2: failed: its worker process died (killed by a signal: "
                    "most often the kernel's out-of-memory killer; see dmesg, try fewer "
                    "--jobs)"], said
    assert not any("Traceback" in line or "BrokenProcessPool" in line for line in said)
    for k in (1, 3):
        assert any(line.startswith(f"baseline-seed{k}: simulated") for line in said), said
        assert os.path.exists(tmp_path / f"baseline-seed{k}" / "measurements.json")


def test_a_run_that_cannot_get_memory_is_named_and_the_next_still_runs(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pool, "run_sim", _no_memory_at_seed_2)
    with pytest.raises(SimError, match=r"^1 of 3 runs failed: baseline-seed2 "):
        pool.run_many(_tasks(tmp_path, (1, 2, 3)), jobs=1)
    said = capsys.readouterr().out.splitlines()
    assert [line for line in said if "failed" in line] == [
        "baseline-seed2: failed: could not get memory (MemoryError): its buffers need "
        "more than this machine has free"], said
    assert [line.split(":")[0] for line in said if "simulated" in line] == [
        "baseline-seed1", "baseline-seed3"]


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def test_an_interrupted_sweep_stops_its_workers_and_leaves_no_unfinished_run(tmp_path):
    """SIGTERM to the command alone (as `kill PID` or a CI timeout sends it): it ends at
    once, its workers with it, and no run folder is left half made -- before, each
    worker took its next run and wrote on after the command said all was removed."""
    import subprocess
    import sys
    import time
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "run", FIG5, "--backend", "sim", "--seeds", "30",
         "--jobs", "2", "--no-plots", "--out", str(out)],
        cwd=project_root(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and any(p.name.startswith(".sim-") for p in out.rglob(".sim-*"))):
            assert proc.poll() is None and time.monotonic() < deadline, "no run started"
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert len(workers) >= 2, workers           # the pool's two (and its manager's)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, proc.stderr.read()
    assert "interrupted" in proc.stderr.read()
    time.sleep(0.5)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")
             and open(f"/proc/{w}/stat").read().split()[2] != "Z"]
    assert alive == [], f"workers still running: {alive}"
    assert [p.name for p in out.rglob(".sim-*")] == []


def test_a_killed_workers_unfinished_run_folder_is_removed(tmp_path, capsys, monkeypatch):
    import multiprocessing
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the killing run_sim reaches the workers by fork")

    def killed_mid_run(spec, scheme, seed, rundir, paths=None, repeat=1, progress=None):
        if seed == 2:                    # its folder made, as a real run's is
            os.makedirs(os.path.join(os.path.dirname(rundir), f".sim-{os.getpid()}-x"))
            os.kill(os.getpid(), signal.SIGKILL)
        return REAL_RUN(spec, scheme, seed, rundir, paths, repeat=repeat)
    monkeypatch.setattr(pool, "run_sim", killed_mid_run)
    with pytest.raises(SimError):
        pool.run_many(_tasks(tmp_path, (1, 2)), jobs=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline-seed1"]


def test_each_run_is_exported_where_it_was_simulated(tmp_path, capsys):
    """Its tables and trace made by its worker (in parallel), so the summary after a
    sweep keeps them instead of reading every run's records again in one process."""
    pool.run_many(_tasks(tmp_path, (1, 2)), jobs=2)
    for k in (1, 2):
        run = tmp_path / f"baseline-seed{k}"
        for name in ("flows.csv", "steps.csv", "trace.json"):
            assert (run / name).exists(), name
        assert os.path.getmtime(run / "trace.json") >= os.path.getmtime(run / "measurements.json")


def test_workers_die_with_a_command_killed_outright(tmp_path):
    """SIGKILL leaves the command no cleanup of its own: its workers must still end
    (they waited on their queue for ever)."""
    import subprocess
    import sys
    import time
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "run", FIG5, "--backend", "sim", "--seeds", "30",
         "--jobs", "2", "--no-plots", "--out", str(out)],
        cwd=project_root(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and any(out.rglob(".sim-*"))):
            assert proc.poll() is None and time.monotonic() < deadline, "no run started"
            time.sleep(0.05)
        workers = _children(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = [w for w in workers if os.path.exists(f"/proc/{w}")
                 and open(f"/proc/{w}/stat").read().split()[2] != "Z"]
        if not alive:
            break
        time.sleep(0.1)
    for w in alive:                         # not left behind by a failing test either
        os.kill(w, signal.SIGKILL)
    assert alive == [], f"workers still running after their command was killed: {alive}"
