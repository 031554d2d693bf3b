"""The backends behind one interface (emulator/launch/backends.py): every command asks
the same things of each, so an option means the same everywhere and a new backend needs
no change to ``run``, ``sweep`` or ``reproduce``."""

import os

import pytest

from emulator.cli import main as cli_main
from emulator.launch import sweep
from emulator.launch.backends import BACKENDS, Backend, Options, Task
from emulator.rundir import RunFolder
from emulator import home

TABLE1 = home.path("runs", "table1.toml")


@pytest.mark.parametrize("backend,option,extra,takers", [
    ("sim", "pcap", ["--pcap", "h0"], "emulation"),
    ("sim", "servers", ["--servers", "root@a"], "emulation"),
    ("fluid", "pcap", ["--pcap", "h0"], "emulation"),
    ("fluid", "paths", ["--paths", "/nowhere"], "sim"),
    ("fluid", "dask", ["--dask", "tcp://127.0.0.1:9"], "sim"),
    ("emulation", "paths", ["--paths", "/nowhere"], "sim"),
    ("emulation", "dask", ["--dask", "tcp://127.0.0.1:9"], "sim"),
])
def test_an_option_a_backend_does_not_take_is_one_line_naming_who_does(
        tmp_path, capsys, backend, option, extra, takers):
    rc = cli_main(["run", TABLE1, "--backend", backend, "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"symphony-emu run: --{option} is for --backend {takers}; "
                             f"--backend {backend} "), err
    assert not (tmp_path / "o").exists()


def test_the_emulation_without_root_is_refused_naming_the_backends_that_need_none(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for cmd in (["run", TABLE1], ["sweep", TABLE1], ["reproduce", "fig5"]):
        rc = cli_main(cmd + ["--out", str(tmp_path / "o")])
        err = capsys.readouterr().err
        assert rc == 2 and "--backend emulation needs root" in err, (cmd, err)
        assert "--backend fluid and sim do not" in err
    assert not (tmp_path / "o").exists()


def test_run_on_the_model_is_the_model_s_schemes_reported_as_any_run(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli_main(["run", TABLE1, "--backend", "fluid", "--seeds", "2", "--no-plots",
                     "--out", str(out)]) == 0
    names = sorted(os.listdir(out))
    model = BACKENDS["fluid"].schemes
    assert [n for n in names if "-seed" in n] == sorted(
        f"{s}-seed{n}" for s in model for n in (1, 2))
    assert RunFolder(str(out / "baseline-seed1")).manifest.backend == "fluid"
    assert "ideal-priority vs baseline, paired by seed" in capsys.readouterr().out


class Recorder(Backend):
    """A backend of a test's own: records what it is asked to run and has the model run
    it (any backend's run folders are reported alike)."""
    name = "recorder"

    def __init__(self):
        self.asked = []

    def run(self, tasks, opts, progress=None):
        self.asked.append(([(t.scheme, t.seed, os.path.basename(t.rundir)) for t in tasks],
                           opts.jobs))
        BACKENDS["fluid"].run(tasks, opts, progress)


def test_a_sweep_asks_any_backend_once_for_every_run_not_done(tmp_path, capsys):
    rec = Recorder()

    def sweep_it():
        return sweep.run_sweep(TABLE1, str(tmp_path), ["topology.oversubscription=1,2"], [],
                               ["baseline", "pq"], [1, 2], backend=rec, plots=False,
                               opts=Options(jobs=3))
    rows = sweep_it()
    (asked, jobs), = rec.asked
    # seed by seed, a seed's schemes side by side, each point's in turn
    assert jobs == 3 and asked == [(s, n, f"{s}-seed{n}") for _ in range(2) for n in (1, 2)
                                   for s in ("baseline", "pq")]
    assert len(rows) == 8 and all(r["faithful"] for r in rows)
    again = sweep_it()                         # resumed: nothing left to run
    assert rec.asked[1] == ([], 3) and again == rows
    assert "done before, kept" in capsys.readouterr().out


def test_a_sweep_runs_again_what_an_edited_spec_would_run_otherwise(tmp_path, capsys):
    # a sweep used to keep any finished run folder, so an edit of the spec between two
    # tries left the first try's runs in the table (2026-12-07); a scheme or seed added
    # (what a command asks, not what a run runs) still resumes
    rec = Recorder()

    def sweep_it(schemes, sets=()):
        return sweep.run_sweep(TABLE1, str(tmp_path), [], list(sets), schemes, [1],
                               backend=rec, plots=False, opts=Options(jobs=1))
    sweep_it(["baseline"])
    sweep_it(["baseline", "pq"])
    assert rec.asked[1][0] == [("pq", 1, "pq-seed1")]
    capsys.readouterr()
    sweep_it(["baseline", "pq"], ["symphony.k=0.1"])
    assert rec.asked[2][0] == [("baseline", 1, "baseline-seed1"), ("pq", 1, "pq-seed1")]
    out = capsys.readouterr().out
    assert "default baseline seed 1: done before, run again: the spec changed since it " \
        "ran (symphony.k differs)" in out
    man = RunFolder(str(tmp_path / "default" / "baseline-seed1")).manifest
    assert man.spec["symphony"]["k"] == 0.1
