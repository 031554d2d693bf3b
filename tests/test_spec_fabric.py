"""Unit tests for a spec's fabric side: [[messages]], switches, agent settings, port rates."""

import copy

import pytest

from emulator import plan as planning
from emulator.spec.schema import MessageSpec
from emulator.spec import load, variants
from runtime.codec import to_dict
from tests.spec_ext_util import AT_2000, FIG2, FIG4, FIG5, FIG9, MSG_BASE, TABLE1, with_, write
from tests.toml_util import assert_spec_error
from topologies import wiring
from topologies.wiring import neighbors, switch_names


# Table 1 scale: 10 Gb/s links at dilation 2000.
TABLE1_LINK_RATE_BPS = 10e9 / 2000


def msg_spec(tmp_path, messages=None, **top) -> str:
    raw = copy.deepcopy(MSG_BASE)
    if messages is not None:
        raw["messages"] = copy.deepcopy(messages)
    raw.update(copy.deepcopy(top))
    return write(tmp_path, raw)


# --- switch names and neighbours -------------------------------------------------------

def test_switch_names_of_table1_are_four_leaves_then_four_spines():
    assert switch_names(load(TABLE1, AT_2000).topology) == [
        "leaf0", "leaf1", "leaf2", "leaf3", "spine0", "spine1", "spine2", "spine3"]


def test_switch_names_of_a_dumbbell_is_leaf0_only():
    assert switch_names(load(FIG9).topology) == ["leaf0"]


def test_neighbors_of_a_leaf_are_its_hosts_then_every_spine():
    topo = load(TABLE1, AT_2000).topology
    assert neighbors(topo, "leaf1") == ["h4", "h5", "h6", "h7",
                                        "spine0", "spine1", "spine2", "spine3"]


def test_neighbors_of_a_spine_are_every_leaf():
    assert neighbors(load(TABLE1, AT_2000).topology, "spine2") == ["leaf0", "leaf1", "leaf2", "leaf3"]


def test_neighbors_of_the_dumbbell_switch_are_its_hosts():
    assert neighbors(load(FIG9).topology, "leaf0") == ["h0", "h1", "h2"]


# --- messages --------------------------------------------------------------------------

def test_fig9_like_messages_spec_loads(tmp_path):
    spec = load(msg_spec(tmp_path))
    assert spec.jobs == ()
    assert spec.messages == (MessageSpec("h0", "h2", 1048576, 0.3, 1, 0, 0),
                             MessageSpec("h1", "h2", 1048576, 0.0, 1, 1, 0))
    assert isinstance(spec.messages[1].start_ms, float)


def test_message_defaults():
    m = MessageSpec()
    assert (m.src, m.dst, m.bytes, m.start_ms, m.job, m.step, m.channel) == \
        ("", "", 0, 0.0, 1, 0, 0)


def test_message_with_only_src_dst_bytes_takes_the_defaults(tmp_path):
    spec = load(msg_spec(tmp_path, [{"src": "h0", "dst": "h1", "bytes": 4096}]))
    assert spec.messages == (MessageSpec("h0", "h1", 4096, 0.0, 1, 0, 0),)


def test_messages_differing_only_in_step_are_not_duplicates(tmp_path):
    m = {"src": "h0", "dst": "h2", "bytes": 4096, "job": 3}
    spec = load(msg_spec(tmp_path, [with_(m, step=0), with_(m, step=1)]))
    assert [x.step for x in spec.messages] == [0, 1]


@pytest.mark.parametrize("bytes_", [1, 1 << 30])
def test_message_byte_bounds_are_valid(tmp_path, bytes_):
    spec = load(msg_spec(tmp_path, [{"src": "h0", "dst": "h1", "bytes": bytes_}]))
    assert spec.messages[0].bytes == bytes_


M0 = MSG_BASE["messages"][0]

