"""Transport profiles (emulator/spec/profiles.py): ``profile = "hpcc"`` sets each of HPCC ns-3's
settings as an ordinary key, at the point where it is given, so later ``--set`` items
override any one of them and every item can be ablated alone."""

import os

import pytest

from emulator import plan as planning
from emulator.spec import profiles
from emulator.spec.schema import DcqcnSpec, SwitchSpec, TransportSpec
from emulator.spec import load
from emulator.spec.check import SpecError

RUNS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runs")
FIG5 = os.path.join(RUNS, "fig5.toml")
TABLE1 = os.path.join(RUNS, "table1.toml")         # the main job: HPCC's transport
TWO_SERVERS = os.path.join(RUNS, "two-servers.toml")  # no profile: the spec's own keys


def test_hpcc_sets_every_item_and_each_reaches_the_hosts_and_switches():
    spec = load(FIG5, ["profile=hpcc"])
    assert spec.profile == "hpcc"
    plan = planning.compile(spec, "symphony", 1)
    h = plan.hosts["h0"]
    p = h.cc.params
    assert h.cc.name == "dcqcn_mlx"
    assert (p.clamp_target_rate, p.first_cut_at_once) == (False, False)
    assert p.min_rate_bps == pytest.approx(1e9 / spec.scale.dilation)
    assert (h.transport.congestion_flag, h.transport.ack_every) == ("ack", 1)
    red = plan.agents["leaf0"].red
    assert (red.kmin_bytes, red.kmax_bytes) == (40000, 160000)
    assert red.rate_ref_bps == pytest.approx(10e9 / spec.scale.dilation)   # per port rate
    zhu = planning.compile(load(FIG5, ["profile=zhu"]), "symphony", 1)
    assert zhu.agents["leaf0"].red.rate_ref_bps == 0
    # every item is one of the profile's rows, each with where HPCC has it
    assert len(profiles.overrides("hpcc")) == len(profiles.HPCC) == 9
    assert all(where for _, _, where in profiles.HPCC)


def test_a_later_set_overrides_one_item_and_leaves_the_rest():
    spec = load(FIG5, ["profile=hpcc", "transport.congestion_flag=cnp"])
    assert spec.transport.congestion_flag == "cnp" and spec.transport.ack_every == 1
    assert spec.dcqcn.variant == "mlx"


def test_a_profile_in_the_file_overrides_the_files_own_keys(tmp_path):
    text = open(TABLE1).read() + '\n[dcqcn]\nvariant = "paper"\n'
    path = tmp_path / "table1.toml"
    path.write_text(text)
    spec = load(str(path))
    assert spec.profile == "hpcc" and spec.dcqcn.variant == "mlx"     # the file says paper
    assert load(str(path), ["dcqcn.variant=paper"]).dcqcn.variant == "paper"


def test_without_a_profile_nothing_changes():
    assert load(TWO_SERVERS).profile is None
    assert load(TWO_SERVERS).transport.congestion_flag == "cnp"
    assert load(TWO_SERVERS).transport.ack_every == 8          # as the file says
    with pytest.raises(SpecError, match="profile = 'fast': allowed: hpcc, zhu"):
        load(TABLE1, ["profile=fast"])


def test_the_papers_experiments_and_the_main_job_run_hpccs_transport():
    import glob
    for path in glob.glob(os.path.join(RUNS, "fig*.toml")) + [
            os.path.join(RUNS, "table2.toml"), os.path.join(RUNS, "table1-paper.toml"), TABLE1]:
        spec = load(path)
        assert spec.profile == "hpcc" and spec.dcqcn.variant == "mlx", path
        assert spec.transport.congestion_flag == "ack" and spec.transport.ack_every == 1
    assert load(TABLE1, ["profile=zhu"]).dcqcn.variant == "paper"   # what it ran before


def test_the_zhu_profile_sets_the_same_keys_as_hpcc_so_each_undoes_the_other():
    assert [k for k, _, _ in profiles.ZHU] == [k for k, _, _ in profiles.HPCC]
    # zhu is the spec's own defaults: what the journal (journal@827c2ab) measured before the specs took hpcc
    back = load(FIG5, ["profile=hpcc", "profile=zhu"])
    assert (back.dcqcn, back.transport, back.switch) == (DcqcnSpec(), TransportSpec(),
                                                         SwitchSpec())
