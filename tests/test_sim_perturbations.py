"""The perturbations the simulator runs as the emulator does (emulator.sim.run), each
against the number it must give: a slower port, a straggling rank, Symphony switched on
late. Static rail rings share no link, so without a perturbation every step runs at line
rate (tests/test_sim.py: the lockstep bound within 0.5 %): what a perturbation adds is
its own."""

import os

import pytest

from emulator.analysis import report
from emulator.home import root as project_root
from emulator.rundir import RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load
from runtime.records import Window

TABLE1 = os.path.join(project_root(), "runs", "table1.toml")
STATIC = ["profile=zhu", "topology.routing=static", "jobs.0.chunk_bytes=65536",
          "jobs.0.passes=1"]


def _ratios(path, overrides):
    run_sim(load(TABLE1, overrides), "baseline", 1, str(path / "baseline-seed1"))
    (r,) = report.summarize(str(path), plots=False, exports=False).runs
    assert r.fidelity.faithful, r.fidelity
    return r.jobs[0].collectives, r


SWITCHES = ("leaf0", "leaf1", "leaf2", "leaf3", "spine0", "spine1", "spine2", "spine3")


@pytest.mark.parametrize("spine", range(4))
def test_a_slower_port_slows_the_collective_to_its_rate(tmp_path, spine):
    """leaf0 -> spine s at 1/1.5 of the link rate. Under static routing each of leaf0's
    uplinks carries one rail ring's flows out of leaf0, and the collective ends with its
    slowest ring: that ring's rank on leaf0 must push its 6 chunks through the slow port,
    so the collective takes 1.5x the bound, less the one frame of its 96 that the port
    hands on as it starts it (as HTB's veth does)."""
    (c,), _ = _ratios(tmp_path, STATIC + [
        f"perturbations=[{{kind='imbalance', switch='leaf0', toward='spine{spine}', "
        "ratio=1.5}]"])
    assert c.verified
    assert c.cct_ratio == pytest.approx(1.5 * (1 - 1 / 96), rel=0.005), c


def test_a_straggler_delays_its_ring_by_twice_its_delay_per_collective(tmp_path):
    """h0 waits delay_us before each of its sends. A ring of 4 ranks runs 6 steps; the
    last arrival's chain of sends runs back through ranks j-1, j-2, j-3, j, j-1, j-2, so
    the straggler is on it twice: a long delay (200 ms emulated, ~4 steps' time) costs
    the collective two delays, less what the others' slack absorbs (at most a step);
    a shorter one costs less (its ring's slack absorbs a part)."""
    (base,), _ = _ratios(tmp_path / "plain", STATIC)
    extra = {}
    for us in (40, 200):
        (slow,), _ = _ratios(tmp_path / f"straggler{us}", STATIC + [
            f"perturbations=[{{kind='straggler', host='h0', delay_us={us}.0}}]"])
        assert slow.verified
        extra[us] = slow.cct_s - base.cct_s
    step_s = base.theoretical_cct_s / 6
    delay_s = 200e-6 * 1000                            # dilated (D = 1000)
    assert 2 * delay_s - step_s < extra[200] <= 2 * delay_s, (extra, step_s)
    assert 0 < extra[40] < extra[200] and extra[40] <= 2 * 40e-3, extra


def test_symphony_marks_nothing_before_its_late_start_and_marks_after_it(tmp_path):
    """Under ECMP Symphony tracks and marks from its first windows; switched on at 1 ms real
    (``at_ms`` is at real scale: 1 s emulated, from the run's start), it keeps no
    window before then and marks in windows after it."""
    ecmp = ["jobs.0.chunk_bytes=131072", "jobs.0.passes=2"]
    windows = {}
    for name, extra in (("from-start", []),
                        ("late", ["perturbations=[{kind='symphony_late_start', at_ms=1.0}]"])):
        path = tmp_path / name / "symphony-seed1"
        run_sim(load(TABLE1, ecmp + extra), "symphony", 1, str(path))
        run = RunFolder(str(path))
        windows[name] = [w for sw in SWITCHES for w in run.agent_records(sw, Window)]
    early = [w for w in windows["from-start"] if w.t_s < 1.0]
    assert early and sum(w.marks_symphony for w in early) > 0
    late = windows["late"]
    assert late and min(w.t_s for w in late) >= 1.0 - 1e-9, min(w.t_s for w in late)
    assert sum(w.marks_symphony for w in late) > 0
