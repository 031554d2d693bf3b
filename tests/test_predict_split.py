"""The model on the run plan (``symphony-emu predict``) and the replay of a run on its own
recorded paths (``emulator.analysis.split``), without root: the model's run folders read
by the report like emulated ones, the agents' port records walked into node paths."""

import os

import pytest

from emulator import plan as planning
from emulator.analysis import console, report, split
from emulator.analysis.summary import Excluded
from emulator.cli import main as cli_main
from emulator.launch.predict import predict_one, run_predict
from emulator.model.from_plan import model_inputs
from emulator.rundir import RunFolder
from emulator.spec import load
from runtime.records import FlowPorts
from runtime.telemetry import Telemetry
from tests import summary_util as su
from topologies.wiring import REPO_ROOT

TABLE1 = os.path.join(REPO_ROOT, "runs", "table1.toml")
AT_2000 = ["scale.dilation=2000"]   # the arithmetic below is at D = 2000 (the file says 1000)
FIG5 = os.path.join(REPO_ROOT, "runs", "fig5.toml")


def test_predict_static_routing_is_the_lockstep_bound_in_the_report(tmp_path):
    spec = load(TABLE1, AT_2000 + ["topology.routing=static", "jobs.0.passes=2"])
    run_predict(spec, str(tmp_path), ["baseline", "ideal-priority"], [1])
    summary = report.summarize(str(tmp_path), plots=False)
    assert summary.backend == "fluid"
    for r in summary.runs:
        assert r.backend == "fluid" and r.fidelity.faithful, r.fidelity
        for c in r.jobs[0].collectives:
            # the bound, plus each step's host processing time (0.1 us real scale,
            # emulator.model.from_plan.HOST_POST_DELAY_S): ~0.2 ms on steps of ~107 ms
            assert c.verified and 1.0 < c.cct_ratio < 1.01


def test_predict_ecmp_collides_and_ideal_priority_wins_some_of_it_back(tmp_path):
    spec = load(FIG5)
    seeds = list(range(1, 11))
    run_predict(spec, str(tmp_path), ["baseline", "ideal-priority"], seeds)
    summary = report.summarize(str(tmp_path), plots=False)
    comp = summary.comparison
    theo = summary.runs[0].jobs[0].collectives[0].theoretical_cct_s
    assert comp["baseline"].cct_s > 1.5 * theo              # ECMP collisions
    assert comp["ideal-priority"].cct_s < comp["baseline"].cct_s
    by = {(r.scheme, r.seed): r.jobs[0].collectives[0].cct_s
          for r in summary.runs}
    assert all(by[("ideal-priority", s)] <= by[("baseline", s)] * (1 + 1e-9) for s in seeds)


def test_predict_follows_the_plan_perturbations_and_says_what_it_cannot_model():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="imbalance", switch="leaf0", toward="h0", '
                         'ratio=2.0}, {kind="loss", switch="spine0", fraction=0.01}]',
                         "topology.routing=static", "jobs.0.passes=1"])
    res, inp = predict_one(spec, "baseline", 1)
    (c,) = [r for r in res.collectives if r.rank == 0]
    plan = planning.compile(spec, "baseline", 1)
    bound = plan.layouts[0]
    from emulator.plan.layout import theoretical_cct_s
    theo = theoretical_cct_s(bound, plan.link_rate_bps, plan.mtu_bytes)
    # the hop into h0 at half rate: ring 0 runs at half speed, every step (plus the hosts'
    # processing time, ~0.2 ms a step here: emulator.model.from_plan.HOST_POST_DELAY_S)
    assert max(r.end_s for r in res.collectives) == pytest.approx(2 * theo, rel=5e-3)
    assert max(r.end_s for r in res.collectives) > 2 * theo
    assert inp.not_modelled and "loses nothing" in inp.not_modelled[0]


