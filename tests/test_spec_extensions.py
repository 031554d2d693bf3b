"""Unit tests for the spec extensions: [[perturbations]], [[messages]], [[variants]], the
shipped run specs (runs/*.toml), sweep points, and the pure parts of the runner
(agent_config, port_rates) and of the fabric plan (port_toward and friends).

Pure Python: no root, no network, no emulation. Specs are TOML text written to tmp_path.
Every bad spec starts from a valid minimal spec and breaks one thing; the SpecError must
name the file, the key, the bad value and what is allowed.
"""

import copy
import glob
import os

import pytest

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator import plan as planning
from emulator.launch import sweep
from emulator.schema import PERTURBATIONS, PERTURBATION_KEYS, MessageSpec, PerturbationSpec
from emulator.spec import load, variants
from emulator.speccheck import SpecError
from runtime.codec import to_dict
from tests.toml_util import assert_spec_error, to_toml
from topologies import wiring
from topologies.wiring import neighbors, switch_names

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(MAIN, "runs")
TABLE1 = os.path.join(RUNS, "table1.toml")
AT_2000 = ["scale.dilation=2000"]   # the arithmetic below is at D = 2000 (the file says 1000)
FIG2 = os.path.join(RUNS, "fig2.toml")
FIG4 = os.path.join(RUNS, "fig4.toml")
FIG5 = os.path.join(RUNS, "fig5.toml")
FIG8A = os.path.join(RUNS, "fig8a.toml")
FIG8B = os.path.join(RUNS, "fig8b.toml")
FIG8C = os.path.join(RUNS, "fig8c.toml")
FIG9 = os.path.join(RUNS, "fig9.toml")
RUN_NAMES = ["fig2", "fig4", "fig5", "fig6", "fig7ab", "fig7c", "fig8a", "fig8b", "fig8c",
             "fig9", "table1", "table1-paper", "table1-two-leaf", "table2", "two-servers"]

# Table 1 scale: 10 Gb/s links at dilation 2000.
TABLE1_LINK_RATE_BPS = 10e9 / 2000

# 2 leaves x 2 spines x 2 hosts: leaf0 has h0, h1; leaf1 has h2, h3. One job, two rails.
BASE = {
    "name": "pert",
    "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "link_rate_gbps": 10.0},
    "jobs": [{"id": 1, "hosts": "all", "algorithm": "ring_allreduce", "rings": "rail",
              "chunk_bytes": 4096}],
}

# Fig 9-like: a dumbbell of 3 hosts, two messages into h2.
MSG_BASE = {
    "name": "msgs",
    "topology": {"kind": "dumbbell", "hosts": 3},
    "messages": [{"src": "h0", "dst": "h2", "bytes": 1048576, "start_ms": 0.3, "job": 1,
                  "step": 0},
                 {"src": "h1", "dst": "h2", "bytes": 1048576, "start_ms": 0.0, "job": 1,
                  "step": 1}],
}

# One valid perturbation of every kind on BASE's topology.
GOOD = {
    "imbalance": {"kind": "imbalance", "switch": "leaf0", "toward": "spine1", "ratio": 1.13},
    "background": {"kind": "background", "src": "h0", "dst": "h3", "rate_gbps": 2.0,
                   "start_ms": 1.0, "duration_ms": 5.0},
    "link_down": {"kind": "link_down", "switch": "spine0", "toward": "leaf1", "at_ms": 2.0,
                  "up_ms": 4.0},
    "straggler": {"kind": "straggler", "host": "h3", "delay_us": 50.0},
    "loss": {"kind": "loss", "switch": "leaf1", "fraction": 0.01},
    "symphony_late_start": {"kind": "symphony_late_start", "at_ms": 3.0},
}

REQUIRED = {"imbalance": ("switch", "toward", "ratio"),
            "background": ("src", "dst", "rate_gbps", "duration_ms"),
            "link_down": ("switch", "toward", "at_ms"),
            "straggler": ("host", "delay_us"),
            "loss": ("switch", "fraction"),
            "symphony_late_start": ("at_ms",)}


# --- writing specs ---------------------------------------------------------------------

def write(tmp_path, raw: dict, name: str = "spec.toml") -> str:
    p = tmp_path / name
    p.write_text(to_toml(raw))
    return str(p)


def pert_spec(tmp_path, *perts, **top) -> str:
    raw = copy.deepcopy(BASE)
    raw.update(copy.deepcopy(top))
    if perts:
        raw["perturbations"] = [copy.deepcopy(p) for p in perts]
    return write(tmp_path, raw)


