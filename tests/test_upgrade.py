"""The run-format converter (emulator/upgrade.py) on folders turned back into format 1
or 2 here: a model run's and a simulated one's, made in a second each, without root. An
older folder is refused by the reader naming the command; upgraded, it reads as it was
written; one whose spec compiles to another plan today, or whose measurements hold a key
no format had, is refused and left unchanged."""

import json
import os
from dataclasses import asdict

import pytest

from emulator import upgrade
from emulator.launch.predict import predict_one
from emulator.measurements import AgentMeasurements, Measurements, PerturbationFired
from emulator.rundir import OlderRun, RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load
from runtime.records import FORMAT, CollectiveDone, PortSample, RecordError
from runtime.telemetry import read_records
from topologies.wiring import REPO_ROOT

FIG5 = os.path.join(REPO_ROOT, "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=2"]


def as_format_2(rundir: str) -> None:
    """Turn a run folder back into format 2: ``measurements.json`` as its writers wrote
    it, a key at its default value left out (each backend wrote only its own), an
    agent's too."""
    folder = RunFolder(rundir)
    meas, empty = folder.measurements.to_dict(), Measurements().to_dict()
    old = {k: v for k, v in meas.items()
           if v != empty[k] or k in ("timed_out", "host_exit", "rank_summaries")}
    blank = AgentMeasurements().to_dict()
    old["agents"] = {sw: {k: v for k, v in a.items() if v != blank[k]}
                     for sw, a in meas["agents"].items()}
    _rewrite(folder, "measurements.json", old)
    with open(folder.file("manifest.json")) as f:
        _rewrite(folder, "manifest.json", {**json.load(f), "format": 2})


def _rewrite(folder: RunFolder, name: str, data: dict) -> None:
    with open(folder.file(name), "w") as f:
        json.dump(data, f, indent=1)


def as_format_1(rundir: str, *, keep_order: bool = True) -> None:
    """Turn a run folder back into format 1 (through format 2): the manifest's
    plan-summary keys instead of the plan, no ``format``; ``pass`` for ``pass_index`` in
    collective records. Without ``keep_order``, its layouts lose ``order`` (a folder from
    before the rule was a choice)."""
    folder = RunFolder(rundir)
    plan = folder.plan
    as_format_2(rundir)
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


def refused(root, rundir: str) -> str:
    """Why upgrading ``root`` (its one run folder ``rundir``) left it as it was."""
    before = snapshot(root)
    done, current, failed = upgrade.upgrade(str(root))
    ((where, why),) = failed
    assert (done, current, where) == ([], [], rundir) and snapshot(root) == before
    return why


@pytest.mark.parametrize("make", [model_run, sim_run], ids=["model", "sim"])
def test_a_format_1_folder_is_refused_then_upgraded_to_the_same_plan_and_records(
        tmp_path, make):
    rundir = make(tmp_path)
    plan, recs, meas = RunFolder(rundir).plan, records(rundir), RunFolder(rundir).measurements
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
    assert folder.manifest.format == FORMAT and folder.manifest.upgraded["from"] == 1
    with open(folder.file("manifest.json")) as f:
        assert not set(upgrade.PLAN_KEYS) & set(json.load(f))
    assert folder.plan == plan
    assert records(rundir) == recs
    assert folder.measurements == meas
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
    assert refused(tmp_path, rundir).startswith("its spec compiles today to another plan "
                                                "(layouts: ")
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


@pytest.mark.parametrize("make", [model_run, sim_run], ids=["model", "sim"])
def test_a_format_2_folder_is_refused_then_upgraded_to_the_same_measurements(tmp_path,
                                                                              make):
    rundir = make(tmp_path)
    before = RunFolder(rundir)
    plan, recs, meas = before.plan, records(rundir), before.measurements
    assert meas.backend in ("fluid", "sim") and meas.t_start == 0.0
    as_format_2(rundir)
    with pytest.raises(OlderRun, match=f"format 2 .*symphony-emu upgrade {tmp_path / 'runs'}"):
        RunFolder(rundir).manifest
    assert upgrade.upgrade(str(tmp_path)) == ([rundir], [], [])
    folder = RunFolder(rundir)
    assert folder.manifest.format == FORMAT and folder.manifest.upgraded == {"from": 2}
    assert (folder.plan, records(rundir), folder.measurements) == (plan, recs, meas)


def test_older_measurements_shapes_become_their_types(tmp_path):
    """What emulated runs of format 2 (or 1) wrote before ``measurements.json`` was typed:
    a loss applied at set-up (no ``fired_s``), the underlay's raw counters (no rates), a
    dead agent and a lost one by their one key."""
    rundir = sim_run(tmp_path)
    as_format_2(rundir)
    path = os.path.join(rundir, "measurements.json")
    with open(path) as f:
        meas = json.load(f)
    raw = {"server": 1, "tx_bytes": 2_000_000, "tx_packets": 1500, "rx_bytes": 1_000_000,
           "rx_packets": 800, "tx_dropped": 0, "tx_errors": 0, "rx_dropped": 3,
           "rx_errors": 0}
    meas.update(wall_s=4.0, underlay=[raw],
                perturbations=[{"t_s": 0.0, "what": "spine0 drops 1.00%"},
                               {"t_s": 0.5, "fired_s": 0.52, "what": "leaf0 -> spine1 down"}],
                agents={**meas["agents"], "spine1": {"dead": -9},
                        "spine2": {"lost": "server s1 no longer answers"}})
    with open(path, "w") as f:
        json.dump(meas, f)
    assert upgrade.upgrade(str(tmp_path))[0] == [rundir]
    got = RunFolder(rundir).measurements
    assert got.perturbations == [PerturbationFired(t_s=0.0, fired_s=None,
                                                   what="spine0 drops 1.00%"),
                                 PerturbationFired(t_s=0.5, fired_s=0.52,
                                                   what="leaf0 -> spine1 down")]
    (u,) = got.underlay
    assert (u.server, u.rx_dropped, u.tx_bps, u.rx_bps) == (1, 3, 4e6, 2e6)
    assert u.capacity_bps is None and u.utilisation is None
    assert got.agents["spine1"] == AgentMeasurements(dead=-9)
    assert got.agents["spine2"].lost == "server s1 no longer answers"
    assert got.agents["leaf0"].counters["pkts"] > 0


def test_measurements_with_a_key_no_format_had_are_refused_and_left_unchanged(tmp_path):
    rundir = sim_run(tmp_path)
    as_format_1(rundir)
    path = os.path.join(rundir, "measurements.json")
    with open(path) as f:
        meas = json.load(f)
    with open(path, "w") as f:
        json.dump({**meas, "cpu_busy_hosts": 0.5}, f)
    assert refused(tmp_path, rundir).startswith("measurements.json: Measurements: unknown "
                                                "keys ['cpu_busy_hosts']")