def test_recorded_ports_walk_into_node_paths(tmp_path):
    spec = load(TABLE1, AT_2000)
    plan = planning.compile(spec, "baseline", 1)
    far = split.port_neighbors(plan.fabric)
    assert far["leaf0"]["leaf0-eth5"] == "spine0" and far["spine2"]["spine2-eth2"] == "leaf1"
    # h0 (10.0.0.2, leaf0) -> h4 (10.1.0.2, leaf1) over spine2: leaf0-eth7, spine2-eth2,
    # leaf1-eth1; a second flow whose record misses a hop is dropped, not guessed
    run = tmp_path / "run"
    run.mkdir()
    recs = {"leaf0": [[1, 0, 3, "10.0.0.2", "10.1.0.2", "leaf0-eth7"],
                      [1, 0, 4, "10.0.0.2", "10.1.0.2", "leaf0-eth7"]],
            "spine2": [[1, 0, 3, "10.0.0.2", "10.1.0.2", "spine2-eth2"]],
            "leaf1": [[1, 0, 3, "10.0.0.2", "10.1.0.2", "leaf1-eth1"]]}
    for sw, flows in recs.items():
        tele = Telemetry(str(run / f"{sw}.jsonl"))
        tele.write(FlowPorts(switch=sw, flows=flows))
        tele.close()
    paths = split.recorded_paths(RunFolder(str(run)), plan)
    assert paths == {(1, 0, 3, "10.0.0.2", "10.1.0.2"): ["h0", "leaf0", "spine2", "leaf1", "h4"]}


def test_model_inputs_carry_the_plan_link_events_and_background():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="link_down", switch="leaf0", toward="spine1", '
                         'at_ms=1.0, up_ms=2.0}, {kind="background", src="h0", dst="h5", '
                         'rate_gbps=2.0, start_ms=0.5, duration_ms=1.0}]'])
    inp = model_inputs(planning.compile(spec, "baseline", 1))
    assert [(e.t_s, e.a, e.b, e.up) for e in inp.link_events] == \
        [(pytest.approx(2.0), "leaf0", "spine1", False), (pytest.approx(4.0), "leaf0", "spine1", True)]
    (bg,) = inp.background
    assert (bg.src, bg.dst) == ("h0", "h5")
    assert bg.rate_bps == pytest.approx(1e6) and bg.duration_s == pytest.approx(2.0)


