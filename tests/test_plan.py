"""emulator.plan.compile: a spec becomes one typed run plan, every real-scale value
converted exactly once; the configs cross the process boundary through the one codec."""

import json
import os

import pytest

from emulator.perturbations.symphony_late_start import SymphonyOn
from emulator.plan import compile
from switch_agent.config import default_agent
from emulator.spec import load
from hosts.cc import DcqcnMlx, DcqcnPaper, LineRate
from hosts.config import HostConfig
from runtime.codec import from_dict, to_dict
from switch_agent.config import AgentConfig
from topologies.wiring import REPO_ROOT

TABLE1 = os.path.join(REPO_ROOT, "runs", "table1.toml")   # 10 Gb/s, 4x4x4
AT_2000 = ["scale.dilation=2000"]   # the arithmetic below is at D = 2000 (the file says 1000)
FIG9 = os.path.join(REPO_ROOT, "runs", "fig9.toml")


def test_t_win_reaches_every_agent_dilated_once():
    plan = compile(load(TABLE1, AT_2000 + ["symphony.t_win_us=37.5", "scale.dilation=4000"]),
                   "symphony", 3)
    assert set(plan.agents) == {f"leaf{i}" for i in range(4)} | {f"spine{i}" for i in range(4)}
    for name, a in plan.agents.items():
        assert a.switch == name and a.seed == 3 and a.scheme == "symphony"
        assert a.symphony.t_win_s == pytest.approx(37.5e-6 * 4000)      # 0.15 s, not 0.6


def test_link_rate_and_transport_timers_reach_every_host_converted_once():
    plan = compile(load(TABLE1, AT_2000 + ["transport.rto_us=500", "transport.nak_timeout_us=50"]),
                   "baseline", 1)
    assert plan.link_rate_bps == pytest.approx(10e9 / 2000)
    for h in plan.hosts.values():
        assert h.line_rate_bps == pytest.approx(5e6)
        assert h.cc.params.line_rate_bps == pytest.approx(5e6)          # the NIC checks this
        assert h.transport.rto_s == pytest.approx(500e-6 * 2000)
        assert h.transport.nak_timeout_s == pytest.approx(50e-6 * 2000)
        assert h.cc.params.cnp_interval_s == pytest.approx(50e-6 * 2000)


def test_each_host_runs_its_ranks_with_the_layouts_rings_and_its_address():
    plan = compile(load(TABLE1, AT_2000), "baseline", 1)
    (lay,) = plan.layouts
    assert len(plan.hosts) == 16
    h5 = plan.hosts["h5"]
    assert h5.ip == "10.1.1.2" and h5.module == "hosts.rank"
    (r,) = h5.ranks
    assert r.group == lay.ring_of(r.rank) == (1, 5, 9, 13) and r.channel == 1
    assert r.rank_ips[13] == "10.3.1.2"
    assert (r.nbytes, r.passes, r.steps_per_collective) == (lay.nbytes, 4, 6)
    assert h5.total_steps == 4 * 6


@pytest.mark.parametrize("overrides,order", [([], "on_arrival"),
                                             (["collective.order=in_order"], "in_order")])
def test_the_dependency_rule_reaches_every_rank_the_layouts_and_the_model(overrides, order):
    """The paper's rule by default; the spec's collective.order picks the other."""
    from emulator.model.from_plan import model_inputs
    plan = compile(load(TABLE1, AT_2000 + overrides), "baseline", 1)
    assert {lay.order for lay in plan.layouts} == {order}
    assert {r.order for h in plan.hosts.values() for r in h.ranks} == {order}
    assert {j.order for j in model_inputs(plan).jobs} == {order}


def test_stragglers_and_start_times_are_dilated_into_the_host_configs():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="straggler", host="h2", delay_us=25.0}]',
                         "jobs.0.start_ms=0.5", "jobs.0.compute_gap_us=10"])
    plan = compile(spec, "baseline", 1)
    r2, r3 = plan.hosts["h2"].ranks[0], plan.hosts["h3"].ranks[0]
    assert r2.step_delay_s == pytest.approx(25e-6 * 2000) and r3.step_delay_s == 0.0
    assert r3.start_s == pytest.approx(0.5e-3 * 2000)
    assert r3.compute_gap_s == pytest.approx(10e-6 * 2000)


@pytest.mark.parametrize("variant, cc, cls", [("paper", "dcqcn", DcqcnPaper),
                                              ("mlx", "dcqcn", DcqcnMlx),
                                              ("paper", "none", LineRate)])
def test_congestion_control_is_picked_by_the_spec(variant, cc, cls):
    spec = load(TABLE1, AT_2000 + [f"dcqcn.variant={variant}", f"transport.congestion_control={cc}"])
    h = compile(spec, "baseline", 1).hosts["h0"]
    assert type(h.cc.controller(0.0)) is cls


def test_schemes_are_objects_with_their_hook_and_port_qdisc():
    spec = load(TABLE1, AT_2000)
    for scheme, hook, qdisc in [("baseline", "baseline", "fifo"),
                                ("symphony", "symphony", "fifo"), ("pq", "pq", "pq")]:
        plan = compile(spec, scheme, 1)
        assert plan.scheme.name == scheme and plan.fabric.port_qdisc == qdisc
        assert {a.scheme for a in plan.agents.values()} == {hook}


