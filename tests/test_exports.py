"""nccl-tests' output and the report page from a run's summary (emulator/analysis/nccl.py, export.py,
page.py), pure: a summary built here (tests/summary_util.py), no run. The emulation test
(test_exports_emulation.py) checks the same on a real run."""

import os
import re
from dataclasses import replace

import pytest

from emulator.analysis import export, nccl, page
from emulator.analysis.summary import Excluded, Scaling, SchemeMedians
from tests import summary_util as su

N = 4                                  # ranks in the ring: all-reduce bus factor 2(N-1)/N


def summary(algorithm="ring_allreduce", factor=2 * (N - 1) / N, faithful=(True, False)):
    """Two runs (baseline seed 1 and 2) of one 1 MB collective at D = 1000: the second
    one unfaithful. cct 4 s emulated = 4 ms real; algbw 1 MB / 4 s emulated."""
    runs = []
    for seed, ok in zip((1, 2), faithful):
        cct = 4.0 * seed
        alg = 1048576 * 8 / cct                                  # b/s, emulated
        c = su.collective(0, 1048576, cct, theoretical_cct_s=1.0, cct_ratio=cct,
                          algbw_bps=alg, busbw_bps=alg * factor)
        runs.append(su.run("baseline", seed, [su.job([c], algorithm=algorithm, ranks=N,
                                                     jct_s=cct, max_step_overlap=2)],
                           rundir=f"/nowhere/s{seed}",
                           fidelity=su.fidelity(ok, [] if ok else ["CPU 95% busy"])))
    return su.summary(runs, scale=Scaling(dilation=1000.0), comparison={
        "baseline": SchemeMedians(cct_s=4.0, jct_s=4.0, max_step_overlap=2)},
        excluded=[Excluded(scheme="baseline", seed=2, repeat=1)])


def test_nccl_rows_are_real_scale_and_bus_bandwidth_is_the_collectives_factor():
    rows = nccl.nccl_rows(summary())
    x = rows[0]
    assert (x.size, x.count, x.type, x.redop, x.root) == (1048576, 262144, "float", "sum",
                                                          -1)
    assert x.time == pytest.approx(4000.0)                  # 4 s / 1000, in µs
    assert x.alg_bw == pytest.approx(1048576 / 4e-3 / 1e9)  # GB/s at real scale
    assert x.bus_bw / x.alg_bw == pytest.approx(2 * (N - 1) / N)


def test_all_gather_prints_no_reduction_as_nccl_tests_does():
    rows = nccl.nccl_rows(summary("ring_allgather", (N - 1) / N))
    assert rows[0].redop == "none"
    assert rows[0].bus_bw / rows[0].alg_bw == pytest.approx((N - 1) / N)


