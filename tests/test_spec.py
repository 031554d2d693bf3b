"""Unit tests for emulator/spec.py (experiment specs) and emulator/jobs.py (layout, wire
bytes, theoretical CCT). Pure, no root: specs are TOML text written into tmp_path.

Every bad spec starts from the valid minimal spec ``BASE`` (a 2-leaf x 2-host leaf-spine,
one ring all-reduce job over all four hosts as two rail rings) and breaks one thing; the
SpecError must name the file, the key, the bad value and what is allowed.
"""

import copy
import os

import pytest

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator.plan import layout as jobs_mod
from emulator.spec import apply_override, load, validate
from emulator.speccheck import SpecError
from tests.toml_util import assert_spec_error, to_toml

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE1 = os.path.join(MAIN, "runs", "table1.toml")

BASE = {
    "name": "mini",
    "topology": {"kind": "leafspine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2},
    "jobs": [{"id": 1, "hosts": "all", "algorithm": "ring_allreduce", "rings": "rail",
              "chunk_bytes": 4096}],
}


# --- writing specs ---------------------------------------------------------------------

def set_key(raw: dict, dotted: str, value) -> dict:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    node[parts[-1]] = value
    return raw


def del_key(raw: dict, dotted: str) -> dict:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    del node[parts[-1]]
    return raw


def write(tmp_path, text: str, name: str = "spec.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def spec_with(tmp_path, *changes, remove=()):
    raw = copy.deepcopy(BASE)
    for key in remove:
        del_key(raw, key)
    for key, value in changes:
        set_key(raw, key, value)
    return write(tmp_path, to_toml(raw))


def two_jobs(job0: dict, job1: dict) -> list:
    base = {"algorithm": "ring_allreduce", "rings": "rail", "chunk_bytes": 4096}
    return [dict(base, **job0), dict(base, **job1)]


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
        (40000, 160000, 0.2)                   # HPCC's RED at 10 Gb/s (emulator/profiles.py)
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


# --- bad specs: one thing broken each ----------------------------------------------------

BAD = [
    # unknown keys, wrong shapes
    ("unknown-top-level-key", [("colour", "red")], (),
     ["unknown key 'colour'", "allowed: name, description, profile, jobs", "topology"]),
    ("unknown-section-key", [("topology.lanes", 4)], (),
     ["unknown key topology.lanes", "allowed:", "hosts_per_leaf", "routing"]),
    ("unknown-job-key", [("jobs.0.size", 4096)], (),
     ["unknown key jobs[0].size", "allowed:", "chunk_bytes", "size_bytes"]),
    ("section-not-a-table", [("switch", 5)], (), ["[switch] must be a table", "got 5"]),
    ("jobs-not-tables", [("jobs", [1, 2])], (), ["[jobs[0]] must be a table", "got 1"]),
    ("empty-name", [("name", "")], (), ["name = ''", "must be a non-empty string"]),
    # wrong types
    ("string-for-int", [("topology.leaves", "4")], (),
     ["topology.leaves = '4'", "must be an integer"]),
    ("float-for-int", [("transport.mtu_bytes", 4096.0)], (),
     ["transport.mtu_bytes = 4096.0", "must be an integer"]),
    ("bool-for-int", [("jobs.0.passes", True)], (),
     ["jobs[0].passes = True", "must be an integer"]),
    ("bool-for-number", [("topology.link_rate_gbps", True)], (),
     ["topology.link_rate_gbps = True", "must be a number"]),
    ("string-for-number", [("symphony.k", "0.01")], (),
     ["symphony.k = '0.01'", "must be a number"]),
    ("int-for-bool", [("switch.red", 1)], (), ["switch.red = 1", "must be true or false"]),
    ("int-for-string", [("jobs.0.algorithm", 3)], (),
     ["jobs[0].algorithm = 3", "must be a string"]),
    ("hosts-not-a-list", [("jobs.0.hosts", 5)], (),
     ["jobs[0].hosts = 5", '"all" or a list of host names']),
    # bad enum values
    ("bad-topology-kind", [("topology.kind", "fattree")], (),
     ["topology.kind = 'fattree'", "allowed: leafspine, dumbbell"]),
    ("bad-routing", [("topology.routing", "random")], (),
     ["topology.routing = 'random'", "allowed: ecmp, static"]),
    ("bad-algorithm", [("jobs.0.algorithm", "ring_alltoall")], (),
     ["jobs[0].algorithm = 'ring_alltoall'",
      "allowed: ring_allreduce, ring_reducescatter, ring_allgather, ring2d_allreduce"]),
    ("bad-rings", [("jobs.0.rings", "tree")], (),
     ["jobs[0].rings = 'tree'", "allowed: rail, single"]),
    ("bad-dcqcn-variant", [("dcqcn.variant", "hpcc")], (),
     ["dcqcn.variant = 'hpcc'", "allowed: paper, mlx"]),
    ("bad-scheme", [("run.schemes", ["baseline", "prio"])], (),
     ["run.schemes = ['baseline', 'prio']", "a non-empty list of: baseline, symphony"]),
    ("schemes-not-a-list", [("run.schemes", "symphony")], (),
     ["run.schemes = 'symphony'", "a non-empty list of: baseline, symphony"]),
    ("empty-schemes", [("run.schemes", [])], (),
     ["run.schemes = []", "a non-empty list of: baseline, symphony"]),
    # out-of-range numbers: topology
    ("leaves-0", [("topology.leaves", 0)], (), ["topology.leaves = 0", "must be in 1..128"]),
    ("leaves-129", [("topology.leaves", 129)], (),
     ["topology.leaves = 129", "must be in 1..128"]),
    ("spines-0-with-2-leaves", [("topology.spines", 0)], (),
     ["topology.spines = 0", "more than one leaf needs at least one spine"]),
    ("hosts-per-leaf-0", [("topology.hosts_per_leaf", 0)], (),
     ["topology.hosts_per_leaf = 0", "must be in 1..254"]),
    ("dumbbell-1-host", [("topology.kind", "dumbbell"), ("topology.hosts", 1),
                         ("jobs.0.rings", "single")], (),
     ["topology.hosts = 1", "must be in 2..254"]),
    ("link-rate-0", [("topology.link_rate_gbps", 0)], (),
     ["topology.link_rate_gbps = 0.0", "must be > 0"]),
    ("link-rate-negative", [("topology.link_rate_gbps", -10.0)], (),
     ["topology.link_rate_gbps = -10.0", "must be > 0"]),
    ("buffer-too-small", [("topology.buffer_bytes", 8192)], (),
     ["topology.buffer_bytes = 8192", "must be >= 16384"]),
    ("dilation-0", [("scale.dilation", 0)], (), ["scale.dilation = 0.0", "must be > 0"]),
    # switch / symphony / transport
    ("kmin-equals-kmax", [("switch.kmin_bytes", 100000), ("switch.kmax_bytes", 100000)], (),
     ["switch.kmin_bytes = 100000", "need 0 <= kmin_bytes < kmax_bytes (100000)"]),
    ("kmin-above-kmax", [("switch.kmin_bytes", 200000)], (),
     ["switch.kmin_bytes = 200000", "kmin_bytes < kmax_bytes (100000)"]),
    ("pmax-above-1", [("switch.pmax", 1.5)], (), ["switch.pmax = 1.5", "must be in [0, 1]"]),
    ("profile-unknown", [("profile", "hpcx")], (), ["profile = 'hpcx'", "allowed: hpcc"]),
    ("congestion-flag-unknown", [("transport.congestion_flag", "becn")], (),
     ["transport.congestion_flag = 'becn'", "allowed: cnp, ack"]),
    ("primary-unknown", [("run.primary", "fct")], (),
     ["run.primary = 'fct'", "allowed: auto, cct, jct"]),
    ("order-unknown", [("collective.order", "fifo")], (),
     ["collective.order = 'fifo'", "allowed: on_arrival, in_order"]),
    ("k-negative", [("symphony.k", -0.001)], (), ["symphony.k = -0.001", "must be >= 0"]),
    ("tau-above-1", [("symphony.tau", 1.25)], (), ["symphony.tau = 1.25", "must be in [0, 1]"]),
    ("t-win-0", [("symphony.t_win_us", 0)], (), ["symphony.t_win_us = 0.0", "must be > 0"]),
    ("n-warmup-negative", [("symphony.n_warmup", -1)], (),
     ["symphony.n_warmup = -1", "must be >= 0"]),
    ("mtu-not-multiple-of-4", [("transport.mtu_bytes", 4098)], (),
     ["transport.mtu_bytes = 4098", "must be a multiple of 4 in 256..8192"]),
    ("mtu-too-small", [("transport.mtu_bytes", 128)], (),
     ["transport.mtu_bytes = 128", "must be a multiple of 4 in 256..8192"]),
    ("ack-every-0", [("transport.ack_every", 0)], (),
     ["transport.ack_every = 0", "must be >= 1"]),
    ("servers-above-pods", [("topology.servers", 2)], (),
     ["topology.servers = 2", "must be in 1..pods (1): whole pods go to one server each"]),
    ("real-server-not-a-target", [("topology.servers", ["root@a b"])], (),
     ["topology.servers[0] = 'root@a b'", "not [user@]host[:port]: a server as you ssh to it"]),
    ("real-server-bad-port", [("topology.servers", ["root@a:70000"])], (),
     ["topology.servers[0] = 'root@a:70000'", "port '70000' is not 1..65535"]),
    ("real-servers-above-pods", [("topology.servers", ["a", "b"])], (),
     ["topology.servers = ['a', 'b']", "must be in 1..pods (1): whole pods go to one server"]),
    ("underlay-without-real-servers", [("topology.underlay", ["10.0.0.2"])], (),
     ["topology.underlay = ['10.0.0.2']", "only with real servers"]),
    ("underlay-not-an-address", [("topology.servers", ["a"]), ("topology.underlay", ["eth1"])],
     (), ["topology.underlay[0] = 'eth1'", "an IPv4 address"]),
    ("ssh-config-missing", [("topology.servers", ["a"]),
                            ("topology.ssh_config", "/nonexistent/ssh_config")], (),
     ["topology.ssh_config = '/nonexistent/ssh_config'", "no such file"]),
    ("rto-0", [("transport.rto_us", 0)], (),
     ["transport.rto_us = 0.0", "must be > 0: a finite time in (0,", "µs at real scale"]),
    ("nak-timeout-negative", [("transport.nak_timeout_us", -5)], (),
     ["transport.nak_timeout_us = -5.0", "must be > 0: a finite time in (0,", "µs at real scale"]),
    # jobs: sizes, counts
    ("passes-0", [("jobs.0.passes", 0)], (), ["jobs[0].passes = 0", "must be in 1..10000"]),
    ("chunk-not-multiple-of-4", [("jobs.0.chunk_bytes", 4094)], (),
     ["jobs[0].chunk_bytes = 4094", "must be a positive multiple of 4 bytes"]),
    ("chunk-0", [("jobs.0.chunk_bytes", 0)], (),
     ["jobs[0].chunk_bytes = 0", "must be a positive multiple of 4 bytes"]),
    ("size-not-multiple-of-4", [("jobs.0.size_bytes", 1002)], ("jobs.0.chunk_bytes",),
     ["jobs[0].size_bytes = 1002", "must be a positive multiple of 4 bytes"]),
    ("size-above-1gib", [("jobs.0.size_bytes", 1 << 31)], ("jobs.0.chunk_bytes",),
     ["jobs[0].size_bytes = 2147483648", "must be <= 1 GiB"]),
    ("both-chunk-and-size", [("jobs.0.size_bytes", 16384)], (),
     ["jobs[0].chunk_bytes = 4096", "give exactly one of chunk_bytes and size_bytes"]),
    ("neither-chunk-nor-size", [], ("jobs.0.chunk_bytes",),
     ["jobs[0].chunk_bytes = None", "give exactly one of chunk_bytes and size_bytes"]),
    ("compute-gap-negative", [("jobs.0.compute_gap_us", -1.0)], (),
     ["jobs[0].compute_gap_us = -1.0", "must be >= 0"]),
    ("start-ms-negative", [("jobs.0.start_ms", -5)], (),
     ["jobs[0].start_ms = -5.0", "must be >= 0"]),
    # jobs: ids and hosts
    ("job-id-0", [("jobs.0.id", 0)], (), ["jobs[0].id = 0", "must be an integer in 1..32766"]),
    ("job-id-40000", [("jobs.0.id", 40000)], (),
     ["jobs[0].id = 40000", "must be an integer in 1..32766"]),
    ("duplicate-job-id", [("jobs", two_jobs({"id": 1, "hosts": ["h0", "h2"]},
                                            {"id": 1, "hosts": ["h1", "h3"]}))], (),
     ["jobs[1].id = 1", "job ids must be unique"]),
    ("unknown-host", [("jobs.0.hosts", ["h0", "h9"])], (),
     ["jobs[0].hosts = ['h0', 'h9']", "unknown host 'h9'", "this topology has h0..h3"]),
    ("host-listed-twice", [("jobs.0.hosts", ["h0", "h2", "h0"])], (),
     ["jobs[0].hosts = ['h0', 'h2', 'h0']", "a host is listed twice"]),
    ("hosts-overlap-between-jobs", [("jobs", two_jobs({"id": 1, "hosts": "all"},
                                                      {"id": 2, "hosts": ["h0", "h2"]}))], (),
     ["jobs[1].hosts = ['h0', 'h2']", "host h0 is already in job 1",
      "jobs need disjoint hosts"]),
    ("after-unknown-job", [("jobs", two_jobs({"id": 1, "hosts": ["h0", "h2"]},
                                             {"id": 2, "hosts": ["h0", "h2"], "after_job": 7}))],
     (), ["jobs[1].after_job = 7", "must be the id of a job listed before this one"]),
    ("after-itself", [("jobs.0.after_job", 1)], (),
     ["jobs[0].after_job = 1", "0 (none) or the id of another job"]),
    ("after-negative", [("jobs.0.after_job", -2)], (),
     ["jobs[0].after_job = -2", "0 (none) or the id of another job"]),
    ("after-job-on-other-hosts", [("jobs", two_jobs({"id": 1, "hosts": ["h0", "h2"]},
                                                    {"id": 2, "hosts": "all", "after_job": 1}))],
     (), ["jobs[1].after_job = 1", "must be a subset of job 1's", "not in it: h1, h3"]),
    ("job-with-1-host", [("jobs.0.hosts", ["h0"]), ("jobs.0.rings", "single")], (),
     ["jobs[0].hosts = ['h0']", "a job needs >= 2 hosts"]),
    # grids and rings
    ("ring2d-without-grid", [("jobs.0.algorithm", "ring2d_allreduce")], (),
     ["jobs[0].grid = None", "ring2d_allreduce needs grid = [rows, columns], each >= 2"]),
    ("ring2d-grid-with-1-row", [("jobs.0.algorithm", "ring2d_allreduce"),
                                ("jobs.0.grid", [1, 4])], (),
     ["jobs[0].grid = ", "1, 4", "ring2d_allreduce needs grid = [rows, columns], each >= 2"]),
    ("ring2d-grid-not-matching-hosts", [("jobs.0.algorithm", "ring2d_allreduce"),
                                        ("jobs.0.grid", [2, 3])], (),
     ["jobs[0].grid = [2, 3]", "rows x columns must equal the job's 4 hosts"]),
    ("grid-for-1d-algorithm", [("jobs.0.grid", [2, 2])], (),
     ["jobs[0].grid = ", "2, 2", "only for ring2d_allreduce"]),
    ("rail-rings-unequal", [("jobs.0.hosts", ["h0", "h1", "h2"])], (),
     ["jobs[0].rings = 'rail'", "the same number (>= 2) of the job's hosts on every rail",
      'use rings = "single" otherwise']),
    ("rail-rings-of-one-host", [("jobs.0.hosts", ["h0", "h1"])], (),
     ["jobs[0].rings = 'rail'", "the same number (>= 2)"]),
    # run
    ("seeds-count-0", [("run.seeds", 0)], (),
     ["run.seeds = 0", "a count must be >= 1 (or give a list of seeds)"]),
    ("seeds-count-negative", [("run.seeds", -2)], (), ["run.seeds = -2", "a count must be >= 1"]),
    ("seeds-not-integers", [("run.seeds", ["a"])], (),
     ["run.seeds = ['a']", "a list of integers or a count"]),
    ("seeds-empty-list", [("run.seeds", [])], (),
     ["run.seeds = []", "a list of integers or a count"]),
    ("timeout-0", [("run.timeout_s", 0)], (), ["run.timeout_s = 0.0", "must be > 0"]),
    ("missing-jobs", [], ("jobs",), ["jobs = []", "give [[jobs]] (collectives) or [[messages]] (single flows)"]),
]


@pytest.mark.parametrize("changes,remove,expected", [c[1:] for c in BAD],
                         ids=[c[0] for c in BAD])
def test_bad_spec_is_rejected_naming_file_key_value_and_allowed(tmp_path, changes, remove,
                                                                 expected):
    assert_spec_error(spec_with(tmp_path, *changes, remove=remove), *expected)


def test_there_are_at_least_25_distinct_bad_specs():
    assert len({c[0] for c in BAD}) == len(BAD) >= 25


def test_invalid_toml_syntax_is_a_spec_error_naming_the_file(tmp_path):
    path = write(tmp_path, 'name = "x"\n[topology\nleaves = 4\n')
    assert_spec_error(path, "not valid TOML")


def test_missing_file_is_a_spec_error_naming_the_file(tmp_path):
    path = str(tmp_path / "nope.toml")
    assert_spec_error(path, "no such file")


def test_validate_names_the_given_path_for_an_in_memory_spec():
    raw = copy.deepcopy(BASE)
    raw["topology"]["routing"] = "spray"
    with pytest.raises(SpecError, match=r"^<memory>: topology.routing = 'spray': allowed"):
        validate(raw, "<memory>")


def test_validate_does_not_modify_the_raw_dict():
    raw = copy.deepcopy(BASE)
    raw["run"] = {"seeds": 2}
    before = copy.deepcopy(raw)
    spec = validate(raw, "<memory>")
    assert raw == before
    assert spec.run.seeds == (1, 2)


@pytest.mark.parametrize("value", [5, "fast"])
def test_run_section_that_is_not_a_table_is_a_spec_error(tmp_path, value):
    path = write(tmp_path, to_toml(dict(copy.deepcopy(BASE), run=value)))
    assert_spec_error(path, "[run] must be a table")


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


# --- jobs.layout / wire_bytes / theoretical_cct_s ---------------------------------------

def dilate(seconds: float) -> float:
    return seconds * 1000.0


def test_table1_layout_is_4_rail_rings_of_4_ranks():
    spec = load(TABLE1)
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.job == 1 and lay.algorithm == "ring_allreduce"
    assert lay.hosts == tuple(f"h{i}" for i in range(16))
    assert lay.rings == ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
    assert lay.grid is None
    assert lay.nbytes == 262144 * 4
    assert lay.steps == 6
    assert lay.passes == 4
    assert lay.ring_size == 4
    assert lay.bus_factor == pytest.approx(1.5)
    assert lay.ring_of(9) == (1, 5, 9, 13)
    assert lay.compute_gap_s == 0.0 and lay.start_s == 0.0


def test_layout_converts_gap_and_start_with_the_time_scale():
    spec = load(TABLE1, ["jobs.0.compute_gap_us=50", "jobs.0.start_ms=2"])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.compute_gap_s == pytest.approx(0.05)
    assert lay.start_s == pytest.approx(2.0)


def test_layout_single_ring_over_all_hosts():
    spec = load(TABLE1, ['jobs.0.rings="single"'])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.rings == (tuple(range(16)),)
    assert lay.ring_size == 16
    assert lay.nbytes == 262144 * 16
    assert lay.steps == 30


def test_layout_sorts_listed_hosts_numerically_not_lexically():
    spec = load(TABLE1, ['jobs.0.hosts=["h10", "h2", "h14", "h6"]'])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.hosts == ("h2", "h6", "h10", "h14")
    assert lay.rings == ((0, 1, 2, 3),)           # all on rail 2
    assert lay.steps == 6


def test_layout_ring2d_grid_row_by_row():
    spec = load(TABLE1, ['jobs.0.algorithm="ring2d_allreduce"', "jobs.0.grid=[4, 4]"])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.grid == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    assert lay.rings == lay.grid
    assert lay.nbytes == 262144 * 4               # chunk x columns
    assert lay.steps == 2 * 3 + 2 * 3
    assert lay.ring_size == 16
    assert lay.bus_factor == pytest.approx(2 * 15 / 16)


def test_layout_size_bytes_is_the_buffer_per_rank():
    raw = {"topology": {"kind": "dumbbell", "hosts": 4},
           "jobs": [{"id": 3, "hosts": "all", "rings": "single", "size_bytes": 65536,
                     "algorithm": "ring_reducescatter"}]}
    spec = validate(raw, "<memory>")
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.nbytes == 65536
    assert lay.steps == 3
    assert lay.bus_factor == pytest.approx(0.75)


@pytest.mark.parametrize("payload,mtu,expected", [
    (4096, 4096, 4096 + 58),          # one full packet: 14 Eth + 20 IP + 8 UDP + 12 BTH + 4 ICRC
    (0, 4096, 58),                    # an empty message is still one packet
    (1, 4096, 59),
    (4097, 4096, 4097 + 2 * 58),
    (10000, 1024, 10000 + 10 * 58),
    (262144, 4096, 262144 + 64 * 58),
])
def test_wire_bytes_adds_58_bytes_per_packet(payload, mtu, expected):
    assert jobs_mod.wire_bytes(payload, mtu) == expected


def two_rank_layout(tmp_path):
    raw = {"topology": {"kind": "dumbbell", "hosts": 2, "link_rate_gbps": 8.0},
           "jobs": [{"id": 1, "hosts": "all", "rings": "single", "chunk_bytes": 4096}]}
    spec = load(write(tmp_path, to_toml(raw)))
    return jobs_mod.layout(spec.jobs[0], spec.topology, dilate)


FRAME_S = 4154 * 8 / 8e6          # one full 4096-byte frame at 8e6 bit/s


def test_theoretical_cct_two_ranks_is_two_chunk_times_on_the_wire(tmp_path):
    lay = two_rank_layout(tmp_path)
    assert (lay.nbytes, lay.steps, lay.rings) == (8192, 2, ((0, 1),))
    # per step: 4096 payload + 58 framing = 4154 bytes at 8e6 bit/s; no latency by default
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(2 * 4154 * 8 / 8e6)
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(0.008308)


def test_theoretical_cct_adds_the_per_step_latency_once_per_step(tmp_path):
    lay = two_rank_layout(tmp_path)
    # e.g. one extra store-and-forward frame time per step (2 hops)
    got = jobs_mod.theoretical_cct_s(lay, 8e6, 4096, step_latency_s=FRAME_S)
    assert got == pytest.approx(2 * (4154 * 8 / 8e6 + FRAME_S))
    assert got == pytest.approx(0.016616)


def test_theoretical_cct_counts_framing_of_every_packet(tmp_path):
    lay = two_rank_layout(tmp_path)
    # mtu 1024: each 4096-byte step is 4 packets, 4096 + 4 * 58 = 4328 bytes
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 1024) == pytest.approx(2 * 4328 * 8 / 8e6)


def test_theoretical_cct_ring2d_2x2_uses_row_and_column_chunk_sizes(tmp_path):
    raw = {"topology": {"kind": "dumbbell", "hosts": 4},
           "jobs": [{"id": 1, "hosts": "all", "rings": "single",
                     "algorithm": "ring2d_allreduce", "grid": [2, 2], "chunk_bytes": 4096}]}
    spec = load(write(tmp_path, to_toml(raw)))
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.nbytes == 8192 and lay.steps == 4
    # row steps move 4096-byte halves, column steps 2048-byte quarters
    expected = (4154 + 2106 + 2106 + 4154) * 8 / 8e6
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(expected)


def test_theoretical_cct_table1_is_six_steps_of_a_64_packet_chunk():
    spec = load(TABLE1)
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    rate = 10e9 / spec.scale.dilation
    per_step = (262144 + 64 * 58) * 8 / rate
    assert jobs_mod.theoretical_cct_s(lay, rate, 4096) == pytest.approx(6 * per_step)


def test_transport_timers_are_real_scale_and_dilated_like_every_other_timer():
    from emulator.plan import compile

    def transport_params(spec):               # what every host of the plan gets
        return compile(spec, "baseline", 1).hosts["h0"].transport
    spec = load(TABLE1, ["scale.dilation=2000", "transport.rto_us=1000",
                         "transport.nak_timeout_us=200"])
    tp = transport_params(spec)
    assert tp.rto_s == pytest.approx(2.0) and tp.nak_timeout_s == pytest.approx(0.4)
    spec = load(TABLE1, ["scale.dilation=8000"])
    assert transport_params(spec).rto_s == pytest.approx(8.0)
