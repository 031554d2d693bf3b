"""What the commands say of simulated runs: every scheme named runs, ``report`` on one
run folder reports that run (its twin labelled), a damaged run folder is named and left
out (a simulated run writes the files an emulated one does, so these hold for both)."""

import json
import os

import pytest

from emulator.analysis import report, summary
from emulator.analysis.summary import Excluded
from emulator.cli import main as cli_main
from emulator.home import root as project_root
from emulator.progress import Tally
from emulator.rundir import DamagedRun, RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load

FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]


def summarize(path):
    return report.summarize(str(path), plots=False, exports=False)


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    out = tmp_path_factory.mktemp("set")
    assert cli_main(["run", FIG5, "--backend", "sim", "--seeds", "2", "--scheme", "baseline",
                     "--no-plots", "--out", str(out)] + [f"--set={s}" for s in SMALL]) == 0
    return out


@pytest.mark.parametrize("cut", ["half", "last line", "a whole line"])
def test_a_host_file_cut_short_is_named_and_its_run_left_out(two_seeds, tmp_path, capsys,
                                                             cut):
    """A host's h*.jsonl cut anywhere (in half, inside its last line, or one whole line
    off the end) is damage: its host said how many records it wrote. The run is named
    with the file and left out; report exits 1. It used to be reported, exit 0, as a run
    that did less (a cut last line skipped)."""
    import shutil
    out = tmp_path / "set"
    shutil.copytree(two_seeds, out)
    os.remove(out / "summary.json")
    host = out / "baseline-seed2" / "h3.jsonl"
    lines = host.read_bytes().splitlines(keepends=True)
    wrote = RunFolder(str(out / "baseline-seed2")).measurements.rank_summaries["h3"].records
    assert wrote == len(lines) > 2
    host.write_bytes({"half": b"".join(lines)[:len(b"".join(lines)) // 2],
                      "last line": b"".join(lines)[:-5],
                      "a whole line": b"".join(lines[:-1])}[cut])
    capsys.readouterr()
    assert cli_main(["report", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"symphony-emu report: {host}: damaged, ") and err.count("\n") == 1
    assert f"of the {wrote} records its host wrote" in err
    assert ("the last one cut" in err) == (cut != "a whole line")
    s = summary.read(str(out))
    assert [(r.scheme, r.seed) for r in s.runs] == [("baseline", 1)]
    assert s.damaged[0].rundir == "baseline-seed2"
    with pytest.raises(DamagedRun):
        report.analyze_run(str(out / "baseline-seed2"))


def test_every_host_file_of_a_whole_run_holds_what_its_host_wrote(two_seeds):
    for seed in (1, 2):
        run = RunFolder(str(two_seeds / f"baseline-seed{seed}"))
        for name, summ in run.measurements.rank_summaries.items():
            with open(run.file(f"{name}.jsonl"), "rb") as f:
                assert summ.records == sum(1 for _ in f) > 0


def test_run_runs_every_scheme_named_by_a_repeated_scheme_option(tmp_path, capsys):
    """--scheme is repeatable in run as in predict and sweep: each scheme named runs (a
    second one was silently dropped: only the last ran), once each however often named."""
    rc = cli_main(["run", FIG5, "--backend", "sim", "--seeds", "1", "--scheme", "baseline",
                   "--scheme", "symphony", "--scheme", "baseline", "--no-plots", "--out",
                   str(tmp_path), "--set", "jobs.0.chunk_bytes=65536",
                   "--set", "jobs.0.passes=1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "2 scheme(s) x 1 seed(s)" in out
    assert sorted(p.name for p in tmp_path.iterdir() if (p / "manifest.json").exists()) == \
        ["baseline-seed1", "symphony-seed1"]
    s = summary.read(str(tmp_path))
    assert sorted(s.comparison) == ["baseline", "symphony"]
    assert "Symphony vs baseline, median CCT:" in out
    rc = cli_main(["run", FIG5, "--backend", "sim", "--scheme", "baseline", "--scheme",
                   "fast", "--out", str(tmp_path / "no")])
    assert rc == 2 and capsys.readouterr().err == (
        "symphony-emu run: --scheme 'fast': allowed: baseline, symphony, pq\n")


def test_cli_refuses_a_second_scheme_in_one_line(capsys):
    """The live CLI runs one fabric under one scheme: a repeated --scheme is refused, not
    dropped."""
    pytest.importorskip("mininet", reason="the live CLI is the emulation's: needs Mininet")
    import argparse

    from emulator.cli.live import cmd_cli
    assert cmd_cli(argparse.Namespace(scheme=["baseline", "symphony"])) == 2
    assert capsys.readouterr().err == (
        "symphony-emu cli: --scheme given 2 times (baseline, symphony): the CLI runs one "
        "fabric under one scheme; give one (`symphony-emu run` runs several)\n")


def test_report_on_one_run_folder_reports_that_run_and_labels_its_twin(tmp_path, capsys):
    """`report RUNSET/baseline-seed2` on an emulated run (a simulated one standing in, its
    manifest says emulation) reads that run -- its backend, its seed, its CCT -- with its
    twin (``twin/`` inside it, here of another seed to tell them apart) shown only in the
    split, labelled the twin. It used to find the twin as the folder's only run and report
    it under the run's name: backend sim, seed 3. The twin reported on its own says whose
    twin it is."""
    run = tmp_path / "set" / "baseline-seed2"
    spec = load(FIG5, SMALL)
    run_sim(spec, "baseline", 2, str(run))
    man = json.load(open(run / "manifest.json"))
    json.dump({**man, "backend": "emulation"}, open(run / "manifest.json", "w"))
    run_sim(spec, "baseline", 3, str(run / "twin"), host_delay_s=0.0)
    own = summarize(tmp_path / "set").runs[0].jobs[0].collectives[0].cct_s
    twin = report.analyze_run(str(run / "twin"), twin=False).jobs[0].collectives[0].cct_s
    assert own != pytest.approx(twin, rel=1e-3)
    capsys.readouterr()
    assert cli_main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    s = summary.read(str(run))
    (r,) = s.runs
    assert (r.backend, r.seed, r.rundir, s.backend) == \
        ("emulation", 2, ".", "emulation")
    assert r.jobs[0].collectives[0].cct_s == pytest.approx(own)
    assert r.split.twin == "simulated"
    (c,) = r.split.jobs[0].collectives
    assert c.sim_s == pytest.approx(twin) and c.emulated_s == pytest.approx(own)
    assert out.startswith(f"# the run in {run} (emulation, baseline seed 2)\n")
    assert " baseline    2   1    0 " in out and " baseline    3   1 " not in out
    assert "twin(ms)" in out
    assert not os.path.exists(run / "twin" / "summary.json")
    # the twin on its own: labelled as the twin, never as the run
    assert cli_main(["report", str(run / "twin")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {run / 'twin'}: the simulated twin (backend sim) of the run in "
                          f"{run}, not that run\n")
    assert summary.read(str(run / "twin")).runs[0].twin_of == str(run)


def test_a_run_with_a_damaged_measurements_file_is_named_and_left_out(tmp_path, capsys):
    """Two seeds x two schemes; symphony seed 2's measurements.json cut in half. report
    names that file and why (not JSON, at which byte), leaves the run out of every median
    and comparison -- Symphony's median CCT is seed 1's alone -- reports the three others,
    and exits 1. It used to refuse the whole set (exit 2) or, at the run's own folder,
    report its twin with no word of the damage."""
    out = tmp_path / "set"
    assert cli_main(["run", FIG5, "--backend", "sim", "--seeds", "2", "--scheme", "baseline",
                     "--scheme", "symphony", "--no-plots", "--out", str(out)]
                    + [f"--set={s}" for s in SMALL]) == 0
    whole = summary.read(str(out))
    cct = {(r.scheme, r.seed): r.jobs[0].collectives[0].cct_s
           for r in whole.runs}
    assert cct[("symphony", 1)] != pytest.approx(cct[("symphony", 2)], rel=1e-3)
    meas = out / "symphony-seed2" / "measurements.json"
    text = meas.read_text()
    meas.write_text(text[:len(text) // 2])
    capsys.readouterr()
    assert cli_main(["report", str(out)]) == 1
    got = capsys.readouterr()
    why = f"{meas}: damaged, not JSON ("
    assert got.err.startswith(f"symphony-emu report: {why}") and got.err.endswith(
        f" of {len(text) // 2}); run it again or remove the run's folder (left out of the "
        "report)\n") and got.err.count("\n") == 1
    assert f"\nDAMAGED symphony seed 2, left out of every median and comparison: {why}" \
        in got.out
    assert "1 of 4 runs are left out of the medians above" in got.out
    s = summary.read(str(out))
    assert sorted((r.scheme, r.seed) for r in s.runs) == \
        [("baseline", 1), ("baseline", 2), ("symphony", 1)]
    (d,) = s.damaged
    assert (d.rundir, d.scheme, d.seed) == ("symphony-seed2", "symphony", 2)
    assert Excluded(scheme="symphony", seed=2, repeat=1, damaged=True) in s.excluded
    assert s.comparison["symphony"].cct_s == pytest.approx(cct[("symphony", 1)])
    assert s.seeds.paired["symphony"].seeds == [1]
    assert "DAMAGED" in (out / "index.html").read_text()
    # the run's own folder: nothing else to report, the damage is the answer (exit 2)
    assert cli_main(["report", str(out / "symphony-seed2")]) == 2
    assert capsys.readouterr().err.startswith(f"symphony-emu report: {why}")


def test_a_long_summary_says_how_far_it_has_read_every_ten_seconds():
    # a 512-host sweep's summary read for ~10 min and printed nothing
    lines, now = [], [0.0]
    tell = Tally(lines.append, "OUT: summary", 40, clock=lambda: now[0])
    for i, t in enumerate([1.0, 5.0, 11.0, 12.0, 25.0]):
        now[0] = t
        tell("read", i)
    assert lines == ["OUT: summary: read 2 of 40 runs (11 s)",
                     "OUT: summary: read 4 of 40 runs (25 s)"]
    Tally(None, "OUT: summary", 40, clock=lambda: 99.0)("read", 1)    # silent: no-op
