"""A simulated run gives its memory back when it ends (emulator.sim.run): a sweep of runs
in one process (``--jobs 1``) holds one run's buffers at a time, not one per run done."""

import os
import tracemalloc

from emulator.home import root as project_root
from emulator.sim.run import run_sim
from emulator.spec import load

FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
MIB = 1 << 20


def test_two_runs_in_one_process_the_second_peaks_no_higher_than_the_first(tmp_path):
    spec = load(FIG5, ["jobs.0.chunk_bytes=524288", "jobs.0.passes=1"])
    tracemalloc.start()
    try:
        seen = []
        for k in (1, 2):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            run_sim(spec, "baseline", 1, str(tmp_path / f"run{k}"))
            after, peak = tracemalloc.get_traced_memory()
            seen.append((before, after, peak))
    finally:
        tracemalloc.stop()
    (b1, a1, p1), (b2, a2, p2) = seen
    buffers = 16 * 4 * 524288                 # one copy of the 16 ranks' buffers
    assert p1 - b1 > buffers, seen            # the run did hold its buffers
    assert a2 - b2 < 4 * MIB, seen            # and gave them back when it ended
    assert p2 < p1 + 4 * MIB, seen            # the second starts from where the first did
