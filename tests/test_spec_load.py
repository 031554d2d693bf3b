"""Unit tests for emulator/spec/__init__.py: valid specs load with their values, and --set overrides."""

import copy

import pytest

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator.spec import apply_override, load
from emulator.spec.check import SpecError
from tests.spec_util import BASE, TABLE1, spec_with, two_jobs, write
from tests.toml_util import assert_spec_error, to_toml


# --- the minimal spec and the example spec are valid ---------------------------------

def test_minimal_base_spec_is_valid(tmp_path):
    spec = load(spec_with(tmp_path))
    assert spec.name == "mini"
    assert spec.topology.host_names == ["h0", "h1", "h2", "h3"]
    assert len(spec.jobs) == 1 and spec.jobs[0].hosts == ("all",)
    assert spec.run.schemes == ("baseline", "symphony")
    assert spec.run.seeds == (1,)


def test_table1_loads_with_the_values_written_in_the_file():
    with open(TABLE1, "rb") as f:
        raw = tomllib.load(f)
    spec = load(TABLE1)
    assert spec.name == "table1" == raw["name"]
    assert spec.path == TABLE1
    assert spec.description == raw["description"]
    assert spec.scale.dilation == float(raw["scale"]["dilation"]) > 0
    assert spec.profile == raw["profile"] == "hpcc"      # the paper's transport
    for section in ("topology", "switch", "symphony", "transport"):
        for key, value in raw[section].items():
            assert getattr(getattr(spec, section), key) == value, f"{section}.{key}"
    (job,) = spec.jobs
    assert (job.id, job.hosts, job.algorithm, job.rings, job.chunk_bytes, job.size_bytes,
            job.passes) == (1, ("all",), "ring_allreduce", "rail", 262144, None, 4)
    assert spec.run.schemes == ("baseline", "symphony")
    assert spec.run.seeds == tuple(raw["run"]["seeds"]) == (1, 2, 3)
    assert spec.run.timeout_s == float(raw["run"]["timeout_s"])


def test_table1_is_the_paper_table1_fabric_scaled():
    spec = load(TABLE1)
    t = spec.topology
    assert (t.kind, t.leaves, t.spines, t.hosts_per_leaf, t.routing) == \
        ("leafspine", 4, 4, 4, "ecmp")
    assert t.link_rate_gbps == 10.0
    assert (spec.switch.kmin_bytes, spec.switch.kmax_bytes, spec.switch.pmax) == \
        (40000, 160000, 0.2)                   # HPCC's RED at 10 Gb/s (emulator/spec/profiles.py)
    assert (spec.symphony.k, spec.symphony.tau, spec.symphony.t_win_us) == (0.01, 0.25, 100.0)


def test_seed_count_expands_to_seeds_1_to_n(tmp_path):
    assert load(spec_with(tmp_path, ("run.seeds", 3))).run.seeds == (1, 2, 3)


def test_seed_list_is_kept(tmp_path):
    assert load(spec_with(tmp_path, ("run.seeds", [7, 3]))).run.seeds == (7, 3)


def test_name_defaults_to_the_file_name(tmp_path):
    raw = copy.deepcopy(BASE)
    del raw["name"]
    spec = load(write(tmp_path, to_toml(raw), "my_experiment.toml"))
    assert spec.name == "my_experiment"


def test_single_leaf_without_spines_is_valid(tmp_path):
    spec = load(spec_with(tmp_path, ("topology.leaves", 1), ("topology.spines", 0),
                          ("topology.hosts_per_leaf", 4), ("jobs.0.rings", "single")))
    assert spec.topology.spines == 0


def test_dumbbell_single_ring_job_is_valid(tmp_path):
    raw = {"topology": {"kind": "dumbbell", "hosts": 3},
           "jobs": [{"id": 5, "hosts": "all", "rings": "single", "size_bytes": 12288}]}
    spec = load(write(tmp_path, to_toml(raw)))
    assert spec.topology.host_names == ["h0", "h1", "h2"]
    assert spec.jobs[0].size_bytes == 12288 and spec.jobs[0].chunk_bytes is None


def test_ring2d_with_matching_grid_is_valid(tmp_path):
    spec = load(spec_with(tmp_path, ("jobs.0.algorithm", "ring2d_allreduce"),
                          ("jobs.0.grid", [2, 2])))
    assert spec.jobs[0].grid == (2, 2)


def test_two_jobs_on_disjoint_rails_are_valid(tmp_path):
    path = spec_with(tmp_path, ("jobs", two_jobs({"id": 1, "hosts": ["h0", "h2"]},
                                                 {"id": 2, "hosts": ["h1", "h3"]})))
    spec = load(path)
    assert [j.id for j in spec.jobs] == [1, 2]
    assert [j.hosts for j in spec.jobs] == [("h0", "h2"), ("h1", "h3")]


