"""The simulation backend (emulator.sim): the emulator's own host and switch code on a
virtual clock, without root. Each test is a whole run (a second or two) read back by the
report as an emulated run is."""

import json
import os

import pytest

from emulator.analysis import report, summary
from emulator.cli import main as cli_main
from emulator.home import root as project_root
from emulator.rundir import RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load

TABLE1 = os.path.join(project_root(), "runs", "table1.toml")
FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]


def summarize(path):
    return report.summarize(str(path), plots=False, exports=False)


def test_static_routing_without_congestion_runs_at_the_lockstep_bound(tmp_path):
    """Rail rings under static routing share no link: every step at line rate. A port
    hands a frame on as it starts sending it (as the emulator's shaped veth does), so the
    CCT is the bound within 0.5 % (a step's last frame lands as its last hop starts it:
    a frame's time under the bound, 0.07 % here). Zhu's transport (an ACK per 8 packets)."""
    spec = load(TABLE1, ["profile=zhu", "topology.routing=static", "jobs.0.passes=2"])
    run_sim(spec, "baseline", 1, str(tmp_path / "baseline-seed1"))
    (r,) = summarize(tmp_path).runs
    assert r.backend == "sim" and r.fidelity.faithful, r.fidelity
    for c in r.jobs[0].collectives:
        assert c.verified and abs(c.cct_ratio - 1) < 0.005, c


def test_an_ack_per_packet_costs_its_share_of_the_link(tmp_path):
    """HPCC's transport (the main job's) ACKs every packet: a rank's uplink carries its
    data and the ACKs of what it receives, 62 bytes on the wire per 4154-byte data frame
    (1.49 %), which the lockstep bound leaves out. The CCT is over the bound by up to that
    share (measured 1.26 %), and by more than a rounding."""
    spec = load(TABLE1, ["topology.routing=static", "jobs.0.passes=2"])
    assert spec.transport.ack_every == 1
    run_sim(spec, "baseline", 1, str(tmp_path / "baseline-seed1"))
    (r,) = summarize(tmp_path).runs
    share = 62 / 4154
    for c in r.jobs[0].collectives:
        assert c.verified and 0.005 < c.cct_ratio - 1 < share + 0.002, c


def test_every_buffer_is_verified_and_symphony_marks_under_ecmp(tmp_path):
    spec = load(FIG5, SMALL)
    for scheme in ("baseline", "symphony"):
        run_sim(spec, scheme, 3, str(tmp_path / f"{scheme}-seed3"))
    s = summarize(tmp_path)
    for r in s.runs:
        assert all(c.verified for c in r.jobs[0].collectives), r.scheme
        assert r.fidelity.faithful, r.fidelity
    meas = RunFolder(str(tmp_path / "symphony-seed3")).measurements
    marks = sum(a.counters["marks_symphony"] + a.counters["marks_both"]
                for a in meas.agents.values())
    assert marks > 0
    assert "hosts' processing time" in " ".join(meas.not_modelled)


def test_the_same_seed_twice_gives_the_same_run(tmp_path):
    spec = load(FIG5, SMALL)
    out = []
    for k in range(2):
        run_sim(spec, "symphony", 5, str(tmp_path / f"k{k}" / "symphony-seed5"))
        r = summarize(tmp_path / f"k{k}").runs[0]
        out.append([(c.cct_s, c.start_s) for c in r.jobs[0].collectives])
    assert out[0] == out[1]


def test_a_lossy_switch_costs_retransmissions_but_every_byte_arrives(tmp_path):
    spec = load(TABLE1, SMALL + ["topology.routing=static",
                                 'perturbations=[{kind="loss", switch="spine0", '
                                 'fraction=0.02}]'])
    run_sim(spec, "baseline", 1, str(tmp_path / "baseline-seed1"))
    (r,) = summarize(tmp_path).runs
    assert all(c.verified for c in r.jobs[0].collectives)
    assert r.transport.retransmits > 0 and r.transport.switch_drops > 0


def test_what_the_sim_cannot_do_is_refused_naming_it(tmp_path, capsys):
    for extra, word in ((["--pcap", "h0"], "--pcap"), (["--servers", "root@a"], "--servers")):
        rc = cli_main(["run", TABLE1, "--backend", "sim", "--out", str(tmp_path / "o"),
                       *extra])
        assert rc == 2
        assert f"{word} is for --backend emulation" in capsys.readouterr().err
        assert not os.path.exists(tmp_path / "o")


