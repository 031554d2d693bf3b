"""The multi-server prototype on one machine (root): a two-pod fabric placed on two
stand-in servers, the links between them VXLAN over an underlay (cluster.overlay)."""

import subprocess

import pytest

from emulator.analysis import report
from emulator.launch import runner
from emulator.spec import load
from tests.conftest import _root_veths

pytestmark = pytest.mark.emulation

CHUNK = 32768
PASSES = 2


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_a_job_over_two_stand_in_servers_is_verified_and_really_crosses_the_underlay(
        tmp_path):
    path = tmp_path / "servers.toml"
    path.write_text(
        'name = "servers"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\npods = 2\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'cores = 2\nservers = 2\n'
        f'[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = {CHUNK}\npasses = {PASSES}\n'
        '[run]\nschemes = ["symphony"]\ntimeout_s = 240\n')
    spec = load(str(path))
    namespaces, veths = _netns(), _root_veths()
    meas = runner.run_one(spec, "symphony", 1, str(tmp_path / "run"))
    assert _netns() == namespaces, "the stand-in servers' namespaces were left behind"
    assert _root_veths() <= veths and not meas.teardown_leftovers
    res = report.analyze_run(str(tmp_path / "run"))
    (job,) = res.jobs
    assert job.ranks == 8 and all(c.verified for c in job.collectives), job
    # Each rail ring (leaf0 -> leaf1 -> leaf2 -> leaf3) goes from pod 0 (server 0) to pod 1
    # (server 1) once and back once per step: every server sent at least its rings'
    # chunks over the underlay, plus VXLAN and RoCE headers.
    rings, steps = 2, 2 * (4 - 1)
    least = rings * steps * CHUNK * PASSES
    under = meas.underlay
    assert [u.server for u in under] == [0, 1]
    for u in under:
        assert u.tx_bytes > least and u.rx_bytes > least, (u, least)
        # nothing lost in the tunnels, and the verdict would say so if it were
        assert u.tx_dropped == u.rx_dropped == u.tx_errors == u.rx_errors == 0, u
