"""benchmarks/sim_speed.py runs end to end on a small run (no root): what it prints is
what the run's measurements say (it once read them as a dict after they became typed,
and stopped at its first line); with --sweep it times the many-seed command whole."""

import importlib.util
import os
import re

from runtime import compiled

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "sim_speed", os.path.join(HERE, "..", "benchmarks", "sim_speed.py"))
sim_speed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim_speed)


def test_the_benchmark_prints_packets_events_and_cpu_per_packet(capsys):
    assert sim_speed.main(["--set", "jobs.0.passes=1", "--repeats", "2", "--top", "3",
                           "--sweep", "2", "--jobs", "2"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"data packets (\d+), events (\d+), virtual ([\d.]+) s", out)
    assert m, out
    packets, events, virtual = int(m.group(1)), int(m.group(2)), float(m.group(3))
    assert packets > 1000 and events > 5 * packets and 1.0 < virtual < 10.0, out
    cpu_us = re.search(r"(\d+) µs CPU per data packet fastest", out)
    assert cpu_us and 1 <= int(cpu_us.group(1)) < 10_000, out
    assert f"the core: {compiled.status}" in out
    if compiled.status == "compiled":       # cProfile sees the compiled loop as one call
        assert "SYMPHONY_PURE=1 for the Python functions" in out
    else:
        assert "where the CPU goes" in out and "pipeline.py" in out
    sweep = re.search(r"2 seeds x 2 schemes \(baseline, symphony\), `run --backend sim "
                      r"--jobs 2`, analysis and plots included: wall ([\d.]+) s", out)
    assert sweep and 0 < float(sweep.group(1)) < 600, out
