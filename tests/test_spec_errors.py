"""Unit tests for emulator/spec/__init__.py: a bad spec is rejected naming file, key, value, allowed."""

import copy

import pytest

from emulator.spec import validate
from emulator.spec.check import SpecError
from tests.spec_util import BASE, spec_with, two_jobs, write
from tests.toml_util import assert_spec_error, to_toml


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
    ("verify-unknown", [("run.verify", "bytes")], (),
     ["run.verify = 'bytes'", "allowed: auto, buffers, checksums"]),
    ("verify-budget-0", [("run.verify_budget_gb", 0)], (),
     ["run.verify_budget_gb = 0.0", "must be > 0", " GB"]),
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