def msg_spec(tmp_path, messages=None, **top) -> str:
    raw = copy.deepcopy(MSG_BASE)
    if messages is not None:
        raw["messages"] = copy.deepcopy(messages)
    raw.update(copy.deepcopy(top))
    return write(tmp_path, raw)


def with_(d: dict, **changes) -> dict:
    return dict(d, **changes)


def without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


def _raw_variants(path):
    with open(path, "rb") as f:
        return tomllib.load(f).get("variants", [])


ALL_VARIANTS = [(os.path.basename(p)[:-5], v["name"], list(v.get("set", [])))
                for p in sorted(glob.glob(os.path.join(RUNS, "*.toml")))
                for v in _raw_variants(p)]


# --- the shipped run specs -------------------------------------------------------------

def test_runs_folder_holds_exactly_the_paper_specs():
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(RUNS, "*.toml")))
    assert names == RUN_NAMES


@pytest.mark.parametrize("name", RUN_NAMES)
def test_every_run_spec_loads_and_is_named_after_its_file(name):
    spec = load(os.path.join(RUNS, f"{name}.toml"))
    assert spec.name == name
    assert spec.scale.dilation in (1000.0, 2000.0)     # table1, fig4, fig5: 1000 (issue 15)
    assert spec.topology.link_rate_gbps == 10.0
    assert (len(spec.jobs) > 0) != (len(spec.messages) > 0)


def test_every_run_spec_variant_list_is_the_expected_one():
    got = {}
    for f, vname, _ in ALL_VARIANTS:
        got.setdefault(f, []).append(vname)
    assert got == {
        "fig2": ["baseline-ecmp", "imbalance-1.13x", "transient-congestion"],
        "fig4": ["from-start", "late-start"],
        "fig6": ["speedup-1x", "speedup-4x", "speedup-16x", "speedup-64x"],
        "fig8a": ["imbalance-1.1x", "imbalance-1.3x", "imbalance-1.5x", "imbalance-1.7x"],
        "fig8b": ["k-0.0001", "k-0.001", "k-0.01", "k-0.1", "k-1.0"],
        "fig8c": ["chunk-64k", "chunk-256k", "chunk-1024k"],
        "fig9": ["delay-0ms", "delay-250ms", "delay-500ms", "delay-1000ms"],
        "table2": ["vgg16", "resnet50", "transformer"],
        "table1-paper": ["fig4", "fig5"],
    }


@pytest.mark.parametrize("name", RUN_NAMES)
def test_variants_function_returns_the_name_and_set_of_every_variant(name):
    path = os.path.join(RUNS, f"{name}.toml")
    expected = [(v["name"], list(v.get("set", []))) for v in _raw_variants(path)]
    assert variants(load(path)) == expected


@pytest.mark.parametrize("fname,vname,sets", ALL_VARIANTS,
                         ids=[f"{f}:{v}" for f, v, _ in ALL_VARIANTS])
def test_every_variant_of_every_run_spec_loads_with_its_overrides(fname, vname, sets):
    spec = load(os.path.join(RUNS, f"{fname}.toml"), sets)
    assert spec.name == fname
    assert (len(spec.jobs) > 0) != (len(spec.messages) > 0)


def test_table1_and_fig5_have_no_variants():
    assert variants(load(TABLE1, AT_2000)) == []
    assert variants(load(FIG5)) == []


def test_fig9_is_two_messages_through_one_dumbbell_port_and_no_jobs():
    spec = load(FIG9)
    assert spec.jobs == ()
    assert spec.topology.kind == "dumbbell" and spec.topology.hosts == 3
    assert spec.messages == (
        MessageSpec(src="h0", dst="h2", bytes=1048576, start_ms=0.3, job=1, step=0, channel=0),
        MessageSpec(src="h1", dst="h2", bytes=1048576, start_ms=0.0, job=1, step=1, channel=0),
    )


def test_fig9_variants_delay_only_flow_a():
    for vname, sets in variants(load(FIG9)):
        spec = load(FIG9, sets)
        assert spec.messages[1].start_ms == 0.0, vname
    starts = [load(FIG9, sets).messages[0].start_ms for _, sets in variants(load(FIG9))]
    assert starts == [0.0, 0.15, 0.3, 0.6]


def test_fig5_compares_baseline_pq_and_symphony_with_one_pass():
    spec = load(FIG5)
    assert spec.run.schemes == ("baseline", "pq", "symphony")
    assert [j.passes for j in spec.jobs] == [1]
    assert spec.perturbations == ()