def test_a_link_flap_reroutes_what_leaves_and_recovers_what_was_black_holed(tmp_path):
    """leaf0-spine0 down from the start until 150 ms: leaf0 routes nothing onto it (its
    port toward spine0 is never offered a packet, so it drops none); what other leaves
    hash onto spine0 toward leaf0's hosts is black-holed there (the kernel's static routes
    know no remote failure, as in the model) until the cable is up, then resent after a
    timeout; every buffer ends right."""
    spec = load(FIG5, SMALL + ['perturbations=[{kind="link_down", switch="leaf0", '
                               'toward="spine0", at_ms=0.0, up_ms=150.0}]'])
    meas = run_sim(spec, "baseline", 2, str(tmp_path / "baseline-seed2"))
    (r,) = summarize(tmp_path).runs
    assert all(c.verified for c in r.jobs[0].collectives)
    assert meas.sim.no_route_drops > 0 and r.transport.timeouts > 0
    from topologies import wiring
    assert wiring.port_toward("leaf0", "spine0", 4) not in meas.sim.drops_by_port


def test_background_traffic_shares_a_host_link_and_is_dropped_by_its_host(tmp_path):
    spec = load(FIG5, SMALL + ["topology.routing=static"])
    slow = load(FIG5, SMALL + ["topology.routing=static",
                               'perturbations=[{kind="background", src="h0", dst="h5", '
                               'rate_gbps=5.0, start_ms=0.0, duration_ms=1000000.0}]'])
    run_sim(spec, "baseline", 1, str(tmp_path / "a" / "baseline-seed1"))
    meas = run_sim(slow, "baseline", 1, str(tmp_path / "b" / "baseline-seed1"))
    cct = [summarize(tmp_path / k).runs[0].jobs[0].collectives[0].cct_s
           for k in ("a", "b")]
    assert cct[1] > 1.3 * cct[0]                  # h0's ring shares its uplink with it
    assert meas.sim.background_rx > 0


def test_plain_messages_run_as_the_emulator_runs_them(tmp_path):
    """Fig 9: two flows of one job, different steps, through one port; both delivered."""
    spec = load(os.path.join(project_root(), "runs", "fig9.toml"))
    meas = run_sim(spec, "baseline", 1, str(tmp_path / "baseline-seed1"))
    assert all(s.ok for s in meas.rank_summaries.values())
    (r,) = summarize(tmp_path).runs
    assert len(r.messages) == 2 and all(m.fct_s > 0 for m in r.messages)


