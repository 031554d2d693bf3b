"""The fidelity verdict on real runs (root): an overloaded emulation is flagged, the
default experiment is not."""

import os

import pytest

from emulator.analysis import report
from emulator.launch import runner
from emulator.spec import load
from topologies.wiring import REPO_ROOT

pytestmark = pytest.mark.emulation

TABLE1 = os.path.join(REPO_ROOT, "runs", "table1.toml")


def _verdict(tmp_path, overrides, scheme="symphony"):
    spec = load(TABLE1, overrides)
    runner.run_one(spec, scheme, 1, str(tmp_path / "run"))
    res = report.analyze_run(str(tmp_path / "run"))
    assert all(c.verified for j in res.jobs for c in j.collectives), res.jobs
    return res.fidelity


def test_links_too_fast_for_the_cpus_are_flagged_unfaithful(tmp_path):
    # D = 50: 200 Mbit/s links, 40x the default; 16 Python ranks and 8 agents on 2 cores
    # cannot keep up.
    f = _verdict(tmp_path, ["scale.dilation=50", "jobs.0.passes=1"])
    print("\noverloaded:", f.reasons)
    assert not f.faithful
    assert any(w in r for r in f.reasons
               for w in ("CPU", "pacing", "NFQUEUE", "busy port", "queue model"))


def test_the_default_experiment_is_faithful(tmp_path):
    # One retry: this shared VM's hypervisor takes 2-15 % of the CPUs' time during some
    # runs (steal, measured 2026-12-02), and such a run can be flagged for no fault of
    # the code; twice in a row fails.
    for attempt in (1, 2):
        f = _verdict(tmp_path / f"try{attempt}", ["jobs.0.passes=2"])
        print(f"\ndefault, attempt {attempt}:", f)
        if f.faithful:
            break
    assert f.faithful, f.reasons
