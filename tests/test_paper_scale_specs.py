"""The specs at the paper's own sizes (runs/paper-scale/): 128 and 512 nodes, the paper's
Table 1 layout with 8 MB steps. They load and compile, their ranks verify by checksums
(real buffers would pass the memory budget), and the emulator refuses them in one line
that names the size and ``--backend sim``."""

import glob
import os

import pytest

from emulator import cli
from emulator import plan as planning
from emulator.spec import load
from tests.test_capacity import as_root  # noqa: F401  (the fixture)

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALE = os.path.join(MAIN, "runs", "paper-scale")
SIZES = {"table1-8mb": 32, "table2-128": 128, "table2-512": 512, "fig6-128": 128,
         "fig7ab-128": 128, "fig7c-128": 128}


def test_the_folder_holds_the_paper_scale_specs():
    assert sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(SCALE, "*.toml"))) \
        == sorted(SIZES)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_each_runs_the_papers_fabric_and_verifies_by_checksums(name):
    spec = load(os.path.join(SCALE, f"{name}.toml"))
    assert spec.name == name
    assert len(spec.topology.host_names) == SIZES[name]
    assert spec.profile == "hpcc" and spec.topology.flow_control == "pfc"
    assert spec.topology.link_rate_gbps == 10.0 and spec.paper      # the paper's claims
    verify = planning.verification(spec)
    assert verify.asked == "auto" and verify.mode == "checksums"
    assert verify.buffers_bytes > 4e9 and "verified by checksums" in verify.line()
    assert planning.compile(spec, "symphony", 1).verify == "checksums"


def test_the_128_node_specs_hold_the_papers_rings_of_4():
    for name in ("table2-128", "fig6-128"):
        (lay,) = planning.layouts(load(os.path.join(SCALE, f"{name}.toml")))
        assert len(lay.hosts) == 128 and sorted({len(r) for r in lay.rings}) == [4]
        assert len(lay.rings) == 32


def test_the_512_node_spec_is_four_pods_at_one_to_eight():
    spec = load(os.path.join(SCALE, "table2-512.toml"))
    assert (spec.topology.pods, spec.topology.oversubscription) == (4, 8.0)
    (lay,) = planning.layouts(spec)
    assert len(lay.rings) == 32 and {len(r) for r in lay.rings} == {16}


def test_fig7c_at_128_runs_jobs_of_16_32_and_64_nodes_of_the_papers_sizes():
    spec = load(os.path.join(SCALE, "fig7c-128.toml"))
    assert sorted({len(j.hosts) for j in spec.jobs}) == [16, 32, 64]
    assert {j.size_bytes for j in spec.jobs} <= {4 << 20, 16 << 20, 32 << 20}


@pytest.mark.parametrize("name", ["table2-128", "table2-512"])
def test_the_emulator_refuses_them_in_one_line_naming_the_size_and_the_simulator(
        name, tmp_path, capsys, as_root):  # noqa: F811
    path = os.path.join(SCALE, f"{name}.toml")
    code = cli.main(["run", path, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and as_root == [] and not (tmp_path / "out").exists()
    assert err.count("\n") == 1
    assert err.startswith(f"symphony-emu run: {path}: too large for this machine: "
                          f"{SIZES[name]} hosts")
    assert "--backend sim simulates it in virtual time" in err
