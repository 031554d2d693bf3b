"""``topology.paths``: each run seed draws the flows' ECMP paths anew ("per_seed", the
default) or every seed takes one fixed draw ("fixed", ``path_seed``), as HPCC's ns-3
seeds each switch's hash by its node id and ASTRA-sim numbers the ports the same way
every run. The simulator, the flow model and the plan (ports, the emulated switches'
kernel hash seeds) all follow it; bad values are one-line errors."""

import csv
import os

import pytest

from emulator import plan as planning
from emulator.cli import main as cli_main
from emulator.launch.predict import predict_one
from emulator.spec import load
from emulator.spec.check import SpecError
from tests.spec_ext_util import TABLE1
from topologies.wiring import kernel_hash_seed

FIXED = ['topology.paths="fixed"']


def paths_of(tmp_path, sets, name):
    """{(pass, step, src): its path} of each baseline seed 1..3 of the main job, simulated."""
    out = tmp_path / name
    rc = cli_main(["run", TABLE1, "--backend", "sim", "--seeds", "3", "--scheme", "baseline",
                   "--no-plots", "--out", str(out), "--set", "jobs.0.passes=1",
                   *[a for s in sets for a in ("--set", s)]])
    assert rc == 0
    seeds = []
    for seed in (1, 2, 3):
        with open(out / f"baseline-seed{seed}" / "flows.csv") as f:
            seeds.append({(r["pass"], r["step"], r["src"]): r["path"] for r in csv.DictReader(f)})
    return seeds


def test_fixed_paths_are_the_same_every_seed_and_per_seed_paths_are_not(tmp_path):
    fixed = paths_of(tmp_path, FIXED, "fixed")
    assert len(fixed[0]) == 16 * 6 and fixed[0] == fixed[1] == fixed[2]
    drawn = paths_of(tmp_path, [], "drawn")
    assert drawn[0] != drawn[1] and drawn[1] != drawn[2]
    other = paths_of(tmp_path, FIXED + ["topology.path_seed=7"], "other")
    assert other[0] == other[2] != fixed[0]          # another draw, again fixed


def test_the_plan_salts_ports_and_kernel_hashes_by_the_draw_not_the_seed():
    for seed in (1, 2):
        plan = planning.compile(load(TABLE1, FIXED + ["topology.path_seed=5"]), "symphony", seed)
        assert plan.fabric.path_seed == 5 and plan.path_seed == 5
        assert {h.transport.sport_seed for h in plan.hosts.values()} == {5}
    drawn = planning.compile(load(TABLE1), "symphony", 3)
    assert drawn.fabric.path_seed is None and drawn.path_seed == 3
    assert {h.transport.sport_seed for h in drawn.hosts.values()} == {3}
    seeds = {kernel_hash_seed(f"leaf{i}", 0) for i in range(4)} | \
        {kernel_hash_seed(f"spine{i}", 0) for i in range(4)}
    assert len(seeds) == 8 and 0 not in seeds and max(seeds) < 2**32
    assert kernel_hash_seed("leaf0", 0) != kernel_hash_seed("leaf0", 1)


def test_the_flow_model_takes_the_fixed_draw_too():
    def paths(sets, seed):
        res, _ = predict_one(load(TABLE1, sets), "baseline", seed)
        return sorted((k, tuple(p)) for k, p in res.paths.items())
    assert paths(FIXED, 1) == paths(FIXED, 2)
    assert paths([], 1) != paths([], 2)


@pytest.mark.parametrize("key, value, allowed", [
    ("topology.paths", '"random"', "allowed: per_seed, fixed"),
    ("topology.path_seed", "-1", "an integer in 0..2147483647"),
    ("topology.path_seed", "1.5", "must be an integer"),
])
def test_a_bad_path_draw_is_a_one_line_error(key, value, allowed):
    with pytest.raises(SpecError) as e:
        load(TABLE1, [f"{key}={value}"])
    msg = str(e.value)
    assert key in msg and allowed in msg and "\n" not in msg
