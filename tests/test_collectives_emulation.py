"""Emulation tests of the collectives on the fabric, through the experiment runner (root)."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from emulator.analysis import report
from emulator.launch import runner
from emulator.rundir import RunFolder
from emulator.spec import load
from tests.conftest import _root_veths
from topologies.wiring import REPO_ROOT

pytestmark = pytest.mark.emulation


def _spec(tmp_path, topology: str, job: str, name="t") -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\n[topology]\n{topology}\n[[jobs]]\n{job}\n'
                    '[run]\nschemes = ["baseline"]\ntimeout_s = 240\n')
    return str(path)


def _run(spec_path, rundir, scheme="baseline", overrides=()):
    spec = load(spec_path, list(overrides))
    veths = _root_veths()
    meas = runner.run_one(spec, scheme, 1, rundir)
    assert _root_veths() <= veths, "a run left veth interfaces behind"
    assert not meas.teardown_leftovers, meas.teardown_leftovers
    return report.analyze_run(rundir), meas


def _all_verified(result):
    colls = [c for j in result.jobs for c in j.collectives]
    return colls and all(c.verified for c in colls)


def test_8_rank_ring_allreduce_is_verified(tmp_path):
    path = _spec(tmp_path, 'kind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4',
                 'hosts = "all"\nalgorithm = "ring_allreduce"\nrings = "single"\n'
                 'chunk_bytes = 65536\npasses = 2')
    res, meas = _run(path, str(tmp_path / "run"))
    assert res.jobs[0].ranks == 8
    assert _all_verified(res), res
    assert all(rc == 0 for rc in meas.host_exit.values())


def test_16_ranks_in_4_rings_static_routing_runs_near_lockstep(tmp_path):
    """Table 1's fabric, 4 rail rings of 4 ranks, static balanced routing, no perturbation:
    every result verified and the CCT close to the perfect-lockstep bound. At D = 2000:
    this tests the collective's path, not the emulator's speed. At the spec's D = 1000 a
    static run lands at 1.02-1.09x, and the monitor's emulation-error check (> 1.05x the
    fluid time) flags some of them, as it should (docs/usage.md, "Measurements")."""
    path = os.path.join(REPO_ROOT, "runs", "table1.toml")
    # One retry: this shared VM's hypervisor takes 2-15 % of the CPUs' time during some
    # runs (steal, measured 2026-12-02), which slows a run a few per cent for no fault of
    # the code; twice in a row fails.
    for attempt in (1, 2):
        res, meas = _run(path, str(tmp_path / f"run{attempt}"),
                         overrides=["topology.routing=static", "jobs.0.passes=2",
                                    "scale.dilation=2000"])
        job = res.jobs[0]
        assert job.ranks == 16 and _all_verified(res), res
        ratios = [c.cct_ratio for c in job.collectives]
        print(f"\nstatic routing, 16 ranks in 4 rings, attempt {attempt}: measured/theoretical "
              f"CCT {ratios}, max step overlap {job.max_step_overlap}, CPU "
              f"{meas.cpu_busy:.0%} (hypervisor's steal {meas.cpu_steal:.0%})")
        if max(ratios) <= 1.10 and res.fidelity.faithful:
            break
    assert max(ratios) <= 1.10
    assert res.fidelity.faithful, res.fidelity


def test_2d_ring_and_standalone_reduce_scatter_all_gather_are_verified(tmp_path):
    topo = 'kind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4'
    path = tmp_path / "multi.toml"
    path.write_text(
        f'name = "multi"\n[topology]\n{topo}\n'
        '[[jobs]]\nid = 1\nhosts = ["h0", "h1", "h4", "h5"]\nalgorithm = "ring2d_allreduce"\n'
        'rings = "single"\ngrid = [2, 2]\nchunk_bytes = 32768\n'
        '[[jobs]]\nid = 2\nhosts = ["h2", "h6"]\nalgorithm = "ring_reducescatter"\n'
        'rings = "single"\nchunk_bytes = 32768\n'
        '[[jobs]]\nid = 3\nhosts = ["h3", "h7"]\nalgorithm = "ring_allgather"\n'
        'rings = "single"\nchunk_bytes = 32768\n'
        '[run]\nschemes = ["symphony"]\ntimeout_s = 240\n')
    res, _ = _run(str(path), str(tmp_path / "run"), scheme="symphony")
    assert [j.job for j in res.jobs] == [1, 2, 3]
    assert _all_verified(res), res


def test_ctrl_c_in_the_middle_of_a_run_leaves_nothing_behind(tmp_path):
    veths = _root_veths()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "run", os.path.join(REPO_ROOT, "runs", "table1.toml"),
         "--out", str(out), "--scheme", "baseline", "--set", "jobs.0.passes=20"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    # Wait until the collective is under way (progress is printed), then interrupt.
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "steps" in line and "/" in line:
            break
    assert any("steps" in x for x in lines), "".join(lines)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(lines) + rest
    assert "interrupted" in rest
    assert _root_veths() <= veths
    leftover = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout
    assert not leftover.strip(), f"processes of the run still alive: {leftover}"
    with open(out / "baseline-seed1" / "manifest.json") as f:
        assert json.load(f)["scheme"] == "baseline"


def test_halving_doubling_allreduce_is_verified_and_talks_to_its_butterfly_partners(tmp_path):
    """The collective added through the registry alone (hosts/collectives/
    halving_doubling.py): 8 ranks, 2 x 3 steps per pass, every result exact, and each
    step's flow goes to the partner at distance N/2, N/4, N/8 (reduce-scatter), then
    N/8, N/4, N/2 (all-gather)."""
    path = _spec(tmp_path, 'kind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4',
                 'hosts = "all"\nalgorithm = "halving_doubling_allreduce"\nrings = "single"\n'
                 'chunk_bytes = 32768\npasses = 2')
    res, meas = _run(path, str(tmp_path / "run"))
    assert res.jobs[0].ranks == 8 and _all_verified(res), res
    assert len(res.jobs[0].collectives) == 2
    ip = {f"10.{r // 4}.{r % 4}.2": r for r in range(8)}       # rank r = host hr
    flows = RunFolder(str(tmp_path / "run")).flows()
    assert len(flows) == 8 * 6 * 2
    for f in flows:
        distance = [4, 2, 1, 1, 2, 4][f.step % 6]
        assert ip[f.dst] == ip[f.src] ^ distance, f
    assert all(rc == 0 for rc in meas.host_exit.values())


def test_one_pass_of_block_rings_is_verified_and_half_its_flows_cross_the_spines(tmp_path):
    """Table 1 as the paper ran it, scaled to 16 hosts (issue 18): ``rings = "blocks"``
    with rings of 8 over 4 leaves of 4 hosts is two rings, each two consecutive hosts of
    every leaf. One all-reduce: every rank verified, every flow goes to the rank's ring
    successor, and exactly half of them (the leaf-to-leaf hops) take a spine."""
    from emulator.analysis import export
    from emulator.spec import rings as ring_layout
    path = _spec(tmp_path, 'kind = "leafspine"\nleaves = 4\nspines = 2\nhosts_per_leaf = 4',
                 'hosts = "all"\nalgorithm = "ring_allreduce"\nrings = "blocks"\n'
                 'ring_size = 8\nchunk_bytes = 32768\npasses = 1')
    rundir = str(tmp_path / "run")
    res, meas = _run(path, rundir, overrides=["scale.dilation=2000"])
    assert res.jobs[0].ranks == 16 and _all_verified(res), res
    expected = ring_layout.rings([f"h{i}" for i in range(16)], 4, "blocks", 8)
    assert expected == ((0, 1, 4, 5, 8, 9, 12, 13), (2, 3, 6, 7, 10, 11, 14, 15))
    successor = {f"h{r[i]}": f"h{r[(i + 1) % 8]}" for r in expected for i in range(8)}
    export.write_tables(rundir)                         # flows.csv, as a user reads it
    with open(os.path.join(rundir, "flows.csv"), newline="") as f:
        flows = list(csv.DictReader(f))
    assert len(flows) == 16 * 14                        # every rank, every step
    assert all(f["dst"] == successor[f["src"]] for f in flows)
    crossing = [f for f in flows if "spine" in f["path"]]
    assert all(f["path"] for f in flows)                # the agents saw every flow's path
    assert len(crossing) == len(flows) // 2
    assert all(int(f["src"][1:]) // 4 != int(f["dst"][1:]) // 4 for f in crossing)