def test_the_text_has_nccl_tests_columns_and_footer_and_leaves_unfaithful_runs_out():
    text = nccl.nccl_tests_text(summary())
    lines = text.splitlines()
    head = next(x for x in lines if "size" in x and "count" in x)
    assert head.split()[1:] == ["size", "count", "type", "redop", "root", "time", "algbw",
                                "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
    units = lines[lines.index(head) + 1].split()
    assert units[1:] == ["(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)", "(us)", "(GB/s)",
                         "(GB/s)"]
    rows = [x for x in lines if not x.startswith("#")]
    assert len(rows) == 1                                       # seed 2 was unfaithful
    f = rows[0].split()
    assert f[:5] == ["1048576", "262144", "float", "sum", "-1"]
    assert float(f[5]) == pytest.approx(4000.0) and f[5:9] == f[9:13]
    assert "# 1 collective(s) of unfaithful runs left out" in lines
    assert re.search(r"^# Out of bounds values : 0 OK$", text, re.M)
    avg = float(re.search(r"^# Avg bus bandwidth    : (\S+)", text, re.M).group(1))
    assert avg == pytest.approx(float(f[7]), rel=0.01)


@pytest.mark.parametrize("value,width,text", [
    (4000.0, 7, "4000.00"), (12345.6, 7, "12345.6"), (123456.7, 7, " 123457"),
    (1234567.0, 7, "1234567"), (12345678.0, 7, "1.2e+07"), (0.153, 6, "  0.15"),
    (12345.6, 6, " 12346")])
def test_numbers_take_the_width_and_decimals_nccl_tests_gives_them(value, width, text):
    assert nccl._num(value, width) == text


def test_the_json_has_the_shape_of_nccl_tests_dash_j_output_one_scheme_per_file():
    j = nccl.nccl_tests_json(summary(), "baseline", ["symphony-emu", "run"])
    assert j["version"] == 2 and j["args"] == ["symphony-emu", "run"]
    assert set(j) >= {"start_time", "config", "results", "out_of_bounds",
                      "average_bus_bandwidth", "errors", "end_time"}
    assert "step_bytes" in j["config"] and "step_factor" not in j["config"]   # as theirs
    (r,) = j["results"]                             # seed 2 is unfaithful: left out
    assert set(r) == {"size", "count", "type", "redop", "root", "out_of_place", "in_place",
                      "actual_iterations", "experiment_name"}   # no ranks given: no per-iter
    assert set(r["out_of_place"]) == {"time", "alg_bw", "bus_bw", "nwrong"}
    assert r["experiment_name"] == "t/baseline/seed1/job1"
    assert j["out_of_bounds"] == {"count": 0, "okay": "true"}
    assert nccl.nccl_tests_json(summary(), "symphony")["results"] == []


def test_per_iteration_data_are_each_ranks_time_and_their_maximum():
    """What nccl-tests' analyze_perf_json.py reads of each result: out_of_place_per_iter's
    times_us (the max over process rows, its consistency check), per_process_max_times_us
    (rows = ranks, columns = iterations = passes) and avg/min/max/p99/cv."""
    s = summary()
    c = s.runs[0].jobs[0].collectives
    c.append(replace(c[0], pass_index=1, cct_s=6.0))
    ranks = {"/nowhere/s1": {(1, 0): {0: 3.0, 1: 4.0}, (1, 1): {0: 6.0, 1: 5.0}}}
    r = nccl.nccl_tests_json(s, "baseline", ranks=ranks)["results"][0]
    it = r["out_of_place_per_iter"]
    assert it["per_process_max_times_us"] == [[3000.0, 6000.0], [4000.0, 5000.0]]
    assert it["times_us"] == [4000.0, 6000.0]
    assert (it["avg_us"], it["min_us"], it["max_us"]) == (5000.0, 4000.0, 6000.0)
    assert it["cv_pct"] == pytest.approx(1414.2135 / 5000 * 100, rel=1e-4)
    assert r["in_place_per_iter"] == it and r["actual_iterations"] == 2


def test_the_set_page_names_every_run_with_its_verdict_and_escapes_what_it_prints(tmp_path):
    s = summary()
    s.runs[1] = replace(s.runs[1], fidelity=replace(s.runs[1].fidelity,
                                                    reasons=["<script>alert(1)</script>"]))
    s.runs[:] = [replace(r, rundir=str(tmp_path / f"baseline-seed{r.seed}")) for r in s.runs]
    path = page.set_page(str(tmp_path), s)
    text = open(path).read()
    assert text.count("faithful</span>") == 2          # "faithful" and "unfaithful"
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert 'href="baseline-seed1/index.html"' in text
    assert os.path.basename(path) == "index.html"


def test_reduce_scatter_keeps_the_sum_and_its_bus_factor():
    rows = nccl.nccl_rows(summary("ring_reducescatter", (N - 1) / N))
    assert rows[0].redop == "sum"
    assert rows[0].bus_bw / rows[0].alg_bw == pytest.approx((N - 1) / N)


def test_the_sweep_page_links_every_points_page_and_shows_its_plots(tmp_path):
    for p in ("k_0.001", "k_0.01"):
        (tmp_path / p).mkdir()
        (tmp_path / p / "index.html").write_text("<html></html>")
    plot = tmp_path / "sweep_plot.png"
    plot.write_bytes(b"\x89PNG")
    (tmp_path / "sweep.csv").write_text("point\n")
    text = open(page.sweep_page(str(tmp_path), ["k_0.001", "k_0.01"], [str(plot)])).read()
    for href in re.findall(r'href="([^"]+)"', text) + re.findall(r'src="([^"]+)"', text):
        assert (tmp_path / href).exists(), href
    assert 'href="k_0.01/index.html"' in text and 'src="sweep_plot.png"' in text


def test_pages_say_what_the_console_says_and_each_run_page_names_its_spec_and_code(
        tmp_path, capsys):
    """A simulated run set (no root): the set page holds the report as the console printed
    it; a run page links back to the set and shows its spec, code revision and start; every
    run folder has collectives.csv, its times from t = 0 as summary.json's."""
    import csv
    from emulator.analysis.summary import read as read_summary
    from emulator.cli import main as cli_main
    from topologies.wiring import REPO_ROOT
    rc = cli_main(["run", os.path.join(REPO_ROOT, "runs", "fig5.toml"), "--backend", "sim",
                   "--seeds", "2", "--jobs", "1", "--out", str(tmp_path), "--set",
                   "jobs.0.chunk_bytes=65536"])
    said = capsys.readouterr().out
    assert rc == 0
    text = open(tmp_path / "index.html").read()
    assert "The report, as the console prints it" in text
    for line in ("# dependency rule: on_arrival", "median CCT (ms)"):
        assert line in said and line in text, line
    for r in read_summary(str(tmp_path)).runs:
        assert r.rundir == f"{r.scheme}-seed{r.seed}"     # relative: it moves
        d = tmp_path / r.rundir
        run_page = (d / "index.html").read_text()
        assert 'href="../index.html"' in run_page and "code " in run_page
        assert "The spec it ran" in run_page and '&quot;name&quot;: &quot;fig5&quot;' in run_page
        with open(d / "collectives.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert tuple(rows[0]) == export.COLLECTIVE_COLUMNS
        (c,) = r.jobs[0].collectives
        assert float(rows[0]["start_s"]) == pytest.approx(c.start_s, abs=1e-8)
        assert float(rows[0]["cct_s"]) == pytest.approx(c.cct_s)
        assert rows[0]["verified"] == "True"


def test_the_kernels_queue_samples_are_a_table_beside_the_models(tmp_path):
    """kernel_queues.csv: each ``kernel_q`` record an agent wrote (the kernel qdisc's
    backlog beside the queue model's, for the fidelity monitor) is a row, its time from
    the run's t = 0. A simulated run has no kernel: the table has its header only."""
    import csv
    import json
    from emulator.rundir import RunFolder
    from emulator.sim.run import run_sim
    from emulator.spec import load
    from topologies.wiring import REPO_ROOT
    rundir = tmp_path / "baseline-seed1"
    run_sim(load(os.path.join(REPO_ROOT, "runs", "fig5.toml"), ["jobs.0.chunk_bytes=16384"]),
            "baseline", 1, str(rundir))
    export.write_tables(str(rundir))
    with open(rundir / "kernel_queues.csv", newline="") as f:
        r = csv.DictReader(f)
        assert tuple(r.fieldnames) == export.KERNEL_QUEUE_COLUMNS and not list(r)
    t0 = RunFolder(str(rundir)).measurements.t_start
    with open(rundir / "leaf0.jsonl", "a") as f:
        f.write(json.dumps({"type": "kernel_q", "t_s": t0 + 0.25, "port": "leaf0-eth5",
                            "model_bytes": 9000.0, "kernel_bytes": 8400, "sent_bytes": 123456,
                            "drops": 2}) + "\n")
    export.write_tables(str(rundir))
    with open(rundir / "kernel_queues.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row == {"switch": "leaf0", "port": "leaf0-eth5", "t_s": "0.25",
                   "model_bytes": "9000.0", "kernel_bytes": "8400", "sent_bytes": "123456",
                   "drops": "2"}