def test_fig2_variants_are_ecmp_baseline_imbalance_and_transient_background():
    by_name = {n: load(FIG2, s) for n, s in variants(load(FIG2))}
    base = by_name["baseline-ecmp"]
    assert base.topology.routing == "ecmp" and base.perturbations == ()
    imb = by_name["imbalance-1.13x"]
    assert imb.topology.routing == "static"
    assert imb.perturbations == (PerturbationSpec(kind="imbalance", switch="leaf0",
                                                  toward="spine0", ratio=1.13),)
    bg = by_name["transient-congestion"]
    assert bg.topology.routing == "static"
    assert [(p.kind, p.src, p.dst, p.rate_gbps, p.start_ms, p.duration_ms)
            for p in bg.perturbations] == [("background", "h1", "h5", 2.0, 1.0, 5.0),
                                           ("background", "h6", "h10", 2.0, 8.0, 5.0)]


def test_fig2_base_spec_is_not_changed_by_its_variants():
    spec = load(FIG2)
    assert spec.topology.routing == "ecmp"
    assert spec.perturbations == ()


def test_fig4_late_start_variant_runs_symphony_only_switched_on_at_10ms():
    sets = dict(variants(load(FIG4)))["late-start"]
    spec = load(FIG4, sets)
    assert spec.run.schemes == ("symphony",)
    assert spec.perturbations == (PerturbationSpec(kind="symphony_late_start", at_ms=10.0),)


def test_fig8a_variants_slow_leaf0_toward_spine0_by_1_1_to_1_7():
    ratios = []
    for _, sets in variants(load(FIG8A)):
        (p,) = load(FIG8A, sets).perturbations
        assert (p.kind, p.switch, p.toward) == ("imbalance", "leaf0", "spine0")
        ratios.append(p.ratio)
    assert ratios == [1.1, 1.3, 1.5, 1.7]


def test_fig8b_variants_set_k_from_1e_4_to_1():
    ks = [load(FIG8B, s).symphony.k for _, s in variants(load(FIG8B))]
    assert ks == [0.0001, 0.001, 0.01, 0.1, 1.0]


def test_fig8c_variants_set_chunk_sizes_64k_256k_1m():
    chunks = [load(FIG8C, s).jobs[0].chunk_bytes for _, s in variants(load(FIG8C))]
    assert chunks == [65536, 262144, 1048576]


def test_load_validates_every_variant_on_top_of_the_given_overrides():
    # The base spec with 1 Gb/s links is fine, but fig2's transient-congestion variant
    # then asks for 2 Gb/s background traffic, above the link rate.
    msg = assert_spec_error(FIG2, "variant 'transient-congestion'",
                            "perturbations[0].rate_gbps = 2.0", "link rate 1.0",
                            overrides=["topology.link_rate_gbps=1.0"])
    assert msg.startswith("variant 'transient-congestion': ")


# --- perturbation tables ---------------------------------------------------------------

def test_perturbation_keys_cover_every_kind_and_are_fields_of_the_spec():
    assert set(PERTURBATION_KEYS) == set(PERTURBATIONS)
    fields = set(PerturbationSpec.__dataclass_fields__) - {"kind"}
    for kind, keys in PERTURBATION_KEYS.items():
        assert keys <= fields, kind
        assert set(REQUIRED[kind]) <= keys, kind


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_each_perturbation_kind_with_its_keys_loads(tmp_path, kind):
    spec = load(pert_spec(tmp_path, GOOD[kind]))
    (p,) = spec.perturbations
    assert p.kind == kind
    for k, v in GOOD[kind].items():
        assert getattr(p, k) == v, k
    # keys not given keep the dataclass defaults
    defaults = PerturbationSpec()
    for k in set(PerturbationSpec.__dataclass_fields__) - set(GOOD[kind]):
        assert getattr(p, k) == getattr(defaults, k), k


def test_perturbation_defaults():
    p = PerturbationSpec()
    assert (p.kind, p.switch, p.toward, p.ratio) == ("", "", "", 1.0)
    assert (p.src, p.dst, p.rate_gbps, p.start_ms, p.duration_ms) == ("", "", 0.0, 0.0, 0.0)
    assert (p.at_ms, p.up_ms, p.host, p.delay_us, p.fraction) == (0.0, -1.0, "", 0.0, 0.0)


def test_background_start_defaults_to_0ms(tmp_path):
    (p,) = load(pert_spec(tmp_path, without(GOOD["background"], "start_ms"))).perturbations
    assert p.start_ms == 0.0 and p.duration_ms == 5.0