BAD_MESSAGES = [
    ("unknown-src", [with_(M0, src="h3")],
     ["messages[0].src = 'h3'", "a host of this topology: h0..h2"]),
    ("unknown-dst", [with_(M0, dst="x1")],
     ["messages[0].dst = 'x1'", "a host of this topology: h0..h2"]),
    ("empty-src", [with_(M0, src="")],
     ["messages[0].src = ''", "a host of this topology: h0..h2"]),
    ("src-is-dst", [with_(M0, dst="h0")],
     ["messages[0].dst = 'h0'", "must differ from src"]),
    ("bytes-0", [with_(M0, bytes=0)],
     ["messages[0].bytes = 0", "must be in 1..2**30"]),
    ("bytes-above-1GiB", [with_(M0, bytes=(1 << 30) + 1)],
     [f"messages[0].bytes = {(1 << 30) + 1}", "must be in 1..2**30"]),
    ("bytes-float", [with_(M0, bytes=1.5)],
     ["messages[0].bytes = 1.5", "must be an integer"]),
    ("start-negative", [with_(M0, start_ms=-1.0)],
     ["messages[0].start_ms = -1.0", "must be >= 0"]),
    ("job-0", [with_(M0, job=0)],
     ["messages[0].job = 0", "must be in 1..32766"]),
    ("job-32768", [with_(M0, job=32768)],
     ["messages[0].job = 32768", "must be in 1..32766"]),
    ("step-70000", [with_(M0, step=70000)],
     ["messages[0].step = 70000", "must be in 0..65535"]),
    ("step-negative", [with_(M0, step=-1)],
     ["messages[0].step = -1", "must be in 0..65535"]),
    ("channel-256", [with_(M0, channel=256)],
     ["messages[0].channel = 256", "must be in 0..255"]),
    ("unknown-key", [with_(M0, size=4)],
     ["unknown key messages[0].size", "allowed: src, dst, bytes"]),
    ("second-message-bad", [M0, with_(M0, step=2, job=0)],
     ["messages[1].job = 0", "must be in 1..32766"]),
    ("duplicate", [M0, with_(M0, start_ms=5.0, bytes=4096)],
     ["messages = ('h0', 'h2', 1, 0, 0)", "two messages with the same (src, dst, job, channel, step)"]),
]


@pytest.mark.parametrize("messages,expected", [(m, e) for _, m, e in BAD_MESSAGES],
                         ids=[c[0] for c in BAD_MESSAGES])
def test_bad_message_is_rejected_naming_file_key_value_and_allowed(tmp_path, messages,
                                                                   expected):
    assert_spec_error(msg_spec(tmp_path, messages), *expected)


def test_jobs_and_messages_together_are_rejected(tmp_path):
    path = msg_spec(tmp_path, jobs=[{"id": 1, "hosts": "all", "algorithm": "ring_allreduce",
                                     "rings": "single", "chunk_bytes": 4096}])
    assert_spec_error(path, "jobs = [{", "give [[jobs]] (collectives) or [[messages]] "
                      "(single flows), exactly one of the two")


def test_neither_jobs_nor_messages_is_rejected(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    del raw["messages"]
    assert_spec_error(write(tmp_path, raw), "jobs = []", "exactly one of the two")


def test_messages_given_as_a_table_are_rejected(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    raw["messages"] = dict(M0)                      # written as [messages]
    assert_spec_error(write(tmp_path, raw), "messages = {",
                      "must be a list of [[messages]] tables")


# --- the run plan: agent settings and port rates -----------------------------------------

def agent_config(spec, scheme, seed):
    """leaf0's agent in the compiled plan, in the terms these tests check."""
    a = planning.compile(spec, scheme, seed).agents["leaf0"]
    return {"seed": a.seed, "pq": a.scheme == "pq", "red": to_dict(a.red),
            "symphony": {**to_dict(a.symphony), "enabled": a.scheme == "symphony"}}


def port_rates(spec):
    return planning.compile(spec, "baseline", 1).fabric.port_rates


def link_rate_bps(spec):
    return planning.compile(spec, "baseline", 1).link_rate_bps


def test_agent_config_symphony_scheme_enables_symphony_with_the_spec_values():
    cfg = agent_config(load(TABLE1, ["profile=zhu"] + AT_2000), "symphony", 7)  # RED 50/100 KB
    assert cfg["seed"] == 7
    assert cfg["pq"] is False
    assert cfg["red"] == {"enabled": True, "kmin_bytes": 50000, "kmax_bytes": 100000,
                          "pmax": 0.2, "rate_ref_bps": 0.0, "per_class": True}
    sy = cfg["symphony"]
    assert sy["enabled"] is True
    assert (sy["k"], sy["tau"], sy["n_warmup"], sy["n_sample"]) == (0.01, 0.25, 2, 8)


def test_agent_config_t_win_is_scaled_by_the_dilation():
    # T_win = 100 us real at D = 2000 -> 0.2 s emulated
    assert agent_config(load(TABLE1, AT_2000), "symphony", 1)["symphony"]["t_win_s"] == \
        pytest.approx(0.2)
    spec = load(TABLE1, AT_2000 + ["scale.dilation=1000", "symphony.t_win_us=50.0"])
    assert agent_config(spec, "baseline", 1)["symphony"]["t_win_s"] == \
        pytest.approx(0.05)


def test_agent_config_baseline_has_symphony_off_and_no_pq():
    cfg = agent_config(load(TABLE1, AT_2000), "baseline", 1)
    assert cfg["pq"] is False and cfg["symphony"]["enabled"] is False


def test_agent_config_pq_prioritizes_and_keeps_symphony_off():
    cfg = agent_config(load(FIG5), "pq", 2)
    assert cfg["pq"] is True and cfg["symphony"]["enabled"] is False
    assert cfg["red"]["enabled"] is True


def test_agent_config_symphony_late_start_keeps_symphony_off_at_first():
    spec = load(FIG4, ['perturbations=[{kind="symphony_late_start", at_ms=10.0}]'])
    assert agent_config(spec, "symphony", 1)["symphony"]["enabled"] is False
    assert agent_config(spec, "baseline", 1)["symphony"]["enabled"] is False


def test_agent_config_other_perturbations_do_not_delay_symphony():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="loss", switch="leaf0", fraction=0.01}]'])
    assert agent_config(spec, "symphony", 1)["symphony"]["enabled"] is True


