"""Emulation tests (root) of processes that serve several hosts and several switches
(docs/architecture.md §3.4, §5.1): every host keeps its own namespace, sockets and
telemetry and every switch its own agent, though they share a process -- the all-reduce
is exact, each host's packets leave by its own port, each agent answers for its own
switch, and a shared process that dies is named with every switch it served."""

import json
import os
import signal
import time

import pytest

from emulator.analysis import report
from emulator.launch import runner
from emulator.launch.fabric import LiveFabric, topology
from emulator import plan as planning
from emulator.rundir import RunFolder
from emulator.spec import load
from runtime.records import AgentStart, FlowSent, PortSample
from runtime.telemetry import read_records
from tests.conftest import _root_veths

pytestmark = pytest.mark.emulation

SPEC = ('name = "groups"\n[scale]\ndilation = 1000\nhost_processes = 1\nagent_processes = 1\n'
        '[topology]\nkind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'routing = "static"\nlink_rate_gbps = 10.0\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nrings = "rail"\nchunk_bytes = 65536\npasses = 2\n'
        '[run]\nschemes = ["baseline"]\ntimeout_s = 120\n')


@pytest.fixture
def spec_path(tmp_path):
    p = tmp_path / "groups.toml"
    p.write_text(SPEC)
    return p


def test_one_process_for_all_hosts_and_one_for_all_switches_run_an_exact_all_reduce(
        spec_path, tmp_path):
    rundir = tmp_path / "run"
    veths = _root_veths()
    meas = runner.run_one(load(str(spec_path)), "baseline", 1, str(rundir))
    assert _root_veths() <= veths and not meas.teardown_leftovers
    res = report.analyze_run(str(rundir))
    colls = [c for j in res.jobs for c in j.collectives]
    assert len(colls) == 2 and all(c.verified for c in colls), res.jobs
    assert res.fidelity.faithful, res.fidelity

    # the four hosts in one process, the four agents in another
    summaries = meas.rank_summaries
    assert {s.process["pid"] for s in summaries.values()} \
        == {summaries["h0"].process["pid"]} and len(summaries) == 4
    starts = {sw: read_records(str(rundir / f"{sw}.jsonl"), AgentStart)[0]
              for sw in ("leaf0", "leaf1", "spine0", "spine1")}
    assert len({s.pid for s in starts.values()}) == 1
    assert all(s.config["switch"] == sw for sw, s in starts.items())

    # each host's packets left by its own interface: its leaf counted data from it on
    # the port toward it (ACKs) and into it; a socket made in the wrong namespace could
    # not even have bound the host's address
    folder = RunFolder(str(rundir))
    sent = {}
    for f in folder.host_records(FlowSent):
        sent[f.src] = sent.get(f.src, 0) + f.packets
    assert sorted(sent) == sorted(s.ip for s in summaries.values())
    assert min(sent.values()) == max(sent.values()) > 0     # a ring: all send alike
    spec = load(str(spec_path))
    for sw, hosts in (("leaf0", ("h0", "h1")), ("leaf1", ("h2", "h3"))):
        ports = {}
        for r in read_records(str(rundir / f"{sw}.jsonl"), PortSample):
            ports[r.port] = max(ports.get(r.port, 0), r.pkts)
        # every packet into a host (its data, its peer's ACKs) through its own leaf port
        got = [ports.get(planning.port_toward(spec, sw, h), 0) for h in hosts]
        assert min(got) >= min(sent.values()), (sw, ports)


def test_each_agent_of_a_shared_process_answers_for_its_own_switch_and_dies_named(
        spec_path, tmp_path):
    plan = planning.compile(load(str(spec_path)), "baseline", 1)
    rundir = str(tmp_path / "fab")
    os.makedirs(rundir)
    with LiveFabric(topology(plan, rundir), rundir=rundir) as fab:
        pids = {sw.name: sw.agent_proc.pid for sw in fab.switches}
        assert len(set(pids.values())) == 1
        for sw in pids:
            stats = fab.agent(sw, {"cmd": "stats"})
            assert stats["switch"] == sw
            # its own queue models: the ports of that switch and no other
            assert all(p.startswith(sw + "-") for p in stats["queues"]), stats["queues"]
        # a command to one switch changes that switch only
        fab.agent("spine1", {"cmd": "drop_fraction", "value": 0.25})
        assert fab.agent("spine1", {"cmd": "stats"})["drop_fraction"] == 0.25
        assert fab.agent("spine0", {"cmd": "stats"})["drop_fraction"] == 0.0
        os.kill(pids["leaf0"], signal.SIGKILL)
        deadline = time.monotonic() + 5
        while fab.switches[0].agent_proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        (dead,) = runner.casualties(fab, None)
        assert dead.startswith("the switch agent of leaf0, leaf1, spine0, spine1 died "
                               "(exit -9; leaf0.agent.log)"), dead
    # every switch's final record could not be written (SIGKILL), yet nothing is left
    with open(os.path.join(rundir, "leaf0.agents.json")) as f:
        group = json.load(f)
    assert len(group["members"]) == 4