def test_predict_command_prints_the_table_and_names_a_bad_scheme(tmp_path, capsys):
    assert cli_main(["predict", FIG5, "--seeds", "2", "--out", str(tmp_path / "p"),
                     "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "ideal-priority vs baseline, median CCT:" in out and "6 model runs" in out
    assert cli_main(["predict", FIG5, "--scheme", "symphony", "--out",
                     str(tmp_path / "q")]) == 2
    assert "the model's schemes are baseline, ideal-priority, pq" in capsys.readouterr().err


def test_predict_runs_a_spec_whose_paper_values_name_its_variants(tmp_path, capsys):
    # runs/fig4.toml's [[paper]] tables name the variant they speak of: predict runs the
    # spec alone (or one --variant), and must not refuse the spec for naming them
    fig4 = os.path.join(REPO_ROOT, "runs", "fig4.toml")
    for extra in ([], ["--variant", "late-start"]):
        assert cli_main(["predict", fig4, "--seeds", "1", "--scheme", "baseline", "--out",
                         str(tmp_path / f"p{len(extra)}"), "--no-plots", *extra]) == 0
    assert "paper[" not in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    for out in (afile, afile / "below"):
        assert pytest.raises(SystemExit, cli_main, ["predict", FIG5, "--seeds", "1",
                                                    "--out", str(out)]).value.code == 2
        err = capsys.readouterr().err
        assert err == (f"symphony-emu: --out {out}: {afile} is a file, not a folder (name "
                       "a folder, new or one of an earlier run)\n")
    assert afile.read_text() == "mine" and os.listdir(tmp_path) == ["afile"]


def test_the_paper_scale_spec_and_every_variant_load_at_real_scale():
    spec = load(os.path.join(REPO_ROOT, "runs", "model", "paper-scale.toml"))
    assert spec.scale.dilation == 1.0 and len(spec.topology.host_names) == 32
    assert spec.jobs[0].chunk_bytes == 8 << 20


def test_predict_runs_plain_messages_fig9(tmp_path):
    # Fig 9: B (step 1) from 0, A (step 0) delayed by a third of its solo time T; under
    # ideal-priority A, the lagging step, runs alone once posted (FCT = T) and the overlap
    # shrinks from 2 T - 2 d (max-min: B ends at 2 T - d) to T.
    spec = load(os.path.join(REPO_ROOT, "runs", "fig9.toml"))
    run_predict(spec, str(tmp_path), ["baseline", "ideal-priority"], [1])
    summary = report.summarize(str(tmp_path), plots=False)
    runs = {r.scheme: r for r in summary.runs}
    plan = planning.compile(spec, "baseline", 1)
    from emulator.plan.layout import wire_bytes
    solo = wire_bytes(1 << 20, plan.mtu_bytes) * 8 / plan.link_rate_bps
    d = spec.messages[0].start_ms / 1e3 * spec.scale.dilation
    a_base, b_base = runs["baseline"].messages
    a_ideal, b_ideal = runs["ideal-priority"].messages
    assert (a_base.step, b_base.step) == (0, 1)
    assert a_ideal.fct_s == pytest.approx(solo, rel=1e-9)
    assert b_base.end_s == pytest.approx(2 * solo - d, rel=1e-9)
    assert runs["baseline"].overlap_s == pytest.approx(2 * solo - 2 * d, rel=1e-9)
    assert runs["ideal-priority"].overlap_s == pytest.approx(solo, rel=1e-9)
    assert all(r.fidelity.faithful for r in summary.runs)


def test_a_collective_cut_by_a_permanent_link_failure_is_failed_not_slow(tmp_path):
    # static routing, leaf0's uplink to spine0 down for good from 1 ms (real): ring 0
    # has nothing to re-route to; its collective and the job's never complete
    spec = load(TABLE1, AT_2000 + ["topology.routing=static", "jobs.0.passes=2",
                         'perturbations=[{kind="link_down", switch="leaf0", toward="spine0", '
                         'at_ms=1.0}]'])
    run_predict(spec, str(tmp_path), ["baseline"], [1])
    summary = report.summarize(str(tmp_path), plots=False)
    (run,) = summary.runs
    colls = run.jobs[0].collectives
    assert [c.failed for c in colls] == [True, True]
    assert all(c.cct_s is None and c.cct_ratio is None for c in colls)
    assert run.jobs[0].jct_s is None
    assert any("never completed" in e for e in run.fidelity.errors)
    assert not run.fidelity.faithful
    assert summary.excluded == [Excluded(scheme="baseline", seed=1, repeat=1)]
    assert "baseline" not in summary.comparison or \
        summary.comparison["baseline"].cct_s is None


def test_the_split_gives_the_model_job_time_under_other_timing_draws(tmp_path):
    # Over several passes the closed-loop model depends on the hosts' timing draws alone
    # (same paths): the split reports the baseline's job time over TIMING_REPLICAS more
    # draws beside its own, and the range must hold it and be a real spread.
    import random
    from emulator.model.simulate import simulate
    spec = load(TABLE1, AT_2000 + ["jobs.0.passes=4"])
    plan = planning.compile(spec, "baseline", 3)
    inp = model_inputs(plan)

    def sim(scheme, rng):
        return simulate(inp.fabric, inp.jobs, scheme=scheme, rng=rng, mtu_bytes=inp.mtu_bytes,
                        per_step_sport=inp.per_step_sport, post_delay_s=inp.post_delay_s)
    base = sim("baseline", 3)
    paths = {(r.job, r.channel, r.step, r.src, r.dst): r.path
             for r in base.send_flows}
    fluid = {"baseline": base, "ideal-priority": sim("ideal-priority", 3)}
    timing = [simulate(inp.fabric, inp.jobs, rng=random.Random(f"3/timing/{k}"),
                       mtu_bytes=inp.mtu_bytes, paths=paths, per_step_sport=inp.per_step_sport,
                       post_delay_s=inp.post_delay_s) for k in range(split.TIMING_REPLICAS)]
    (job,) = split._job_splits(RunFolder(str(tmp_path)), plan, fluid, timing)
    lo, hi = job.fluid_jct_range_s
    assert lo <= job.fluid_jct_s <= hi
    assert hi > 1.01 * lo, (lo, hi)        # the timing draws alone move it
    (none,) = split._job_splits(RunFolder(str(tmp_path)), plan, fluid)
    assert none.fluid_jct_range_s is None


def test_static_emulation_error_is_judged_where_the_model_sees_only_host_delays():
    # what the replay of a 4-pass static run on this machine gave (2026-12-02): the model
    # 1.002-1.008x the bound per pass (the hosts' processing delays), the emulation slow
    def job(routing, emulated):
        colls = [su.collective_split(p, routing_x=r) for p, r in enumerate(routing)]
        return su.split_job(colls, emulated_jct_s=emulated, fluid_jct_s=2.0)
    clean = [1.0024, 1.0044, 1.0059, 1.0079]
    assert split.static_error_x([job(clean, 2.6)]) == pytest.approx(1.3)
    assert split.static_error_x([job(clean, 2.02)]) == pytest.approx(1.01)
    # a collision in the model: it is no reference for what the emulation added
    assert split.static_error_x([job([1.0024, 1.31, 1.0, 1.0], 2.6)]) is None
    assert split.static_error_x([], [su.message_split(routing_x=1.0, transport_x=1.07)]) == 1.07


def test_a_run_set_says_which_dependency_rule_it_ran_and_an_old_one_reads_as_in_order(
        tmp_path, capsys):
    """summary.json and the table's header name the rule; a manifest from before the rule
    was a choice (format 1, no "order" in its layouts) is upgraded as in_order, what it
    ran."""
    for rule in ("in_order", "on_arrival"):
        spec = load(FIG5, [f"collective.order={rule}"])
        run_predict(spec, str(tmp_path / rule), ["baseline"], [1])
        summary = report.summarize(str(tmp_path / rule), plots=False)
        assert summary.order == [rule] and summary.runs[0].order == [rule]
        console.print_tables(summary, spec.scale.dilation)
        assert f"# dependency rule: {rule}" in capsys.readouterr().out
    from emulator.upgrade import upgrade
    from tests.test_upgrade import as_format_1
    folder = RunFolder(str(tmp_path / "on_arrival" / "baseline-seed1"))
    as_format_1(folder.path, keep_order=False)
    assert upgrade(folder.path) == ([folder.path], [], [])
    assert report.analyze_run(folder.path).order == ["in_order"]


def test_report_names_a_damaged_file_and_a_single_run_folder(tmp_path, capsys):
    out = tmp_path / "set"
    assert cli_main(["predict", FIG5, "--seeds", "1", "--scheme", "baseline", "--out",
                     str(out), "--no-plots"]) == 0
    (run,) = [d for d in out.iterdir() if (d / "manifest.json").exists()]
    capsys.readouterr()
    # one run's folder: report reads that run (tests/test_sim.py: never its twin)
    assert cli_main(["report", str(run)]) == 0
    assert capsys.readouterr().out.startswith(f"# the run in {run} (fluid, baseline seed 1)\n")
    # a truncated measurements.json is named, in one line, never read as "no runs"
    meas = run / "measurements.json"
    meas.write_text(meas.read_text()[:40])
    assert cli_main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symphony-emu report: {meas}: damaged, not JSON (") and \
        err.endswith("of 40); run it again or remove the run's folder\n") and err.count("\n") == 1
    # ... and so is one that holds a key no writer writes: never half-read
    meas.write_text('{"timed_out": false, "cpu_busy_hosts": 0.5}')
    assert cli_main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symphony-emu report: {meas}: not this run format's measurements "
                          "(Measurements: unknown keys ['cpu_busy_hosts']; allowed: backend, ") \
        and err.endswith("); run it again or remove the run's folder\n") and err.count("\n") == 1


def test_the_model_says_it_has_no_pauses_on_a_lossless_fabric():
    _, inp = predict_one(load(TABLE1, AT_2000 + ["jobs.0.passes=1",
                                                 'topology.flow_control="drop"']), "baseline", 1)
    assert inp.not_modelled == ()
    _, inp = predict_one(load(TABLE1, AT_2000 + ["jobs.0.passes=1",
                                                 'topology.flow_control="pfc"']), "baseline", 1)
    assert inp.not_modelled == ('PFC\'s pauses (topology.flow_control = "pfc"): fluid flows '
                                'hold no buffer to pause for',)