def test_a_late_start_keeps_symphony_off_and_schedules_it_on():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="symphony_late_start", at_ms=3.0}]'])
    plan = compile(spec, "symphony", 1)
    assert {a.scheme for a in plan.agents.values()} == {"baseline"}
    (e,) = plan.perturbations
    assert isinstance(e.what, SymphonyOn) and e.t_s == pytest.approx(3e-3 * 2000)
    assert compile(spec, "baseline", 1).perturbations == ()


def test_perturbations_become_timed_objects_in_emulated_seconds():
    spec = load(TABLE1, AT_2000 + ['perturbations=['
                         '{kind="link_down", switch="leaf0", toward="spine1", at_ms=1.0, '
                         'up_ms=2.0}, {kind="loss", switch="spine0", fraction=0.01}, '
                         '{kind="background", src="h0", dst="h5", rate_gbps=2.0, start_ms=0.5, '
                         'duration_ms=1.0}, '
                         '{kind="imbalance", switch="leaf0", toward="spine0", ratio=1.25}]'])
    plan = compile(spec, "baseline", 1)
    kinds = [(type(e.what).__name__, e.t_s, e.undo) for e in plan.perturbations]
    assert kinds == [("Loss", 0.0, False), ("Background", pytest.approx(1.0), False),
                     ("LinkDown", pytest.approx(2.0), False),
                     ("LinkDown", pytest.approx(4.0), True)]
    bg = plan.perturbations[1].what
    assert bg.rate_bps == pytest.approx(2e9 / 2000)
    assert bg.nbytes == int(2e9 / 2000 / 8 * 2.0)               # 1 ms real = 2 s emulated
    assert plan.perturbations[2].what.intf == "leaf0-eth6"
    # an imbalance from the start is a port rate of the fabric, not an event
    assert plan.fabric.port_rates == {"leaf0": {"leaf0-eth5": pytest.approx(5e6 / 1.25)}}


def test_message_specs_become_hosts_with_sends_and_receives():
    plan = compile(load(FIG9), "baseline", 1)
    assert sorted(plan.hosts) == ["h0", "h1", "h2"]
    assert all(h.module == "hosts.host" for h in plan.hosts.values())
    assert [m.peer for m in plan.hosts["h2"].receives] == ["10.0.0.2", "10.0.1.2"]


@pytest.mark.parametrize("scheme", ["baseline", "symphony", "pq"])
def test_every_config_round_trips_through_json_unchanged(scheme):
    plan = compile(load(TABLE1, AT_2000), scheme, 2)
    for h in plan.hosts.values():
        assert HostConfig.from_dict(json.loads(json.dumps(h.to_dict()))) == h
    for a in plan.agents.values():
        assert from_dict(AgentConfig, json.loads(json.dumps(to_dict(a)))) == a


def test_a_config_with_an_unknown_key_is_refused_naming_it():
    d = compile(load(TABLE1, AT_2000), "baseline", 1).hosts["h0"].to_dict()
    d["ranks"][0]["rigns"] = [0, 4]
    with pytest.raises(ValueError, match="unknown keys \\['rigns'\\]"):
        HostConfig.from_dict(d)


def test_the_agent_of_plain_mininet_use_has_the_spec_defaults():
    a = default_agent("leaf3")
    assert (a.switch, a.scheme, a.red.kmin_bytes, a.red.kmax_bytes) == \
        ("leaf3", "baseline", 50_000, 100_000)
    assert (a.symphony.k, a.symphony.tau, a.symphony.t_win_s) == \
        (0.01, 0.25, pytest.approx(100e-6 * 1000))


def test_compile_is_pure_and_repeatable():
    spec = load(TABLE1, AT_2000)
    assert compile(spec, "symphony", 1) == compile(spec, "symphony", 1)


def test_each_seed_salts_the_source_ports_so_it_draws_new_ecmp_paths():
    from runtime.wire import flow_sport
    spec = load(TABLE1, AT_2000)
    t1, t2 = (compile(spec, "baseline", s).hosts["h0"].transport for s in (1, 2))
    assert (t1.sport_seed, t2.sport_seed) == (1, 2)
    ports = [[flow_sport(1, 0, step, "10.0.0.2", True, t.sport_seed) for step in range(24)]
             for t in (t1, t2)]
    assert sum(a != b for a, b in zip(*ports)) >= 22
    assert flow_sport(1, 0, 3, "10.0.0.2") == flow_sport(1, 0, 3, "10.0.0.2", True, 0)


def test_hpcc_rules_and_rmin_reach_every_host_rmin_dilated():
    """[dcqcn] min_rate_gbps (real scale), clamp_target_rate and first_cut_at_once reach
    every host's DCQCN, Rmin divided by D like every rate; the defaults change nothing."""
    from hosts.cc import CcConfig
    from runtime.scale import Scale
    plain = compile(load(TABLE1, ["profile=zhu"] + AT_2000), "baseline", 1)   # the defaults
    assert plain.hosts["h0"].cc == CcConfig.default("dcqcn_paper", 10e9, Scale(2000))
    plan = compile(load(TABLE1, ["profile=zhu"] + AT_2000 + ["dcqcn.variant=mlx", "dcqcn.min_rate_gbps=1.0",
                                           "dcqcn.clamp_target_rate=false",
                                           "dcqcn.first_cut_at_once=false",
                                           "transport.congestion_flag=ack"]), "baseline", 1)
    for h in plan.hosts.values():
        p = h.cc.params
        assert h.cc.name == "dcqcn_mlx" and p.min_rate_bps == pytest.approx(1e9 / 2000)
        assert not p.clamp_target_rate and not p.first_cut_at_once
        assert h.transport.congestion_flag == "ack"
