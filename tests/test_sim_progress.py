"""A long simulated run says how far it is (emulator/sim/run.py: run_reporting): the
loop runs in slices of virtual time, which must not change a single event, and each
report names the virtual time, the data packets of those expected, their rate and an
estimate of the time left."""

import os

from emulator import plan as planning
from emulator.home import root as project_root
from emulator.sim import run as simrun
from emulator.spec import load

FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]


def test_reporting_changes_no_event_and_says_how_far_the_run_is(tmp_path, monkeypatch):
    spec = load(FIG5, SMALL)
    plain = simrun.run_sim(spec, "symphony", 3, str(tmp_path / "plain"))
    monkeypatch.setattr(simrun, "PROGRESS_FIRST_S", 0.0)
    monkeypatch.setattr(simrun, "PROGRESS_EVERY_S", 0.0)
    monkeypatch.setattr(simrun, "SLICE_WALL_S", 0.01)
    lines = []
    told = simrun.run_sim(spec, "symphony", 3, str(tmp_path / "told"), progress=lines.append)
    assert (told.sim.events, told.sim.end_s, told.sim.data_packets) == \
        (plain.sim.events, plain.sim.end_s, plain.sim.data_packets)
    assert len(lines) >= 3, lines
    expected = simrun.expected_data_packets(planning.compile(spec, "symphony", 3))
    assert expected <= plain.sim.data_packets <= 1.2 * expected   # retransmissions above
    assert all(f"M of {expected / 1e6:.2f} M data packets" in x and x.endswith(" left")
               for x in lines), lines


def test_a_progress_line_reads_as_a_person_would_say_it():
    assert simrun.progress_line(12.5, 10.0, 250_000, 1_000_000) == (
        "virtual 12.50 s, 0.25 M of 1.00 M data packets (25%), 25 k/s, ~30 s left")
    assert simrun.progress_line(1.0, 60.0, 60_000, 10_000_000).endswith("~2.8 h left")
    # past the estimate (retransmissions): no time left is claimed
    assert simrun.progress_line(3.0, 100.0, 1_500_000, 1_000_000) == (
        "virtual 3.00 s, 1.50 M data packets, 50% more than the 1.00 M expected "
        "(retransmissions), 15 k/s")


def test_an_interrupted_run_set_resumes_by_seed_and_a_changed_spec_runs_anew(tmp_path, capsys):
    from emulator.cli import main as cli_main
    out = str(tmp_path / "out")
    base = ["run", FIG5, "--backend", "sim", "--no-plots", "--scheme", "baseline",
            "--jobs", "1", "--out", out, "--set", "jobs.0.passes=1"]
    assert cli_main(base + ["--seeds", "1"]) == 0
    assert cli_main(base + ["--seeds", "2"]) == 2                 # not without --resume
    assert "(or --resume it)" in capsys.readouterr().err
    assert cli_main(base + ["--seeds", "2", "--resume"]) == 0
    text = capsys.readouterr().out
    assert "baseline-seed1: done before, kept" in text and "baseline-seed2: simulated" in text
    assert cli_main(base + ["--seeds", "1", "--resume", "--set", "jobs.0.chunk_bytes=65536"]) == 0
    assert "baseline-seed1: simulated" in capsys.readouterr().out   # another spec: anew