def test_jobs_may_share_hosts_when_one_runs_after_the_other(tmp_path):
    jobs = two_jobs({"id": 1, "hosts": "all"}, {"id": 2, "hosts": ["h0", "h2"], "after_job": 1})
    jobs.append(dict(jobs[1], id=3, after_job=2))
    spec = load(spec_with(tmp_path, ("jobs", jobs)))
    assert [j.after_job for j in spec.jobs] == [0, 1, 2]


def test_two_jobs_after_the_same_job_still_clash_with_each_other(tmp_path):
    jobs = two_jobs({"id": 1, "hosts": "all"}, {"id": 2, "hosts": ["h0", "h2"], "after_job": 1})
    jobs.append(dict(jobs[1], id=3, after_job=1))
    path = spec_with(tmp_path, ("jobs", jobs))
    assert_spec_error(path, "jobs[2].hosts = ['h0', 'h2']", "host h0 is already in job 2",
                      "unless one runs after the other (after_job)")


# --- overrides ---------------------------------------------------------------------------

def test_overrides_with_dotted_keys_change_the_loaded_spec():
    spec = load(TABLE1, ["symphony.k=0.001", "jobs.0.passes=2", 'run.schemes=["symphony"]',
                         "topology.routing=static"])
    assert spec.symphony.k == 0.001
    assert spec.jobs[0].passes == 2
    assert spec.run.schemes == ("symphony",)
    assert spec.topology.routing == "static"
    # untouched values stay
    assert spec.symphony.tau == 0.25 and spec.topology.leaves == 4


def test_apply_override_parses_toml_values_and_takes_bare_words_as_strings():
    raw = copy.deepcopy(BASE)
    apply_override(raw, "symphony.k=0.001")
    apply_override(raw, "jobs.0.passes=2")
    apply_override(raw, 'run.schemes=["symphony"]')
    apply_override(raw, "topology.routing=static")
    apply_override(raw, "switch.red=false")
    assert raw["symphony"] == {"k": 0.001}
    assert raw["jobs"][0]["passes"] == 2
    assert raw["run"] == {"schemes": ["symphony"]}
    assert raw["topology"]["routing"] == "static"
    assert raw["switch"] == {"red": False}


def test_apply_override_splits_on_the_first_equals_sign_only():
    raw = copy.deepcopy(BASE)
    apply_override(raw, 'description="a=b"')
    assert raw["description"] == "a=b"


def test_apply_override_tolerates_spaces_around_a_toml_value():
    raw = copy.deepcopy(BASE)
    apply_override(raw, "symphony.k = 0.001")
    assert raw["symphony"]["k"] == 0.001


def test_apply_override_tolerates_spaces_around_a_bare_word():
    raw = copy.deepcopy(BASE)
    apply_override(raw, "topology.routing = static")
    assert raw["topology"]["routing"] == "static"


def test_override_producing_a_bad_value_is_rejected_by_validation():
    assert_spec_error(TABLE1, "topology.routing = 'magic'", "allowed: ecmp, static",
                      overrides=["topology.routing=magic"])


def test_override_without_equals_sign_is_rejected():
    with pytest.raises(SpecError, match=r"--set 'symphony.k': expected key=value, "
                                        r"e.g. symphony.k=0.001"):
        apply_override(copy.deepcopy(BASE), "symphony.k")


def test_override_without_equals_sign_is_rejected_by_load_too():
    with pytest.raises(SpecError, match="expected key=value"):
        load(TABLE1, ["passes"])


def test_override_index_out_of_range_is_rejected_naming_the_list_and_its_length():
    with pytest.raises(SpecError) as e:
        apply_override(copy.deepcopy(BASE), "jobs.3.passes=2")
    assert str(e.value) == "--set jobs.3.passes: jobs has 1 entries, no index '3'"


def test_override_non_numeric_index_is_rejected():
    with pytest.raises(SpecError, match=r"jobs has 1 entries, no index 'first'"):
        apply_override(copy.deepcopy(BASE), "jobs.first.passes=2")


def test_override_of_a_list_without_index_is_rejected():
    with pytest.raises(SpecError, match=r"--set jobs.passes: give an index into jobs"):
        apply_override(copy.deepcopy(BASE), "jobs.passes=2")


@pytest.mark.parametrize("item", ["name.x=1", "topology.kind.a.b=1"])
def test_override_through_a_scalar_value_is_a_spec_error(item):
    raw = copy.deepcopy(BASE)
    raw["topology"]["kind"] = "leafspine"
    with pytest.raises(SpecError):
        apply_override(raw, item)
