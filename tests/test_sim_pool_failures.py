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