def test_link_down_without_up_ms_stays_down(tmp_path):
    (p,) = load(pert_spec(tmp_path, without(GOOD["link_down"], "up_ms"))).perturbations
    assert p.up_ms == -1.0 and p.at_ms == 2.0


def test_integer_perturbation_numbers_become_floats(tmp_path):
    (p,) = load(pert_spec(tmp_path, with_(GOOD["imbalance"], ratio=2))).perturbations
    assert p.ratio == 2.0 and isinstance(p.ratio, float)


@pytest.mark.parametrize("pert", [
    with_(GOOD["imbalance"], ratio=1.0),                       # ratio 1: no slowdown, allowed
    with_(GOOD["imbalance"], toward="h1"),                     # leaf toward its own host
    with_(GOOD["imbalance"], switch="spine1", toward="leaf0"),
    with_(GOOD["background"], rate_gbps=10.0),                 # exactly the link rate
    with_(GOOD["link_down"], at_ms=0.0),
    with_(GOOD["symphony_late_start"], at_ms=0.0),
    with_(GOOD["straggler"], host="h0"),
], ids=["ratio-1", "leaf-to-own-host", "spine-to-leaf", "bg-at-link-rate", "link-down-at-0",
        "late-start-at-0", "straggler-h0"])
def test_boundary_perturbations_are_valid(tmp_path, pert):
    (p,) = load(pert_spec(tmp_path, pert)).perturbations
    assert p.kind == pert["kind"]


def test_several_perturbations_keep_their_order(tmp_path):
    perts = [GOOD["loss"], GOOD["imbalance"], GOOD["background"]]
    spec = load(pert_spec(tmp_path, *perts))
    assert [p.kind for p in spec.perturbations] == ["loss", "imbalance", "background"]


def test_spec_without_perturbations_has_none(tmp_path):
    assert load(pert_spec(tmp_path)).perturbations == ()


