"""Unit tests for the shipped run specs (runs/*.toml), [[variants]] and sweep points."""

import copy
import glob
import os

import pytest

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator.launch import sweep
from emulator.spec.schema import MessageSpec, PerturbationSpec
from emulator.spec import load, variants
from emulator.spec.check import SpecError
from tests.spec_ext_util import AT_2000, BASE, FIG2, FIG4, FIG5, FIG9, RUNS, TABLE1, write
from tests.toml_util import assert_spec_error


FIG8A = os.path.join(RUNS, "fig8a.toml")
FIG8B = os.path.join(RUNS, "fig8b.toml")
FIG8C = os.path.join(RUNS, "fig8c.toml")
RUN_NAMES = ["fig2", "fig4", "fig5", "fig6", "fig7ab", "fig7c", "fig8a", "fig8b", "fig8c",
             "fig9", "paper-fig5", "paper-fig6", "paper-table2", "table1", "table1-paper", "table1-two-leaf", "table2", "two-servers"]


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
        "paper-fig5": ["ours", "steps", "payload", "paths", "collective", "fabric", "fabric-timer",
                       "paper"],
        "paper-fig6": ["ours", "layers", "overlap", "bytes", "collective", "rings", "buckets",
                       "paper-overlap", "paper"],
        "paper-table2": [f"vgg16-{item}" for item in (
            "ours", "layers", "overlap", "collective", "bytes", "rings-serial", "rings",
            "buckets", "paper")]
        + [f"resnet50-{item}" for item in (
            "ours", "layers", "overlap", "collective", "bytes", "full", "rings-serial", "rings",
            "buckets", "paper-overlap", "paper")],
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


def test_points_only_keeps_the_named_variants_in_spec_order():
    pts = sweep.points(FIG8B, [], [], only=["k-1.0", "k-0.001"])
    assert [label for label, _ in pts] == ["k-0.001", "k-1.0"]


def test_points_only_an_unknown_variant_is_a_value_error_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"--variant k-7: .*fig8b\.toml has variants k-0\.0001, "):
        sweep.points(FIG8B, [], [], only=["k-7"])


def test_points_only_on_a_spec_without_variants_is_a_value_error():
    with pytest.raises(ValueError, match="has no \\[\\[variants\\]\\]"):
        sweep.points(TABLE1, [], [], only=["x"])
