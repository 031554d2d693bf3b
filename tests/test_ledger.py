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


# --- a server's own ledger (the module run as a script there) ---------------------------

SCRIPT = ledger.__file__


def test_a_process_started_through_exec_records_itself_with_its_own_pid(tmp_path):
    """``ledger.py exec`` writes the process's pid and start time, then becomes the
    command (same pid): ``clean`` of that server folder kills exactly it."""
    book = tmp_path / "s1" / ledger.LEDGER
    p = subprocess.Popen([sys.executable, SCRIPT, "exec", str(book), "h8: hosts.group", "--",
                          "sleep", "60"])
    try:
        for _ in range(100):
            if book.exists() and book.read_text().strip():
                break
            subprocess.run(["sleep", "0.05"])
        rec = json.loads(book.read_text().splitlines()[0])
        assert rec == {"kind": "process", "name": "h8: hosts.group", "pid": p.pid,
                       "start": ledger.start_ticks(p.pid)}
        assert open(f"/proc/{p.pid}/comm").read().strip() == "sleep"     # it became sleep
        out = subprocess.run([sys.executable, SCRIPT, "clean", str(tmp_path / "s1")],
                             capture_output=True, text=True, check=True).stdout
        assert json.loads(out) == [f"process h8: hosts.group (pid {p.pid})"]
        assert p.wait(5) == -9
    finally:
        if p.poll() is None:
            p.kill()


def test_note_records_running_processes_with_their_start_and_namespace(tmp_path, sleeper):
    book = tmp_path / ledger.LEDGER
    line = json.dumps({"kind": "node", "name": "leaf0", "pid": sleeper.pid}) + "\n"
    subprocess.run([sys.executable, SCRIPT, "note", str(book)], input=line, text=True,
                   check=True)
    rec = json.loads(book.read_text())
    assert rec == {"kind": "node", "name": "leaf0", "pid": sleeper.pid,
                   "start": ledger.start_ticks(sleeper.pid),
                   "netns": ledger.netns_inode(sleeper.pid)}


def test_clean_cleans_each_server_through_the_command_recorded_for_it(tmp_path, sleeper):
    """A run on real servers records how to reach each (its ssh argv) and the command that
    cleans it there; here the "ssh" is ``sh -c`` on this machine, so the server's own
    ledger is cleaned by its own script, and what it removed comes back named by server."""
    server = tmp_path / "servers" / "s1"
    server.mkdir(parents=True)
    write(server, {"kind": "process", "name": "agent spine2", "pid": sleeper.pid,
                   "start": ledger.start_ticks(sleeper.pid)})
    write(tmp_path, {"kind": "owner", "pid": dead_pid(), "start": 1},
          {"kind": "server", "name": "s1", "label": "root@10.0.0.3", "ssh": ["sh", "-c"],
           "clean": [sys.executable, SCRIPT, "clean", str(server)]})
    assert ledger.clean(str(tmp_path)) == [f"s1: process agent spine2 (pid {sleeper.pid})"]
    assert sleeper.wait(5) == -9
    assert json.loads((server / ledger.LEDGER).read_text().splitlines()[-1])["by"] == "clean"


def test_a_server_clean_cannot_reach_is_named_and_the_rest_is_still_cleaned(tmp_path, sleeper):
    write(tmp_path, {"kind": "owner", "pid": dead_pid(), "start": 1},
          {"kind": "process", "name": "ssh master s0", "pid": sleeper.pid,
           "start": ledger.start_ticks(sleeper.pid)},
          {"kind": "server", "name": "s0", "label": "root@10.0.0.2",
           "ssh": ["sh", "-c", "echo 'ssh: connect to host 10.0.0.2 port 22: No route' >&2; "
                   "exit 255"], "clean": ["true"]})
    with pytest.raises(ledger.ServersUnreached,
                       match=r"could not clean server s0 \(root@10\.0\.0\.2\): .*exited 255: "
                             r"ssh: connect to host 10\.0\.0\.2 port 22: No route; run "
                             r"`symphony-emu clean` again") as e:
        ledger.clean(str(tmp_path))
    assert e.value.removed == [f"process ssh master s0 (pid {sleeper.pid})"]
    assert sleeper.wait(5) == -9


def test_a_run_interrupted_before_its_ledger_is_taken_back_and_nothing_else(tmp_path, capsys):
    """A Ctrl-C in the milliseconds between a run's manifest and its ledger's first record
    (CI caught one): the same command must run again into the same folder. A folder with
    anything a run writes later, or no run's folder at all, is not touched."""
    from emulator.cli.run import reclaim_killed
    out = tmp_path / "out"
    for files in ([], ["manifest.json"], ["manifest.json.tmp"],
                  ["manifest.json", ledger.LEDGER]):
        run = out / "symphony-seed1"
        run.mkdir(parents=True)
        for f in files:
            (run / f).write_text("")
        assert reclaim_killed(str(out)), files
        assert list(out.iterdir()) == []
    assert "interrupted before it took anything from the machine" in capsys.readouterr().out
    for files in (["manifest.json", "h0.jsonl"], ["notes.txt"]):
        run = out / "symphony-seed1"
        run.mkdir(parents=True)
        for f in files:
            (run / f).write_text("x")
        assert not reclaim_killed(str(out)), files
        assert sorted(p.name for p in run.iterdir()) == sorted(files)
        for f in files:
            (run / f).unlink()
        run.rmdir()
    (out / "mine.txt").write_text("a user's file")
    assert not reclaim_killed(str(out)) and (out / "mine.txt").exists()