def test_imbalance_in_a_dumbbell_toward_a_host_is_valid(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    raw["perturbations"] = [{"kind": "imbalance", "switch": "leaf0", "toward": "h2",
                             "ratio": 1.5}]
    (p,) = load(write(tmp_path, raw)).perturbations
    assert (p.switch, p.toward, p.ratio) == ("leaf0", "h2", 1.5)


ALL_KINDS = "allowed: imbalance, background, link_down, straggler, loss, symphony_late_start"

BAD_PERTURBATIONS = [
    # kind
    ("unknown-kind", {"kind": "earthquake"},
     ["perturbations[0].kind = 'earthquake'", ALL_KINDS]),
    ("no-kind", {"switch": "leaf0", "fraction": 0.1},
     ["perturbations[0].kind = ''", ALL_KINDS]),
    # keys of another kind
    ("ratio-on-loss", with_(GOOD["loss"], ratio=1.5),
     ["perturbations[0].ratio = 1.5", "not a key of the loss perturbation",
      "its keys: fraction, switch"]),
    ("host-on-imbalance", with_(GOOD["imbalance"], host="h0"),
     ["perturbations[0].host = 'h0'", "not a key of the imbalance perturbation",
      "its keys: ratio, switch, toward"]),
    ("switch-on-late-start", with_(GOOD["symphony_late_start"], switch="leaf0"),
     ["perturbations[0].switch = 'leaf0'", "symphony_late_start perturbation",
      "its keys: at_ms"]),
    ("up_ms-on-background", with_(GOOD["background"], up_ms=3.0),
     ["perturbations[0].up_ms = 3.0", "background perturbation",
      "its keys: dst, duration_ms, rate_gbps, src, start_ms"]),
    ("key-of-no-kind", with_(GOOD["loss"], foo=1),
     ["unknown key perturbations[0].foo", "allowed: kind, switch, toward"]),
    # switches and neighbours
    ("unknown-leaf", with_(GOOD["imbalance"], switch="leaf9"),
     ["perturbations[0].switch = 'leaf9'", "allowed: leaf0, leaf1, spine0, spine1"]),
    ("unknown-spine-loss", with_(GOOD["loss"], switch="spine5"),
     ["perturbations[0].switch = 'spine5'", "allowed: leaf0, leaf1, spine0, spine1"]),
    ("host-as-switch", with_(GOOD["loss"], switch="h0"),
     ["perturbations[0].switch = 'h0'", "allowed: leaf0, leaf1, spine0, spine1"]),
    ("leaf-toward-leaf", with_(GOOD["imbalance"], switch="leaf0", toward="leaf1"),
     ["perturbations[0].toward = 'leaf1'", "leaf0's neighbours are h0, h1, spine0, spine1"]),
    ("spine-toward-host", with_(GOOD["imbalance"], switch="spine0", toward="h0"),
     ["perturbations[0].toward = 'h0'", "spine0's neighbours are leaf0, leaf1"]),
    ("spine-toward-spine", with_(GOOD["link_down"], switch="spine0", toward="spine1"),
     ["perturbations[0].toward = 'spine1'", "spine0's neighbours are leaf0, leaf1"]),
    ("leaf-toward-other-leafs-host", with_(GOOD["link_down"], switch="leaf0", toward="h2"),
     ["perturbations[0].toward = 'h2'", "leaf0's neighbours are h0, h1, spine0, spine1"]),
    ("leaf-toward-missing-spine", with_(GOOD["imbalance"], toward="spine2"),
     ["perturbations[0].toward = 'spine2'", "leaf0's neighbours are h0, h1, spine0, spine1"]),
    # imbalance
    ("ratio-below-1", with_(GOOD["imbalance"], ratio=0.9),
     ["perturbations[0].ratio = 0.9", "must be >= 1"]),
    ("ratio-not-a-number", with_(GOOD["imbalance"], ratio="fast"),
     ["perturbations[0].ratio = 'fast'", "must be a number"]),
    # background
    ("bg-src-is-dst", with_(GOOD["background"], src="h1", dst="h1"),
     ["perturbations[0].dst = 'h1'", "must differ from src"]),
    ("bg-rate-0", with_(GOOD["background"], rate_gbps=0.0),
     ["perturbations[0].rate_gbps = 0.0", "must be in (0, link rate 10.0]"]),
    ("bg-rate-negative", with_(GOOD["background"], rate_gbps=-1.0),
     ["perturbations[0].rate_gbps = -1.0", "must be in (0, link rate 10.0]"]),
    ("bg-rate-above-link", with_(GOOD["background"], rate_gbps=10.5),
     ["perturbations[0].rate_gbps = 10.5", "must be in (0, link rate 10.0]"]),
    ("bg-duration-0", with_(GOOD["background"], duration_ms=0.0),
     ["perturbations[0].duration_ms = 0.0", "must be > 0: a finite time in (0,"]),
    ("bg-start-negative", with_(GOOD["background"], start_ms=-1.0),
     ["perturbations[0].start_ms = -1.0", "must be >= 0: a finite time in [0,"]),
    ("bg-unknown-src", with_(GOOD["background"], src="h9"),
     ["perturbations[0].src = 'h9'", "unknown host; this topology has h0..h3"]),
    ("bg-unknown-dst", with_(GOOD["background"], dst="host3"),
     ["perturbations[0].dst = 'host3'", "unknown host; this topology has h0..h3"]),
    # link_down
    ("up-before-down", with_(GOOD["link_down"], at_ms=5.0, up_ms=2.0),
     ["perturbations[0].up_ms = 2.0", "must be after at_ms"]),
    ("up-at-down", with_(GOOD["link_down"], at_ms=5.0, up_ms=5.0),
     ["perturbations[0].up_ms = 5.0", "must be after at_ms"]),
    ("down-at-negative", with_(GOOD["link_down"], at_ms=-1.0, up_ms=4.0),
     ["perturbations[0].at_ms = -1.0", "must be >= 0"]),
    # straggler
    ("straggler-unknown-host", with_(GOOD["straggler"], host="h4"),
     ["perturbations[0].host = 'h4'", "unknown host; this topology has h0..h3"]),
    ("straggler-delay-0", with_(GOOD["straggler"], delay_us=0.0),
     ["perturbations[0].delay_us = 0.0", "must be > 0"]),
    # loss
    ("loss-0", with_(GOOD["loss"], fraction=0.0),
     ["perturbations[0].fraction = 0.0", "must be in (0, 1)"]),
    ("loss-1", with_(GOOD["loss"], fraction=1.0),
     ["perturbations[0].fraction = 1.0", "must be in (0, 1)"]),
    ("loss-above-1", with_(GOOD["loss"], fraction=1.5),
     ["perturbations[0].fraction = 1.5", "must be in (0, 1)"]),
    # symphony_late_start
    ("late-start-negative", with_(GOOD["symphony_late_start"], at_ms=-0.5),
     ["perturbations[0].at_ms = -0.5", "must be >= 0"]),
]


@pytest.mark.parametrize("pert,expected", [(p, e) for _, p, e in BAD_PERTURBATIONS],
                         ids=[c[0] for c in BAD_PERTURBATIONS])
def test_bad_perturbation_is_rejected_naming_file_key_value_and_allowed(tmp_path, pert,
                                                                        expected):
    assert_spec_error(pert_spec(tmp_path, pert), *expected)


@pytest.mark.parametrize("kind,key", [(k, key) for k in sorted(REQUIRED) for key in REQUIRED[k]])
def test_perturbation_missing_a_required_key_is_rejected(tmp_path, kind, key):
    path = pert_spec(tmp_path, without(GOOD[kind], key))
    assert_spec_error(path, f"perturbations[0].{key} = None", f"{kind} perturbation needs {key}")


def test_straggler_on_a_host_in_no_job_is_rejected(tmp_path):
    # the job is one rail ring over h0 and h2; h1 runs nothing
    job = {"id": 1, "hosts": ["h0", "h2"], "algorithm": "ring_allreduce", "rings": "rail",
           "chunk_bytes": 4096}
    path = pert_spec(tmp_path, with_(GOOD["straggler"], host="h1"), jobs=[job])
    assert_spec_error(path, "perturbations[0].host = 'h1'", "is in no job")


def test_straggler_in_a_messages_spec_is_in_no_job(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    raw["perturbations"] = [{"kind": "straggler", "host": "h0", "delay_us": 10.0}]
    assert_spec_error(write(tmp_path, raw), "perturbations[0].host = 'h0'", "is in no job")


def test_dumbbell_leaf_has_no_spine_to_point_toward(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    raw["perturbations"] = [{"kind": "imbalance", "switch": "leaf0", "toward": "spine0",
                             "ratio": 1.5}]
    assert_spec_error(write(tmp_path, raw), "perturbations[0].toward = 'spine0'",
                      "leaf0's neighbours are h0, h1, h2")


def test_dumbbell_has_only_leaf0(tmp_path):
    raw = copy.deepcopy(MSG_BASE)
    raw["perturbations"] = [{"kind": "loss", "switch": "leaf1", "fraction": 0.1}]
    assert_spec_error(write(tmp_path, raw), "perturbations[0].switch = 'leaf1'",
                      "allowed: leaf0")


def test_second_bad_perturbation_is_named_by_its_index(tmp_path):
    path = pert_spec(tmp_path, GOOD["loss"], with_(GOOD["loss"], fraction=2.0))
    assert_spec_error(path, "perturbations[1].fraction = 2.0", "must be in (0, 1)")


def test_perturbations_given_as_a_table_not_a_list_are_rejected(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["perturbations"] = dict(GOOD["loss"])      # written as [perturbations]
    assert_spec_error(write(tmp_path, raw), "perturbations = {",
                      "must be a list of [[perturbations]] tables")


def test_perturbation_override_is_validated_like_the_file(tmp_path):
    path = pert_spec(tmp_path)
    assert_spec_error(path, "perturbations[0].ratio = 0.5", "must be >= 1",
                      overrides=['perturbations=[{kind="imbalance", switch="leaf0", '
                                 'toward="spine0", ratio=0.5}]'])


# Bug: present-but-empty names skip validation (spec.py `if p.switch:` line 511,
# `if p.toward:` line 514, `if v:` line 519). An empty switch/toward/src/dst is accepted
# (and fails only at run time in wiring.port_toward / the fabric lookup), and an empty
# switch together with a toward crashes neighbors() (spec.py line 489, int('')) with a
# bare ValueError that names neither the file nor the key.
EMPTY_NAMES = [
    ("loss-switch-empty", with_(GOOD["loss"], switch=""), "perturbations[0].switch = ''"),
    ("imbalance-toward-empty", with_(GOOD["imbalance"], toward=""),
     "perturbations[0].toward = ''"),
    ("link-down-toward-empty", with_(GOOD["link_down"], toward=""),
     "perturbations[0].toward = ''"),
    ("imbalance-switch-empty", with_(GOOD["imbalance"], switch=""),
     "perturbations[0].switch = ''"),
    ("background-src-empty", with_(GOOD["background"], src=""), "perturbations[0].src = ''"),
    ("background-dst-empty", with_(GOOD["background"], dst=""), "perturbations[0].dst = ''"),
]


@pytest.mark.parametrize("pert,expected", [(p, e) for _, p, e in EMPTY_NAMES],
                         ids=[c[0] for c in EMPTY_NAMES])
def test_empty_switch_or_host_name_in_a_perturbation_is_a_spec_error(tmp_path, pert, expected):
    assert_spec_error(pert_spec(tmp_path, pert), expected)


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


# --- variants --------------------------------------------------------------------------

def variant_spec(tmp_path, vs) -> str:
    raw = copy.deepcopy(BASE)
    raw["variants"] = vs
    return write(tmp_path, raw)


VARIANT_SHAPE = 'a list of tables {name = "...", set = ["key=value", ...]}'


def test_variants_of_a_spec_load_and_set_defaults_to_empty(tmp_path):
    path = variant_spec(tmp_path, [{"name": "plain"},
                                   {"name": "k", "set": ["symphony.k=0.5", "jobs.0.passes=3"]}])
    spec = load(path)
    assert variants(spec) == [("plain", []), ("k", ["symphony.k=0.5", "jobs.0.passes=3"])]
    assert spec.symphony.k == 0.01 and spec.jobs[0].passes == 1   # base untouched


@pytest.mark.parametrize("vs", [
    [{"set": ["symphony.k=0.5"]}],                          # no name
    [{"name": "a", "sets": ["symphony.k=0.5"]}],            # unknown key
    [{"name": "a", "set": ["symphony.k=0.5"], "note": "x"}],
    [{"name": "a", "set": "symphony.k=0.5"}],               # set not a list
    [{"name": 3, "set": []}],                               # name not a string
], ids=["missing-name", "unknown-key-sets", "unknown-key-note", "set-not-a-list",
        "name-not-a-string"])
def test_badly_shaped_variant_is_rejected(tmp_path, vs):
    assert_spec_error(variant_spec(tmp_path, vs), "variants = [", VARIANT_SHAPE)


def test_variants_given_as_a_table_are_rejected(tmp_path):
    raw = copy.deepcopy(BASE)
    raw["variants"] = {"name": "a", "set": []}         # written as [variants]
    assert_spec_error(write(tmp_path, raw), "variants = {", VARIANT_SHAPE)


def test_variant_making_the_spec_invalid_is_rejected_naming_the_variant(tmp_path):
    path = variant_spec(tmp_path, [{"name": "ok", "set": ["symphony.k=0.1"]},
                                   {"name": "bad-k", "set": ["symphony.k=-1.0"]}])
    msg = assert_spec_error(path, "variant 'bad-k'", "symphony.k = -1.0", "must be >= 0")
    assert "'ok'" not in msg


def test_variant_with_a_bad_perturbation_is_rejected_naming_the_variant(tmp_path):
    path = variant_spec(tmp_path, [{"name": "slow-hop", "set": [
        'perturbations=[{kind="imbalance", switch="leaf0", toward="leaf1", ratio=1.2}]']}])
    assert_spec_error(path, "variant 'slow-hop'", "perturbations[0].toward = 'leaf1'",
                      "leaf0's neighbours are h0, h1, spine0, spine1")


def test_variant_with_a_malformed_override_is_rejected_naming_the_variant(tmp_path):
    path = variant_spec(tmp_path, [{"name": "typo", "set": ["symphony.k"]}])
    with pytest.raises(SpecError) as e:
        load(path)
    assert "variant 'typo'" in str(e.value) and "expected key=value" in str(e.value)


def test_variant_with_an_out_of_range_index_is_rejected_naming_the_variant(tmp_path):
    path = variant_spec(tmp_path, [{"name": "two-jobs", "set": ["jobs.1.passes=2"]}])
    with pytest.raises(SpecError) as e:
        load(path)
    assert "variant 'two-jobs'" in str(e.value) and "no index '1'" in str(e.value)


def test_variant_set_with_a_non_string_item_is_a_spec_error(tmp_path):
    assert_spec_error(variant_spec(tmp_path, [{"name": "n", "set": [1]}]), "variants")


# --- sweep points ----------------------------------------------------------------------

def test_points_without_params_or_variants_is_one_default_point():
    assert sweep.points(TABLE1, [], []) == [("default", [])]


def test_points_without_params_keeps_base_overrides_on_the_default_point():
    assert sweep.points(TABLE1, [], ["run.seeds=2"]) == [("default", ["run.seeds=2"])]


def test_points_without_params_are_the_variants():
    assert sweep.points(FIG8B, [], []) == [
        ("k-0.0001", ["symphony.k=0.0001"]), ("k-0.001", ["symphony.k=0.001"]),
        ("k-0.01", ["symphony.k=0.01"]), ("k-0.1", ["symphony.k=0.1"]),
        ("k-1.0", ["symphony.k=1.0"])]


def test_points_variant_with_empty_set_is_labelled_by_its_name():
    pts = sweep.points(FIG2, [], [])
    assert [label for label, _ in pts] == ["baseline-ecmp", "imbalance-1.13x",
                                           "transient-congestion"]
    assert pts[0] == ("baseline-ecmp", [])


def test_points_one_param_is_one_point_per_value():
    assert sweep.points(TABLE1, ["symphony.k=0.0001,0.001,0.01"], []) == [
        ("symphony.k=0.0001", ["symphony.k=0.0001"]),
        ("symphony.k=0.001", ["symphony.k=0.001"]),
        ("symphony.k=0.01", ["symphony.k=0.01"])]


def test_points_two_params_are_the_cartesian_product_first_param_outermost():
    pts = sweep.points(TABLE1, ["symphony.k=0.001,0.01", "symphony.tau=0.1,0.25,0.5"], [])
    assert [label for label, _ in pts] == [
        "symphony.k=0.001,symphony.tau=0.1", "symphony.k=0.001,symphony.tau=0.25",
        "symphony.k=0.001,symphony.tau=0.5", "symphony.k=0.01,symphony.tau=0.1",
        "symphony.k=0.01,symphony.tau=0.25", "symphony.k=0.01,symphony.tau=0.5"]
    assert pts[4][1] == ["symphony.k=0.01", "symphony.tau=0.25"]


def test_points_params_combine_with_every_variant():
    pts = sweep.points(FIG8A, ["symphony.k=0.001,0.01"], [])
    assert len(pts) == 4 * 2
    assert pts[0] == ("imbalance-1.1x,symphony.k=0.001",
                      ['perturbations=[{kind="imbalance", switch="leaf0", toward="spine0", '
                       'ratio=1.1}]', "symphony.k=0.001"])
    assert [label for label, _ in pts[-2:]] == ["imbalance-1.7x,symphony.k=0.001",
                                                "imbalance-1.7x,symphony.k=0.01"]


def test_points_prepend_base_overrides_then_variant_then_params():
    pts = sweep.points(FIG8B, ["symphony.tau=0.5"], ["run.seeds=3", "jobs.0.passes=2"])
    assert pts[1] == ("k-0.001,symphony.tau=0.5",
                      ["run.seeds=3", "jobs.0.passes=2", "symphony.k=0.001", "symphony.tau=0.5"])
    assert all(ov[:2] == ["run.seeds=3", "jobs.0.passes=2"] for _, ov in pts)


def test_points_overrides_load_to_the_swept_values():
    for label, overrides in sweep.points(FIG8B, ["symphony.tau=0.1,0.5"], []):
        spec = load(FIG8B, overrides)
        k_label, tau_label = label.split(",")
        assert spec.symphony.k == float(k_label[len("k-"):])
        assert spec.symphony.tau == float(tau_label.split("=")[1])


def test_points_param_split_on_first_equals_and_empty_values_dropped():
    pts = sweep.points(TABLE1, ["run.schemes=[\"symphony\"]", "symphony.k=0.1,,0.2,"], [])
    assert [label for label, _ in pts] == ['run.schemes=["symphony"],symphony.k=0.1',
                                           'run.schemes=["symphony"],symphony.k=0.2']


def test_points_param_without_equals_is_a_value_error():
    with pytest.raises(ValueError, match=r"--param 'symphony\.k': expected key=v1,v2"):
        sweep.points(TABLE1, ["symphony.k"], [])


def test_points_of_an_invalid_base_is_a_spec_error():
    with pytest.raises(SpecError, match="symphony.k = -1.0"):
        sweep.points(TABLE1, [], ["symphony.k=-1"])


def test_points_param_without_values_is_a_value_error():
    with pytest.raises(ValueError):
        sweep.points(TABLE1, ["symphony.k="], [])


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
                          "pmax": 0.2, "rate_ref_bps": 0.0}
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
        "rate_ref_bps": 0.0}
    scaled = load(TABLE1, ["profile=zhu"] + AT_2000 + ["switch.red_scale_with_rate=true"])
    assert agent_config(scaled, "baseline", 1)["red"]["rate_ref_bps"] == 10e9 / 2000


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


def test_points_only_keeps_the_named_variants_in_spec_order():
    pts = sweep.points(FIG8B, [], [], only=["k-1.0", "k-0.001"])
    assert [label for label, _ in pts] == ["k-0.001", "k-1.0"]


def test_points_only_an_unknown_variant_is_a_value_error_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"--variant k-7: .*fig8b\.toml has variants k-0\.0001, "):
        sweep.points(FIG8B, [], [], only=["k-7"])


def test_points_only_on_a_spec_without_variants_is_a_value_error():
    with pytest.raises(ValueError, match="has no \\[\\[variants\\]\\]"):
        sweep.points(TABLE1, [], [], only=["x"])