def test_run_backend_sim_prints_the_comparison_without_root(tmp_path, capsys):
    rc = cli_main(["run", FIG5, "--backend", "sim", "--seeds", "2", "--scheme", "symphony",
                   "--no-plots", "--out", str(tmp_path), "--set", "jobs.0.chunk_bytes=65536"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "symphony-seed2: simulated" in out and "median CCT" in out


def test_a_twin_follows_the_paths_its_emulated_run_recorded(tmp_path, capsys):
    """A run under static routing stands in for an emulated run (its manifest says so):
    an ECMP run given its paths sends every data flow the same way (the agents record the
    same egress port for each); without them it draws its own. ACKs and CNPs are not
    recorded, so they take the hash's paths. A run set without that seed is refused."""
    src = tmp_path / "emulated"
    run_sim(load(FIG5, SMALL + ["topology.routing=static"]), "baseline", 4,
            str(src / "baseline-seed4"))
    man = json.load(open(src / "baseline-seed4" / "manifest.json"))
    json.dump({**man, "backend": "emulation"}, open(src / "baseline-seed4" / "manifest.json", "w"))
    ends = {}
    for name, extra in (("twin", ["--paths", str(src)]), ("own", [])):
        rc = cli_main(["run", FIG5, "--backend", "sim", "--scheme", "baseline", "--no-plots",
                       "--set", "run.seeds=[4]", "--out", str(tmp_path / name), *extra]
                      + [f"--set={s}" for s in SMALL])
        assert rc == 0
        ends[name] = summarize(tmp_path / name).runs[0].jobs[0].jct_s
    def ports(folder):
        from emulator.rundir import RunFolder
        from runtime.records import FlowPorts
        run = RunFolder(str(folder / "baseline-seed4"))
        return {(sw, *map(str, f)) for sw in ("leaf0", "leaf1", "leaf2", "leaf3", "spine0",
                                              "spine1", "spine2", "spine3")
                for r in run.agent_records(sw, FlowPorts) for f in r.flows}
    assert ports(tmp_path / "twin") == ports(src) != ports(tmp_path / "own")
    static = summarize(src).runs[0].jobs[0].jct_s
    assert ends["twin"] == pytest.approx(static, rel=0.05)
    rc = cli_main(["run", FIG5, "--backend", "sim", "--seeds", "2", "--paths", str(src),
                   "--out", str(tmp_path / "bad")])
    assert rc == 2 and "no emulated run of seed 1 in it" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "bad")


@pytest.mark.parametrize("case", ["spec", "fabric", "no paths"])
def test_paths_from_another_spec_fabric_or_without_records_are_refused_naming_it(
        tmp_path, capsys, case):
    """An emulated run's paths fit only its own spec and fabric, and need the agents'
    records: otherwise a one-line error names the folder and the problem, and no run
    folder is left."""
    src = tmp_path / "emulated"
    run_sim(load(FIG5, SMALL), "baseline", 1, str(src / "baseline-seed1"))
    man = json.load(open(src / "baseline-seed1" / "manifest.json"))
    json.dump({**man, "backend": "emulation"}, open(src / "baseline-seed1" / "manifest.json", "w"))
    spec, extra = FIG5, list(SMALL)
    if case == "spec":
        spec = TABLE1
    elif case == "fabric":
        extra.append("topology.spines=2")
    else:
        for f in (src / "baseline-seed1").glob("*.jsonl"):
            if f.name.startswith(("leaf", "spine")):
                f.unlink()
    rc = cli_main(["run", spec, "--backend", "sim", "--scheme", "baseline", "--no-plots",
                   "--seeds", "1", "--paths", str(src), "--out", str(tmp_path / "twin")]
                  + [f"--set={s}" for s in extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    want = {"spec": "a run of spec 'fig5'; this is 'table1'",
            "fabric": "a run on another fabric (leafspine 4 leaves x 4 spines, 4 hosts a "
                      "leaf, links 10 Mb/s emulated); this is leafspine 4 leaves x 2 spines",
            "no paths": "its agents recorded no paths"}[case]
    assert str(src / "baseline-seed1") in err[0] and want in err[0], err
    assert not os.path.exists(tmp_path / "twin")


def test_a_sweep_simulates_its_runs_in_parallel_processes_and_resumes(tmp_path, capsys):
    args = ["sweep", FIG5, "--backend", "sim", "--jobs", "2", "--seeds", "2", "--scheme",
            "baseline", "--scheme", "symphony", "--param", "symphony.k=0.001,0.01",
            "--set", "jobs.0.chunk_bytes=65536", "--no-plots", "--out", str(tmp_path)]
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert out.count(": simulated") == 8
    rows = open(tmp_path / "sweep.csv").read().splitlines()
    assert len(rows) == 1 + 8
    assert cli_main(args) == 0                      # again: nothing to do
    out = capsys.readouterr().out
    assert ": simulated" not in out and out.count("done before, kept") == 8


def test_the_hosts_delay_is_drawn_per_datagram_and_seeded(tmp_path):
    """Static rail rings, one pass, 6 steps: with a mean 2 ms delay per datagram each step
    ends later by at least the last datagram's delay, and the same seed draws the same."""
    spec = load(TABLE1, SMALL + ["topology.routing=static"])
    ccts = {}
    for name, delay in (("none", 0.0), ("a", 2e-3), ("b", 2e-3)):
        meas = run_sim(spec, "baseline", 1, str(tmp_path / name / "baseline-seed1"),
                       host_delay_s=delay)
        assert meas.host_delay_s == delay
        ccts[name] = summarize(tmp_path / name).runs[0].jobs[0].collectives[0].cct_s
    assert ccts["a"] == ccts["b"]
    assert ccts["none"] + 6 * 0.5e-3 < ccts["a"] < ccts["none"] + 6 * 30e-3


def test_run_until_decided_adds_seeds_in_looks_and_says_its_rule(tmp_path, capsys):
    """Symphony with k = 1 marks hard: the one collective's CCT (the primary metric) is
    decided slower within the plan (looks at 12 and 18 seeds, 6 alone can never decide at
    97.5 %), and the output says so; without the baseline there is nothing to compare."""
    rc = cli_main(["run", FIG5, "--backend", "sim", "--until-decided", "--scheme", "symphony",
                   "--out", str(tmp_path / "no")])
    assert rc == 2 and "run baseline too" in capsys.readouterr().err
    rc = cli_main(["run", FIG5, "--backend", "sim", "--until-decided", "--max-seeds", "18",
                   "--batch", "6", "--no-plots", "--out", str(tmp_path / "u"), "--set",
                   "jobs.0.chunk_bytes=65536", "--set", 'run.schemes=["baseline","symphony"]',
                   "--set", "symphony.k=1.0"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "until decided: CCT of symphony against the baseline" in out
    assert "looks at 12, 18 pairs, each at 97.50%" in out
    assert "until decided: decided after 12 seeds (cct: symphony higher" in out
    s = summary.read(str(tmp_path / "u")).sequential
    assert s["primary"] == "cct" and s["looks"] == [12, 18]
    assert s["decided"] and s["record"][-1]["verdicts"]["symphony"] in ("lower", "higher")


def test_repeat_measures_the_noise_floor_and_compares_first_runs_only(tmp_path, capsys):
    """Each seed run 3 times with other draws of the hosts' timing (a 1 ms mean delay per
    datagram, so the draws matter): the summary says how much one seed varies, against
    the spread between seeds; the comparison reads each seed's first run only."""
    rc = cli_main(["run", FIG5, "--backend", "sim", "--seeds", "3", "--repeat", "3",
                   "--no-plots", "--out", str(tmp_path), "--set", "jobs.0.chunk_bytes=65536",
                   "--set", "sim.host_delay_ms=1.0", "--set",
                   'run.schemes=["baseline","symphony"]'])
    assert rc == 0
    s = summary.read(str(tmp_path))
    assert len(s.runs) == 18 and sorted({r.repeat for r in s.runs}) == [1, 2, 3]
    n = s.noise["baseline"]["cct"]
    assert (n.seeds, n.repeats) == (3, 3)
    assert 0 < n.within_seed_spread <= n.within_seed_spread_max
    assert s.evidence["symphony"]["cct"].n == 3              # first runs only
    said = capsys.readouterr().out
    assert "the same seed again (--repeat)" in said
    assert s.excluded == [] and "left out" not in said     # repeats are not failures
    assert "12 runs are a seed's repeats (--repeat)" in said


def test_no_packet_is_resent_where_none_was_lost(tmp_path):
    """A port hands a frame on from an event of its own: when it did so inside the send
    that offered it, an ACK could re-enter the sending NIC before its send returned and
    rewind its go-back-N, and this very run resent 16 packets nothing had dropped."""
    spec = load(TABLE1, ["profile=zhu", "jobs.0.passes=2"])   # a seed with no drop under it
    meas = run_sim(spec, "baseline", 1, str(tmp_path / "baseline-seed1"), host_delay_s=0.0)
    (r,) = summarize(tmp_path).runs
    drops = meas.sim.port_drops + r.transport.switch_drops
    assert drops == 0 and r.transport.retransmits == 0


def test_the_trace_draws_overlapping_flows_as_async_slices_perfetto_reads(tmp_path):
    """A rank sends step s+1 while step s is in flight: as complete events on one thread
    its slices would overlap without nesting, which Perfetto's JSON importer does not
    take. Every flow is an async begin/end pair of its own id; no complete events on one
    track overlap without nesting."""
    from emulator.analysis import export
    run_sim(load(FIG5, SMALL), "baseline", 3, str(tmp_path / "baseline-seed3"))
    ev = export.trace(export._Run(str(tmp_path / "baseline-seed3")))["traceEvents"]
    flows = [e for e in ev if e["ph"] == "b"]
    ends = {e["id"]: e["ts"] for e in ev if e["ph"] == "e"}
    assert len(flows) == len(ends) == 6 * 16 and all(ends[e["id"]] > e["ts"] for e in flows)
    overlapped = 0
    by_track: dict = {}
    for e in sorted(flows, key=lambda e: e["ts"]):
        by_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], ends[e["id"]]))
    for spans in by_track.values():
        overlapped += sum(b0 < a1 for (a0, a1), (b0, b1) in zip(spans, spans[1:]))
    assert overlapped > 0                       # what complete events could not draw
    complete = [e for e in ev if e["ph"] == "X"]
    for (pid, tid) in {(e["pid"], e["tid"]) for e in complete}:
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in complete
                       if (e["pid"], e["tid"]) == (pid, tid))
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert b0 >= a1 or b1 <= a1            # disjoint, or nested


def test_an_interrupted_run_is_simulated_anew_not_appended_to(tmp_path):
    """Telemetry files are opened to append: a try that was interrupted must leave nothing
    the next try's records would join (a twin made again after ^C, say)."""
    from runtime.records import CollectiveDone
    spec = load(TABLE1, ["topology.routing=static", "jobs.0.passes=1"])
    clean, again = str(tmp_path / "clean"), str(tmp_path / "again")
    run_sim(spec, "baseline", 1, clean)
    os.makedirs(again)
    with open(os.path.join(clean, "h0.jsonl")) as f:
        partial = f.readline()                      # a record of the interrupted try
    with open(os.path.join(again, "h0.jsonl"), "w") as f:
        f.write(partial)
    run_sim(spec, "baseline", 1, again)
    for kind in (CollectiveDone,):
        assert len(RunFolder(again).host_records(kind)) == len(RunFolder(clean).host_records(kind))
    with open(os.path.join(again, "h0.jsonl")) as a, open(os.path.join(clean, "h0.jsonl")) as c:
        assert len(a.readlines()) == len(c.readlines())
    assert [n for n in os.listdir(tmp_path) if n.startswith(".sim-")] == []