def test_agent_config_red_follows_the_switch_section():
    spec = load(TABLE1, ["profile=zhu"] + AT_2000 + ["switch.red=false", "switch.kmin_bytes=1000",
                         "switch.kmax_bytes=2000", "switch.pmax=0.5"])
    assert agent_config(spec, "baseline", 1)["red"] == {
        "enabled": False, "kmin_bytes": 1000, "kmax_bytes": 2000, "pmax": 0.5,
        "rate_ref_bps": 0.0, "per_class": True}
    scaled = load(TABLE1, ["profile=zhu"] + AT_2000 + ["switch.red_scale_with_rate=true"])
    assert agent_config(scaled, "baseline", 1)["red"]["rate_ref_bps"] == 10e9 / 2000


def test_red_per_class_reaches_the_agents_and_a_bad_value_is_one_line():
    spec = load(TABLE1, AT_2000 + ["switch.red_per_class=false"])
    assert agent_config(spec, "pq", 1)["red"]["per_class"] is False
    assert agent_config(load(TABLE1, AT_2000), "pq", 1)["red"]["per_class"] is True
    with pytest.raises(Exception, match=r"switch\.red_per_class.*true or false"):
        load(TABLE1, AT_2000 + ["switch.red_per_class=2"])


def test_link_rate_of_table1_is_10g_over_2000():
    assert link_rate_bps(load(TABLE1, AT_2000)) == pytest.approx(TABLE1_LINK_RATE_BPS)


def test_port_rates_without_imbalance_is_empty():
    assert port_rates(load(TABLE1, AT_2000)) == {}
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="link_down", switch="leaf0", '
                         'toward="spine0", at_ms=1.0}]'])
    assert port_rates(spec) == {}


def test_port_rates_imbalance_leaf0_toward_spine0_slows_leaf0_eth5():
    spec = load(TABLE1, AT_2000 + ['perturbations=[{kind="imbalance", switch="leaf0", '
                         'toward="spine0", ratio=1.13}]'])
    rates = port_rates(spec)
    assert list(rates) == ["leaf0"] and list(rates["leaf0"]) == ["leaf0-eth5"]
    assert rates["leaf0"]["leaf0-eth5"] == pytest.approx(TABLE1_LINK_RATE_BPS / 1.13)


def test_port_rates_fig2_imbalance_variant():
    sets = dict(variants(load(FIG2)))["imbalance-1.13x"]
    assert port_rates(load(FIG2, sets)) == {
        "leaf0": {"leaf0-eth5": pytest.approx(TABLE1_LINK_RATE_BPS / 1.13)}}


