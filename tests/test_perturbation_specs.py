"""Unit tests for the [[perturbations]] section of a spec: valid tables and each bad one."""

import copy

import pytest

from emulator.spec.schema import PERTURBATIONS, PERTURBATION_KEYS, PerturbationSpec
from emulator.spec import load
from tests.spec_ext_util import BASE, MSG_BASE, with_, write
from tests.toml_util import assert_spec_error


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


def pert_spec(tmp_path, *perts, **top) -> str:
    raw = copy.deepcopy(BASE)
    raw.update(copy.deepcopy(top))
    if perts:
        raw["perturbations"] = [copy.deepcopy(p) for p in perts]
    return write(tmp_path, raw)


def without(d: dict, key: str) -> dict:
    return {k: v for k, v in d.items() if k != key}


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
