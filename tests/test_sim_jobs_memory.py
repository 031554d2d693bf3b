"""``--jobs`` sized to memory as well as cores (emulator.sim.pool.jobs_for_memory): a run's
peak is estimated from its shape, and more runs than the free memory holds at once are
not started together."""

import os

from emulator.home import root as project_root
from emulator.sim import pool
from emulator.spec import load

PAPER = os.path.join(project_root(), "runs", "table1-paper.toml")
EIGHT_MB = ["jobs.0.passes=1", "jobs.0.chunk_bytes=8388608", "variants=[]", "paper=[]"]
ON_BUFFERS = EIGHT_MB + ["run.verify=buffers"]


def _tasks(spec, n):
    return [(f"baseline-seed{s}", spec, "baseline", s, f"/nowhere/{s}", None, 1)
            for s in range(1, n + 1)]


def test_the_estimate_of_an_8_mb_step_run_on_real_buffers_is_near_its_measured_7_gb_peak():
    # measured with /usr/bin/time -v (2026-12-06): 7.0 GB peak for one baseline run
    peak = pool.peak_bytes(load(PAPER, ON_BUFFERS), "baseline", 1)
    assert 6.0e9 < peak < 8.5e9, peak


def test_by_checksums_the_8_mb_step_run_is_estimated_at_a_third_of_a_gigabyte_and_not_cut():
    # measured with benchmarks/sim_memory.py (2026-12-06): 0.24 GB peak; the run's own
    # default budget sends it there (emulator.plan.memory)
    spec = load(PAPER, EIGHT_MB)
    assert spec.run.verify == "auto"
    peak = pool.peak_bytes(spec, "baseline", 1)
    assert 0.24e9 < peak < 0.5e9, peak
    assert pool.jobs_for_memory(_tasks(spec, 6), 4, free=16e9) == 4


def test_jobs_are_cut_to_what_free_memory_holds_and_the_cut_is_said(capsys):
    tasks = _tasks(load(PAPER, ON_BUFFERS), 6)
    assert pool.jobs_for_memory(tasks, 4, free=16e9) == 2
    out = capsys.readouterr().out
    assert out.startswith("--jobs 4 cut to 2: a run here needs about 7.") and "16.0 GB is free" in out
    assert pool.jobs_for_memory(tasks, 4, free=5e9) == 1       # too big alone: still one
    assert pool.jobs_for_memory(tasks, 4, free=100e9) == 4
    assert capsys.readouterr().out.count("cut to") == 1        # the 100 GB case says nothing


def test_small_runs_keep_their_jobs():
    tasks = _tasks(load(os.path.join(project_root(), "runs", "table1.toml")), 4)
    assert pool.jobs_for_memory(tasks, 2, free=4e9) == 2
