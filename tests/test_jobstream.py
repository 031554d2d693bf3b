"""emulator.spec.jobstream (Fig 7c's random job stream) and the sweep's per-job table."""

import os

import pytest

from emulator.spec import jobstream
from emulator.launch import sweep
from emulator.spec import load
from tests.toml_util import assert_spec_error, to_toml

SLOTS = [["h0", "h1", "h4", "h5"], ["h2", "h6"], ["h3", "h7"]]
STREAM = {"seed": 3, "slots": SLOTS, "jobs_per_slot": 4, "size_bytes": [4096, 16384],
          "passes": [1, 5], "gap_ms": [0.5, 2.0]}


def raise_error(key, value, allowed):
    raise ValueError(f"{key} = {value!r}: {allowed}")


def test_a_stream_is_a_chain_of_jobs_per_slot_with_fresh_ids():
    jobs = jobstream.expand(STREAM, raise_error)
    assert [j["id"] for j in jobs] == list(range(1, 13))
    for s, slot in enumerate(SLOTS):
        chain = jobs[4 * s:4 * s + 4]
        assert all(j["hosts"] == slot for j in chain)
        assert "after_job" not in chain[0]
        assert [j["after_job"] for j in chain[1:]] == [j["id"] for j in chain[:3]]


def test_draws_stay_in_their_ranges_and_vary():
    jobs = jobstream.expand(STREAM, raise_error)
    assert {j["size_bytes"] for j in jobs} == {4096, 16384}
    assert all(1 <= j["passes"] <= 5 for j in jobs) and len({j["passes"] for j in jobs}) > 1
    assert all(0.5 <= j["start_ms"] <= 2.0 for j in jobs)


def test_the_same_seed_gives_the_same_stream_and_another_seed_another():
    a = jobstream.expand(STREAM, raise_error)
    assert jobstream.expand(dict(STREAM), raise_error) == a
    assert jobstream.expand(dict(STREAM, seed=4), raise_error) != a


@pytest.mark.parametrize("change, words", [
    ({"colour": 1}, ["job_stream.colour", "unknown key"]),
    ({"seed": -1}, ["job_stream.seed = -1", ">= 0"]),
    ({"slots": [["h0"]]}, ["job_stream.slots", ">= 2 hosts each"]),
    ({"slots": []}, ["job_stream.slots = []", "non-empty"]),
    ({"jobs_per_slot": 0}, ["job_stream.jobs_per_slot = 0", "1..1000"]),
    ({"size_bytes": [2]}, ["job_stream.size_bytes = [2]", "byte counts"]),
    ({"passes": [0, 3]}, ["job_stream.passes = [0, 3]", "1 <= min <= max"]),
    ({"passes": [4, 2]}, ["job_stream.passes = [4, 2]", "min <= max"]),
    ({"gap_ms": [1.0]}, ["job_stream.gap_ms = [1.0]", "[min, max]"]),
])
def test_bad_stream_keys_are_named(tmp_path, change, words):
    raw = {"name": "s", "topology": {"kind": "leafspine", "leaves": 2, "spines": 2,
                                     "hosts_per_leaf": 4},
           "job_stream": dict(STREAM, **change)}
    path = tmp_path / "s.toml"
    path.write_text(to_toml(raw))
    assert_spec_error(str(path), *words)


def test_a_stream_spec_loads_into_jobs_that_share_hosts_along_chains(tmp_path):
    raw = {"name": "s", "topology": {"kind": "leafspine", "leaves": 2, "spines": 2,
                                     "hosts_per_leaf": 4},
           "job_stream": STREAM}
    path = tmp_path / "s.toml"
    path.write_text(to_toml(raw))
    spec = load(str(path))
    assert len(spec.jobs) == 12
    assert spec.jobs[1].after_job == 1 and spec.jobs[1].hosts == tuple(SLOTS[0])
    # Another stream seed, as a sweep point sets it.
    other = load(str(path), ["job_stream.seed=9"])
    assert [j.passes for j in other.jobs] != [j.passes for j in spec.jobs]


def test_a_stream_and_jobs_together_are_refused(tmp_path):
    raw = {"name": "s", "topology": {"kind": "leafspine", "leaves": 2, "spines": 2,
                                     "hosts_per_leaf": 4},
           "job_stream": STREAM,
           "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 4096}]}
    path = tmp_path / "s.toml"
    path.write_text(to_toml(raw))
    assert_spec_error(str(path), "job_stream", "instead of [[jobs]]")


def test_fig7c_spec_has_slots_of_8_4_2_2_hosts_on_rail_rings():
    spec = load(os.path.join(os.path.dirname(__file__), "..", "runs", "fig7c.toml"))
    assert sorted({len(j.hosts) for j in spec.jobs}) == [2, 4, 8]
    assert len(spec.jobs) == 12


# --- the sweep's per-job table ---------------------------------------------------------

def row(point, scheme, seed, job, ranks, jct):
    return {"point": point, "scheme": scheme, "seed": seed, "job": job, "ranks": ranks,
            "jct_s": jct}


def test_normalized_jct_pairs_the_same_point_seed_and_job():
    rows = [row("a", "baseline", 1, 1, 8, 10.0), row("a", "symphony", 1, 1, 8, 8.0),
            row("a", "baseline", 1, 2, 2, 4.0), row("a", "symphony", 1, 2, 2, 5.0),
            row("b", "baseline", 1, 1, 8, 20.0), row("b", "symphony", 1, 1, 8, 10.0),
            row("b", "symphony", 2, 1, 8, 1.0),           # no baseline for seed 2
            row("b", "baseline", 1, 2, 2, None), row("b", "symphony", 1, 2, 2, 3.0)]
    assert sweep.normalized_jct_by_size(rows) == {2: [1.25], 8: [0.8, 0.5]}
