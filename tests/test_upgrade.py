"""The run-format converter (emulator/upgrade.py) on folders turned back into format 1
here: a model run's and a simulated one's, made in a second each, without root. An
older folder is refused by the reader naming the command; upgraded, it reads as it was
written; one whose spec compiles to another plan today is refused and left unchanged."""

import json
import os
from dataclasses import asdict

import pytest

from emulator import upgrade
from emulator.launch.predict import predict_one
from emulator.rundir import OlderRun, RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load
from runtime.records import CollectiveDone, PortSample, RecordError
from runtime.telemetry import read_records
from topologies.wiring import REPO_ROOT

FIG5 = os.path.join(REPO_ROOT, "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=2"]


def as_format_1(rundir: str, *, keep_order: bool = True) -> None:
    """Turn a run folder back into format 1: the manifest's plan-summary keys instead of
    the plan, no ``format``; ``pass`` for ``pass_index`` in collective records. Without
    ``keep_order``, its layouts lose ``order`` (a folder from before the rule was a
    choice)."""
    folder = RunFolder(rundir)
    plan = folder.plan
    with open(folder.file("manifest.json")) as f:
        man = json.load(f)
    layouts = json.loads(json.dumps([asdict(x) for x in plan.layouts]))
    for lay in layouts if not keep_order else []:
        del lay["order"]
    old = {k: v for k, v in man.items() if k not in ("format", "plan")}
    old.update(scale={"dilation": plan.scale.dilation}, link_rate_bps=plan.link_rate_bps,
               mtu_bytes=plan.mtu_bytes, path_hops=plan.path_hops, layouts=layouts)
    with open(folder.file("manifest.json"), "w") as f:
        json.dump(old, f, indent=1)
    for name in os.listdir(rundir):
        if name.endswith(".jsonl"):
            with open(folder.file(name)) as f:
                lines = [json.loads(x) for x in f if x.strip()]
            with open(folder.file(name), "w") as f:
                for r in lines:
                    if r["type"] == "collective":
                        r = {("pass" if k == "pass_index" else k): v for k, v in r.items()}
                    f.write(json.dumps(r, separators=(",", ":")) + "\n")


def model_run(tmp_path) -> str:
    rundir = str(tmp_path / "runs" / "ideal-priority-seed3")
    predict_one(load(FIG5, SMALL), "ideal-priority", 3, rundir)
    return rundir


def sim_run(tmp_path) -> str:
    rundir = str(tmp_path / "runs" / "symphony-seed2")
    run_sim(load(FIG5, SMALL + ["topology.routing=static"]), "symphony", 2, rundir)
    return rundir


def records(rundir: str) -> dict[str, list]:
    """Every telemetry file's records, typed."""
    return {name: read_records(os.path.join(rundir, name))
            for name in sorted(os.listdir(rundir)) if name.endswith(".jsonl")}


def snapshot(root) -> dict[str, bytes]:
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.join(d, name)] = f.read()
    return out


@pytest.mark.parametrize("make", [model_run, sim_run], ids=["model", "sim"])
def test_a_format_1_folder_is_refused_then_upgraded_to_the_same_plan_and_records(
        tmp_path, make):
    rundir = make(tmp_path)
    plan, recs = RunFolder(rundir).plan, records(rundir)
    assert any(isinstance(r, CollectiveDone) and r.pass_index == 1
               for rs in recs.values() for r in rs)
    as_format_1(rundir)
    with pytest.raises(RecordError, match=r"collective: unknown keys \['pass'\]"):
        records(rundir)
    with pytest.raises(OlderRun, match=f"format 1 .*symphony-emu upgrade {tmp_path / 'runs'}"):
        RunFolder(rundir).manifest
    done, current, failed = upgrade.upgrade(str(tmp_path))
    assert (done, current, failed) == ([rundir], [], [])
    folder = RunFolder(rundir)
    assert folder.manifest["format"] == 2 and folder.manifest["upgraded"]["from"] == 1
    assert not set(upgrade.PLAN_KEYS) & set(folder.manifest)
    assert folder.plan == plan
    assert records(rundir) == recs
    assert upgrade.upgrade(str(tmp_path)) == ([], [rundir], [])     # current: left alone


def test_a_folder_whose_spec_compiles_to_other_layouts_is_refused_and_left_unchanged(
        tmp_path):
    rundir = model_run(tmp_path)
    as_format_1(rundir)
    path = os.path.join(rundir, "manifest.json")
    with open(path) as f:
        man = json.load(f)
    man["layouts"][0]["nbytes"] *= 2            # what the code of then compiled
    with open(path, "w") as f:
        json.dump(man, f, indent=1)
    before = snapshot(tmp_path)
    done, current, failed = upgrade.upgrade(str(tmp_path))
    assert (done, current) == ([], [])
    ((where, why),) = failed
    assert where == rundir and why.startswith("its spec compiles today to another plan "
                                              "(layouts: ")
    assert snapshot(tmp_path) == before
    with pytest.raises(OlderRun):
        RunFolder(rundir).manifest


def test_port_samples_from_before_marks_by_cause_count_every_mark_as_reds(tmp_path):
    """An agent's port sample from before marks were counted by cause (the simulator
    writes none: one is added here as such an agent wrote it)."""
    rundir = sim_run(tmp_path)
    as_format_1(rundir)
    old = {"type": "port", "t_s": 0.25, "port": "leaf0-eth5", "q_bytes": 9000.0,
           "max_q_bytes": 12000.0, "pkts": 40, "bytes": 160000, "marks": 12,
           "model_drops": 1, "fault_drops": 0}
    with open(os.path.join(rundir, "leaf0.jsonl"), "a") as f:
        f.write(json.dumps(old) + "\n")
    assert upgrade.upgrade(str(tmp_path))[0] == [rundir]
    (sample,) = RunFolder(rundir).agent_records("leaf0", PortSample)
    assert sample == PortSample(**{k: v for k, v in old.items() if k != "type"},
                                marks_red=12, marks_symphony=None, marks_both=None)
