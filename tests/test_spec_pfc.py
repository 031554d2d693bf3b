"""The lossless fabric in a spec (``topology.flow_control``, ``[pfc]``;
emulator/spec/pfc.py): HPCC ns-3's defaults as the plan gives them to every switch, and
a one-line error naming key, value and what is allowed for each setting that cannot
work."""

import os

import pytest

from emulator import plan as planning
from emulator.home import root as project_root
from emulator.routing import deadlock
from emulator.spec import load, variants, pfc as specpfc
from emulator.spec.check import SpecError
from switch_agent.config import PfcParams
from tests.test_routing_deadlock import ring

FIG9 = os.path.join(project_root(), "runs", "fig9.toml")      # a dumbbell: leaf0, 3 ports
PFC = 'topology.flow_control="pfc"'


def test_drop_tail_has_no_mmu_and_pfc_takes_hpccs_defaults():
    """Drop-tail: no MMU. With pfc at 10 Gb/s: HPCC's run.py buffer, 16 MiB x 10/50 =
    3355443 B; alpha 1/8, reserve 4 KiB, offset 3 KiB (its switch MMU); headroom two
    4154-byte frames and a 60-byte PAUSE = 8368 B; 65535 quanta."""
    plan = planning.compile(load(FIG9, ['topology.flow_control="drop"']), "baseline", 1)
    assert plan.fabric.flow_control == "drop" and plan.agents["leaf0"].pfc is None
    plan = planning.compile(load(FIG9, [PFC]), "baseline", 1)
    assert plan.fabric.flow_control == "pfc" and plan.fabric.control_priority
    assert plan.agents["leaf0"].pfc == PfcParams(
        buffer_bytes=3355443, headroom_bytes=8368, alpha=0.125, reserve_bytes=4096,
        resume_offset_bytes=3072, quanta=65535)


def test_the_buffer_follows_the_link_rate_and_the_headroom_the_reaction_time():
    """25 Gb/s: 16 MiB x 25/50 = 8 MiB. A 1 us reaction (real scale) at 10 Gb/s adds
    1250 B of headroom, at any dilation: the bytes in flight are rate x time, and the
    dilation divides one and multiplies the other."""
    spec = load(FIG9, [PFC, "topology.link_rate_gbps=25.0"])
    assert planning.compile(spec, "baseline", 1).agents["leaf0"].pfc.buffer_bytes == 8 << 20
    for d in (1000, 4000):
        spec = load(FIG9, [PFC, "pfc.reaction_us=1.0", f"scale.dilation={d}"])
        assert planning.compile(spec, "baseline", 1).agents["leaf0"].pfc.headroom_bytes \
            == 8368 + 1250


@pytest.mark.parametrize("setting, key, allowed", [
    ("topology.flow_control='lossless'", "topology.flow_control = 'lossless'",
     "allowed: drop, pfc"),
    ("pfc.alpha=0.0", "pfc.alpha = 0.0", "must be > 0: a finite number in (0, 64]"),
    ("pfc.alpha=-0.5", "pfc.alpha = -0.5", "must be > 0"),
    ("pfc.headroom_bytes=2000000", "pfc.headroom_bytes = 2000000",
     "leaf0's 3 ports' headroom and reserve (3 x 2004096 B) take all of the 3355443-byte "
     "buffer: the headroom must be below 1114385 B"),
    ("pfc.headroom_bytes=4000", "pfc.headroom_bytes = 4000",
     "must be 0 (auto: 8368 B) or at least one 4154-byte frame"),
    ("pfc.buffer_bytes=30000", "pfc.buffer_bytes = 30000",
     "leaf0's 3 ports' headroom and reserve (3 x 12464 B) take all of the 30000-byte buffer"),
    ("pfc.resume_offset_bytes=500000", "pfc.resume_offset_bytes = 500000",
     "must be below the XOFF threshold of an empty buffer, alpha x shared = 0.125 x "
     "3318051 = 414756 B (leaf0)"),
    ("pfc.quanta=0", "pfc.quanta = 0", "must be >= 1: an integer in 1..65535"),
])
def test_settings_that_cannot_work_are_one_line_errors(setting, key, allowed):
    with pytest.raises(SpecError) as e:
        load(FIG9, [PFC, setting])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{FIG9}: {key}: ") and allowed in msg, msg


def test_pfc_settings_are_not_judged_on_a_drop_tail_fabric():
    assert load(FIG9, ['topology.flow_control="drop"', "pfc.headroom_bytes=4000"]) \
        .pfc.headroom_bytes == 4000


def test_routes_that_could_deadlock_are_refused_and_a_link_down_that_makes_them_too(
        monkeypatch):
    """The leaf-spine's routes never loop (tests/test_routing_deadlock.py), so a static
    fabric with a link down passes; a fabric whose routes hold a cycle is refused by
    topology.routing, and one where only a link down makes one, by that perturbation."""
    spec = ["topology.kind='leafspine'", "topology.routing='static'",
            "jobs=[{id = 1, chunk_bytes = 65536}]", "messages=[]",
            "perturbations=[{kind = 'link_down', switch = 'leaf0', toward = 'spine1', "
            "at_ms = 1.0}]"]
    base = os.path.join(project_root(), "runs", "table1.toml")
    load(base, [PFC] + spec[1:2] + spec[4:])
    monkeypatch.setattr(specpfc.graph, "from_topology", lambda topo, rate: ring())
    with pytest.raises(SpecError, match=r"topology.routing = 'static': with topology"
                                        r".flow_control = 'pfc', these routes hold a cycle"):
        load(base, [PFC] + spec[1:2] + spec[4:])
    real = deadlock.dependencies
    monkeypatch.setattr(specpfc.deadlock, "dependencies",
                        lambda fab, down=(): real(fab, down) if down else {})
    with pytest.raises(SpecError, match=r"perturbations\[0\] = 'link_down': .*this link down"
                                        r" leaves a cycle of links that can pause each other"):
        load(base, [PFC] + spec[1:2] + spec[4:])



def test_a_spec_without_the_key_is_drop_tail_and_the_papers_figures_are_lossless():
    """The schema's default is drop-tail (a spec of one's own); every spec in runs/ that
    reproduces the paper (a [[paper]] table) says pfc, the paper's fabric."""
    from emulator.launch import reproduce
    assert load(os.path.join(project_root(), "runs", "two-servers.toml")).topology \
        .flow_control == "drop"
    figs = reproduce.figures()
    assert len(figs) >= 13
    for fig in figs:
        path = os.path.join(project_root(), "runs", fig + ".toml")
        if fig.startswith("paper-"):     # an item table: its paper row (and fabric row,
            # where the fabric is an item: paper-fig5's ours is drop-tail) is lossless
            sets = dict(variants(load(path)))
            rows = [n for n in sets if n in ("paper", "fabric") or n.endswith("-paper")]
            assert any(n == "paper" or n.endswith("-paper") for n in rows), fig
            for row in rows:
                assert load(path, sets[row]).topology.flow_control == "pfc", (fig, row)
            continue
        assert load(path).topology.flow_control == "pfc", fig
