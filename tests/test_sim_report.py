"""What ``report`` says of simulated run folders, damaged ones among them (a simulated
run writes the files an emulated one does, so these hold for both)."""

import json
import os

import pytest

from emulator.analysis import report
from emulator.cli import main as cli_main
from emulator.home import root as project_root
from emulator.rundir import DamagedRun, RunFolder

FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]


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
    s = json.load(open(out / "summary.json"))
    assert [(r["scheme"], r["seed"]) for r in s["runs"]] == [("baseline", 1)]
    assert s["damaged"][0]["rundir"] == "baseline-seed2"
    with pytest.raises(DamagedRun):
        report.analyze_run(str(out / "baseline-seed2"))


def test_every_host_file_of_a_whole_run_holds_what_its_host_wrote(two_seeds):
    for seed in (1, 2):
        run = RunFolder(str(two_seeds / f"baseline-seed{seed}"))
        for name, summ in run.measurements.rank_summaries.items():
            with open(run.file(f"{name}.jsonl"), "rb") as f:
                assert summ.records == sum(1 for _ in f) > 0