def test_port_rates_spine_and_host_ports_and_two_on_one_switch():
    spec = load(TABLE1, AT_2000 + ['perturbations=['
                         '{kind="imbalance", switch="spine3", toward="leaf2", ratio=2.0}, '
                         '{kind="imbalance", switch="leaf1", toward="spine2", ratio=1.5}, '
                         '{kind="imbalance", switch="leaf1", toward="h6", ratio=1.25}]'])
    assert port_rates(spec) == {
        "spine3": {"spine3-eth3": pytest.approx(TABLE1_LINK_RATE_BPS / 2.0)},
        "leaf1": {"leaf1-eth7": pytest.approx(TABLE1_LINK_RATE_BPS / 1.5),
                  "leaf1-eth3": pytest.approx(TABLE1_LINK_RATE_BPS / 1.25)}}


def test_port_rates_in_a_dumbbell_use_the_host_count_as_hosts_per_leaf():
    spec = load(FIG9, ['perturbations=[{kind="imbalance", switch="leaf0", toward="h2", '
                       'ratio=4.0}]'])
    assert port_rates(spec) == {
        "leaf0": {"leaf0-eth3": pytest.approx(TABLE1_LINK_RATE_BPS / 4.0)}}


# --- fabric: which interface faces which neighbour --------------------------------------

@pytest.mark.parametrize("switch,neighbor,hpl,intf", [
    ("leaf0", "h0", 4, "leaf0-eth1"),
    ("leaf0", "h3", 4, "leaf0-eth4"),
    ("leaf1", "h4", 4, "leaf1-eth1"),
    ("leaf3", "h14", 4, "leaf3-eth3"),
    ("leaf0", "spine0", 4, "leaf0-eth5"),
    ("leaf2", "spine3", 4, "leaf2-eth8"),
    ("leaf1", "spine0", 2, "leaf1-eth3"),
    ("spine0", "leaf0", 4, "spine0-eth1"),
    ("spine3", "leaf2", 4, "spine3-eth3"),
    ("spine1", "leaf3", 2, "spine1-eth4"),
])
def test_port_toward_names_the_interface_on_the_link(switch, neighbor, hpl, intf):
    assert wiring.port_toward(switch, neighbor, hpl) == intf


@pytest.mark.parametrize("switch,neighbor", [
    ("leaf0", "h4"),         # a host of leaf1
    ("leaf1", "h3"),         # a host of leaf0
    ("leaf0", "leaf1"),
    ("spine0", "h0"),
    ("spine0", "spine1"),
    ("h0", "leaf0"),         # hosts are not switches
])
def test_port_toward_a_non_neighbour_is_a_value_error(switch, neighbor):
    with pytest.raises(ValueError, match=f"^{switch} has no link to {neighbor}$"):
        wiring.port_toward(switch, neighbor, 4)


def test_port_helpers_number_hosts_first_then_spines():
    assert wiring.leaf_port_to_host(2, 1) == "leaf2-eth2"
    assert wiring.leaf_port_to_spine(1, 0, 4) == "leaf1-eth5"
    assert wiring.leaf_port_to_spine(1, 3, 4) == "leaf1-eth8"
    assert wiring.spine_port_to_leaf(0, 3) == "spine0-eth4"


def test_every_spec_neighbour_has_a_distinct_port():
    topo = load(TABLE1, AT_2000).topology
    for sw in switch_names(topo):
        ports = [wiring.port_toward(sw, n, topo.per_leaf) for n in neighbors(topo, sw)]
        assert len(set(ports)) == len(ports) == (8 if sw.startswith("leaf") else 4), sw


@pytest.mark.parametrize("leaves,spines,hpl", [(4, 4, 4), (2, 3, 2), (1, 0, 3)])
def test_port_toward_matches_the_port_numbers_of_the_mininet_topology(leaves, spines, hpl):
    # Only the Topo graph is built (no network, no root): Mininet numbers a switch's
    # ports from 1 in link order, and interfaces are <node>-eth<port>.
    from topologies.leafspine import LeafSpineTopo
    topo = LeafSpineTopo(leaves, spines, hpl, with_agent=False)
    for t in range(leaves):
        leaf = wiring.leaf_name(t)
        for i in range(hpl):
            host = wiring.host_name(t, i, hpl)
            _, leaf_port = topo.port(host, leaf)
            assert wiring.port_toward(leaf, host, hpl) == f"{leaf}-eth{leaf_port}"
        for s in range(spines):
            spine = wiring.spine_name(s)
            leaf_port, spine_port = topo.port(leaf, spine)
            assert wiring.port_toward(leaf, spine, hpl) == f"{leaf}-eth{leaf_port}"
            assert wiring.port_toward(spine, leaf, hpl) == f"{spine}-eth{spine_port}"
