"""summary.json of format 0 (emulator/upgrade.py, upgrade_summary): a run set reported
here (the flow model's runs, a second in all), its summary.json turned back into what an
older report wrote -- no "format", and without the keys that report had not learned yet
-- is refused by its readers naming the command; upgraded, it reads back as the fresh
report but for what its absence meant (a drop count not made is None, not 0), and every
report read from it says what it said of the fresh one."""

import json
import os

import pytest

from emulator import upgrade
from emulator.analysis import answer, console, nccl, report, summary
from emulator.cli import main as cli_main
from emulator.launch.predict import run_predict
from emulator.spec import load
from topologies.wiring import REPO_ROOT

FIG5 = os.path.join(REPO_ROOT, "runs", "fig5.toml")
SCHEMES = ["baseline", "ideal-priority"]

# what an older report left out, as paths into summary.json ([] for each item)
OLDER = ["damaged", "noise", "order", "primary", "run_folder",
         "runs[].fidelity.cpu_steal", "runs[].fidelity.perturbation_effects",
         "runs[].jobs[].collectives[].failed", "runs[].order", "runs[].repeat",
         "runs[].transport.switch_drops", "runs[].twin_of"]


@pytest.fixture
def run_set(tmp_path) -> str:
    out = str(tmp_path / "set")
    spec = load(FIG5, ["jobs.0.chunk_bytes=65536", "jobs.0.passes=2",
                       "collective.order=in_order"])
    run_predict(spec, out, SCHEMES, [1, 2, 3])
    report.summarize(out, plots=False, exports=False)
    return out


def _drop(data, path: list[str]) -> None:
    """Remove the key at ``path`` (``runs[]`` walks each run) from ``data``."""
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        for item in data[head[:-2]]:
            _drop(item, rest)
    elif rest:
        _drop(data[head], rest)
    else:
        del data[head]


def as_format_0(out: str, older=OLDER) -> dict:
    """Turn ``out``'s summary.json back into format 0, as a report from before the keys
    ``older`` wrote it; the fresh one's JSON."""
    path = os.path.join(out, summary.FILE)
    with open(path) as f:
        fresh = json.load(f)
    old = json.loads(json.dumps(fresh))
    del old["format"]
    for key in older:
        _drop(old, key.split("."))
    with open(path, "w") as f:
        json.dump(old, f, indent=1)
    return fresh


def reports(out: str) -> list:
    """What every reader of a run set's summary.json makes of it."""
    s = summary.read(out)
    # nccl-tests' start_time is when the report is made (as the tool's is when it runs):
    # two reports a second apart differ in it, so it is left out of the comparison
    return [console.console_text(s), nccl.nccl_tests_text(s), answer.answer(out, out),
            [{k: v for k, v in nccl.nccl_tests_json(s, scheme).items() if k != "start_time"}
             for scheme in SCHEMES]]


def test_an_old_summary_is_refused_then_upgraded_to_report_as_it_did(run_set, capsys):
    said = reports(run_set)
    fresh = as_format_0(run_set)
    with pytest.raises(summary.SummaryError) as e:
        summary.read(run_set)
    assert "\n" not in str(e.value) and str(e.value).endswith(
        f"a summary of format 0 (this version reads {summary.FORMAT}); upgrade it: "
        f"symphony-emu upgrade {run_set}")
    assert answer.answer(run_set, run_set)[0] == f"simulated: {e.value}"
    assert cli_main(["upgrade", run_set]) == 0
    assert capsys.readouterr().out == (
        f"{run_set}: 0 run folders upgraded, 6 already current, 0 left as they were; "
        "1 summaries upgraded, 0 already current, 0 left as they were\n")
    with open(os.path.join(run_set, summary.FILE)) as f:
        got = json.load(f)
    assert got.pop("upgraded") == {"from": 0, "filled": OLDER}
    for r in fresh["runs"]:
        r["transport"]["switch_drops"] = None         # not counted then: not known now
    assert got == fresh
    assert reports(run_set) == said
    path = os.path.join(run_set, summary.FILE)
    assert upgrade.upgrade_summaries(run_set) == ([], [path], [])     # current: left alone


def test_a_run_set_from_before_the_model_was_emulated_and_ran_in_order(run_set):
    as_format_0(run_set, OLDER + ["backend", "runs[].backend"])
    upgrade.upgrade_summaries(run_set)
    s = summary.read(run_set)
    assert s.backend == "emulation" and {r.backend for r in s.runs} == {"emulation"}
    assert s.order == ["in_order"] and s.primary == "jct"       # two passes: the job's
    assert {(r.repeat, r.twin_of) for r in s.runs} == {(1, None)}
    assert all(c.failed == (c.cct_s is None) for r in s.runs for j in r.jobs
               for c in j.collectives)


@pytest.mark.parametrize("change, why", [
    (lambda d: d["runs"][0]["fidelity"].update(cpu_busy_hosts=0.5),
     "runs[0].fidelity: unknown keys ['cpu_busy_hosts']"),
    (lambda d: d["runs"][1].pop("scheme"), "runs[1].scheme: missing"),
    (lambda d: d.update(format=2), "format 2: not a summary format this version knows")])
def test_a_summary_no_report_wrote_is_refused_named_and_left_unchanged(run_set, change,
                                                                       why):
    as_format_0(run_set)
    path = os.path.join(run_set, summary.FILE)
    with open(path) as f:
        data = json.load(f)
    change(data)
    with open(path, "w") as f:
        json.dump(data, f)
    before = open(path).read()
    ((where, said),) = upgrade.upgrade_summaries(run_set)[2]
    assert where == path and said.startswith(why) and open(path).read() == before
    if not why.startswith("format"):
        assert said.endswith(f"`symphony-emu report {run_set}` writes it anew from its "
                             "run folders")
