"""emulator.launch.ledger without root: a run folder's ledger read back into its state,
and ``clean`` killing exactly the recorded processes that are still the same processes
(pid and start time), never one whose pid was reused, never one it was not told of."""

import json
import subprocess
import sys

import pytest

from emulator.launch import ledger


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def write(rundir, *recs):
    with open(rundir / ledger.LEDGER, "a") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")


@pytest.fixture
def sleeper():
    p = subprocess.Popen(["sleep", "60"])
    yield p
    if p.poll() is None:
        p.kill()
    p.wait()


def test_states_of_a_run_folder(tmp_path):
    assert ledger.state(str(tmp_path)) == "none"
    lg = ledger.Ledger(str(tmp_path))                   # this process owns it
    assert ledger.state(str(tmp_path)) == "running"
    lg.close(["nothing"])
    assert ledger.state(str(tmp_path)) == "closed"
    assert ledger.reclaim(str(tmp_path)) is None         # a finished run is kept as it is
    other = tmp_path / "killed"
    other.mkdir()
    write(other, {"kind": "owner", "pid": dead_pid(), "start": 1})
    assert ledger.state(str(other)) == "killed"
    assert ledger.clean(str(other)) == []
    assert ledger.state(str(other)) == "cleaned"
    (other / "h0.jsonl").write_text("{}\n")
    assert ledger.reclaim(str(other)) == [] and list(other.iterdir()) == []


def test_clean_refuses_a_run_whose_owner_lives(tmp_path, sleeper):
    write(tmp_path, {"kind": "owner", "pid": sleeper.pid,
                     "start": ledger.start_ticks(sleeper.pid)})
    with pytest.raises(ledger.StillRunning, match=f"still going \\(pid {sleeper.pid}\\)"):
        ledger.clean(str(tmp_path))
    assert ledger.clean(str(tmp_path), force=True) == []


def test_clean_kills_the_recorded_process_and_only_if_it_is_the_same_one(tmp_path, sleeper):
    write(tmp_path, {"kind": "owner", "pid": dead_pid(), "start": 1},
          {"kind": "process", "name": "h0: rank", "pid": sleeper.pid,
           "start": ledger.start_ticks(sleeper.pid)},
          {"kind": "process", "name": "h1: rank", "pid": dead_pid(), "start": 5})
    reused = tmp_path / "reused"
    reused.mkdir()
    write(reused, {"kind": "owner", "pid": dead_pid(), "start": 1},
          {"kind": "process", "name": "h0: rank", "pid": sleeper.pid,
           "start": ledger.start_ticks(sleeper.pid) + 1})          # another process now
    assert ledger.clean(str(reused)) == []
    assert sleeper.poll() is None
    removed = ledger.clean(str(tmp_path))
    assert removed == [f"process h0: rank (pid {sleeper.pid})"]
    assert sleeper.wait(5) == -9


def test_a_line_cut_by_a_kill_is_skipped(tmp_path):
    write(tmp_path, {"kind": "owner", "pid": dead_pid(), "start": 1})
    with open(tmp_path / ledger.LEDGER, "a") as f:
        f.write('{"kind": "process", "name": "h0", "pi')
    assert [r["kind"] for r in ledger.read(str(tmp_path))] == ["owner"]
    assert ledger.state(str(tmp_path)) == "killed"


def test_run_dirs_with_ledgers_finds_runs_and_sweep_points(tmp_path):
    for d in ("a/baseline-seed1", "a/symphony-seed1", "sweep/p1/baseline-seed1"):
        (tmp_path / d).mkdir(parents=True)
        write(tmp_path / d, {"kind": "owner", "pid": 1, "start": 1})
    found = ledger.run_dirs_with_ledgers(str(tmp_path))
    assert [p[len(str(tmp_path)) + 1:] for p in found] == [
        "a/baseline-seed1", "a/symphony-seed1"]        # two levels down, not three
    assert ledger.run_dirs_with_ledgers(str(tmp_path / "sweep")) == [
        str(tmp_path / "sweep/p1/baseline-seed1")]


def test_clean_removes_the_folders_the_run_made_elsewhere_and_a_shared_one_only_if_empty(
        tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    sockets = tmp_path / "symphony-emu-ssh-abc"            # the run's own, with a socket
    (sockets / "cm-s0").mkdir(parents=True)
    shared_empty, shared_used = tmp_path / "privsep-a", tmp_path / "privsep-b"
    shared_empty.mkdir()
    shared_used.mkdir()
    (shared_used / "someone-elses").write_text("x")
    lg = ledger.Ledger(str(run))
    lg.dir(str(sockets))
    lg.dir(str(shared_empty), empty_only=True)
    lg.dir(str(shared_used), empty_only=True)
    lg.dir(str(tmp_path / "never-made"))
    lg._f.close()                       # the runner was killed: no "closed" record
    lg._f = None
    removed = ledger.clean(str(run), force=True)
    assert removed == [f"folder {sockets}", f"folder {shared_empty}"]
    assert not sockets.exists() and not shared_empty.exists()
    assert (shared_used / "someone-elses").read_text() == "x"
