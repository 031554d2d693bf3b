"""Stand-in servers reached over real ssh (root): each stand-in server's namespace runs
Debian's sshd on its underlay address, and the coordinator, in a namespace of its own on
the underlay, reaches it only through that sshd with the run's key (cluster.ssh)."""

import os
import subprocess

import pytest

from cluster.overlay import StandInServers
from cluster.ssh import SSHD
from tests.conftest import _root_veths

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(not os.path.exists(SSHD),
                                 reason=f"no {SSHD} (scripts/setup.sh installs openssh-server)")]


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _pids_of(paths: list[str]) -> list[int]:
    """Processes whose network namespace is one of the named ones (by inode)."""
    inodes = {os.stat(p).st_ino for p in paths if os.path.exists(p)}
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in inodes:
                out.append(int(pid))
        except OSError:
            pass
    return out


def test_commands_and_files_reach_each_stand_in_server_only_over_its_sshd(tmp_path):
    before_ns, before_veths = _netns(), _root_veths()
    privsep = os.path.isdir("/run/sshd")
    servers = StandInServers(2, tag=f"t{os.getpid()}")
    servers.start()
    try:
        access = servers.start_ssh(str(tmp_path / "ssh"))
        ns_paths = [f"/run/netns/{n}" for n in servers.created]
        for i in range(2):
            # the command ran in server i's own namespace, where its underlay address is
            out = access.run(i, "readlink /proc/self/ns/net; ip -4 -o addr show dev underlay")
            inode, addr = out.stdout.decode().splitlines()
            assert inode == f"net:[{os.stat(f'/run/netns/{servers.server_ns[i]}').st_ino}]"
            assert f" {servers.address(i)}/24 " in addr
            # one multiplexed connection per server, as Mininet Cluster Edition keeps
            assert os.path.exists(access.control_socket(i))
        # files there and back, byte for byte (a config out, telemetry back)
        blob = tmp_path / "config.json"
        blob.write_bytes(os.urandom(200_000))
        access.put(1, str(blob), str(tmp_path / "server1" / "run" / "h8.host.json"))
        access.get(1, str(tmp_path / "server1" / "run" / "h8.host.json"),
                   str(tmp_path / "back.json"))
        assert (tmp_path / "back.json").read_bytes() == blob.read_bytes()
        # a failing command names the server and what it said
        with pytest.raises(RuntimeError, match=r"server s0 \(192\.168\.250\.1\).*exited 3"):
            access.run(0, "echo broken >&2; exit 3")
        # only the run's key gets in: another key is refused (ssh's 255), and the
        # coordinator's namespace reaches nothing but the underlay
        other = tmp_path / "other_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                       check=True)
        def login(key):
            return subprocess.run(
                [*access.wrap, "ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o",
                 f"UserKnownHostsFile={tmp_path / 'ssh' / 'known_hosts'}", "-o",
                 "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o",
                 "IdentityAgent=none", "-i", str(key), f"root@{servers.address(0)}", "true"],
                capture_output=True, timeout=30)
        assert login(access.key).returncode == 0
        refused = login(other)
        assert refused.returncode == 255 and b"denied" in refused.stderr, refused.stderr
        routes = subprocess.run(["ip", "-n", servers.coordinator_ns, "-4", "route"],
                                capture_output=True, text=True).stdout
        assert routes.split() and "default" not in routes
        in_namespaces = _pids_of(ns_paths)
        assert in_namespaces, "the sshds and the ssh masters should be in the namespaces"
    finally:
        stuck = servers.stop()
    assert not stuck
    assert _netns() == before_ns, "namespaces left behind"
    assert _root_veths() <= before_veths
    assert not [p for p in in_namespaces if os.path.exists(f"/proc/{p}")
                and open(f"/proc/{p}/stat").read().split()[2] != "Z"], "processes left behind"
    assert os.path.isdir("/run/sshd") == privsep


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def test_a_two_pod_fabric_is_built_node_by_node_through_the_servers_sshds(tmp_path):
    from emulator.launch.fabric import LiveFabric
    from cluster.nodes import ServerNodes
    from topologies.leafspine import LeafSpineTopo
    before_ns, before_veths = _netns(), _root_veths()
    nodes = ServerNodes(2, leaves=1, spines=1, hosts_per_leaf=2, pods=2, cores=1, ssh=True)
    topo = LeafSpineTopo(leaves=1, spines=1, hosts_per_leaf=2, pods=2, cores=1, nodes=nodes,
                         with_agent=False, rundir=str(tmp_path))
    shells = []
    with LiveFabric(topo) as fab:
        net = fab.net
        servers = topo.overlay
        for node in net.hosts + net.switches:
            # the node's shell was started by an sshd session in its server's namespace
            # (its own namespace made there), not by this process
            parent = _parent(node.pid)
            assert _comm(parent) == "sshd", (node.name, _comm(parent))
            server_ns = os.stat(f"/run/netns/{servers.server_ns[node.server]}").st_ino
            assert os.stat(f"/proc/{parent}/ns/net").st_ino == server_ns, node.name
            assert os.stat(f"/proc/{node.pid}/ns/net").st_ino != server_ns
            shells.append(node.pid)
        h0, h1, h2 = net.get("h0"), net.get("h1"), net.get("h2")
        assert (h0.server, h1.server, h2.server) == (0, 0, 1)
        # configured through its remote shell: addresses, routes, the leaf's shaping
        assert "htb" in net.get("leaf0").cmd("tc qdisc show")
        for dst in (h1, h2):              # within server 0, and across to server 1
            out = h0.cmd(f"ping -c 3 -i 0.2 -W 2 {dst.IP()}")
            assert " 0% packet loss" in out, out
        # the cross-server hops went over the underlay between the servers
        crossed = servers.counters()
        assert all(c["tx_packets"] >= 6 and c["rx_packets"] >= 6 for c in crossed), crossed
    assert _netns() == before_ns, "namespaces left behind"
    assert _root_veths() <= before_veths
    assert not [p for p in shells if os.path.exists(f"/proc/{p}")
                and open(f"/proc/{p}/stat").read().split()[2] != "Z"], "node shells left"


def test_switch_agents_run_on_their_servers_and_their_telemetry_comes_back_over_ssh(tmp_path):
    from emulator.launch.fabric import LiveFabric
    from runtime.records import AgentFinal
    from runtime.telemetry import read_records
    from cluster.nodes import ServerNodes
    from topologies.leafspine import LeafSpineTopo
    before_ns = _netns()
    nodes = ServerNodes(2, leaves=1, spines=1, hosts_per_leaf=1, pods=2, cores=1, ssh=True)
    topo = LeafSpineTopo(leaves=1, spines=1, hosts_per_leaf=1, pods=2, cores=1, nodes=nodes,
                         agent_processes=2, rundir=str(tmp_path))
    with LiveFabric(topo) as fab:
        net = fab.net
        for sw in net.switches:
            # each agent process is a child of an sshd session on its switch's server
            # (pid from the file it wrote there), in the namespace of the switch it was
            # started from, one of the same server (it serves the others from there)
            lead = sw.agent_leader
            assert lead.server == sw.server
            pid = int(topo.overlay.access.run(sw.server, ["cat", lead._pid_file()]).stdout)
            chain, p = [], pid
            while p > 1 and len(chain) < 6:
                p = _parent(p)
                chain.append(_comm(p))
            assert "sshd" in chain, (sw.name, chain)
            assert os.stat(f"/proc/{pid}/ns/net").st_ino == \
                os.stat(f"/proc/{lead.pid}/ns/net").st_ino
            # its control socket answers through the switch's shell on that server
            assert fab.agent(sw.name, {"cmd": "stats"})["switch"] == sw.name
        out = net.get("h0").cmd(f"ping -c 20 -i 0.05 -W 2 {net.get('h1').IP()}")
        assert " 0% packet loss" in out, out
        # nothing of the agents' is in the run folder until they stop
        assert not (tmp_path / "spine1.jsonl").exists()
    for sw in ("leaf0", "spine0", "core0", "spine1", "leaf1"):
        (final,) = read_records(str(tmp_path / f"{sw}.jsonl"), AgentFinal)
        # every echo request and reply crossed every switch once (plus nothing else)
        assert final.counters["total"]["pkts"] == 40, (sw, final.counters["total"])
    server1 = tmp_path / "servers" / "s1"
    assert (server1 / "spine1.jsonl").read_bytes() == (tmp_path / "spine1.jsonl").read_bytes()
    assert _netns() == before_ns


def test_a_job_over_two_ssh_reached_servers_is_verified_faithful_and_leaves_nothing(tmp_path):
    from emulator.analysis import report
    from emulator.launch import runner
    from emulator.spec import load
    path = tmp_path / "servers.toml"
    path.write_text(
        'name = "servers-ssh"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\npods = 2\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'cores = 2\nservers = 2\nssh = true\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = 32768\npasses = 2\n'
        '[run]\nschemes = ["symphony"]\ntimeout_s = 240\n')
    before_ns, before_veths = _netns(), _root_veths()
    privsep = os.path.isdir("/run/sshd")
    run = tmp_path / "run"
    meas = runner.run_one(load(str(path)), "symphony", 1, str(run))
    assert _netns() == before_ns and _root_veths() <= before_veths
    assert not meas.teardown_leftovers and os.path.isdir("/run/sshd") == privsep
    res = report.analyze_run(str(run))
    (job,) = res.jobs
    assert job.ranks == 8 and all(c.verified for c in job.collectives), job
    assert res.fidelity.faithful, res.fidelity.reasons
    # each server's CPU, read from its /proc/stat over its ssh: stand-ins share this
    # machine's CPUs, so each reads what the machine's meter read (within the ssh delay)
    servers = meas.cpu_busy_servers
    assert set(servers) == {"s0", "s1"}, servers
    assert all(abs(b - meas.cpu_busy) < 0.1 for b in servers.values()), (servers, meas)
    # t = 0 reached every host process over ssh; each recorded what it saw
    clocks = [s.clock for s in meas.rank_summaries.values()]
    assert len(clocks) == 8 and all(0 <= c["offset_s"] < 0.05 for c in clocks), clocks
    # each server's files were written in its own folder and came back over ssh
    for server, hosts in ((0, range(4)), (1, range(4, 8))):
        there = run / "servers" / f"s{server}"
        for h in hosts:
            assert (there / f"h{h}.jsonl").read_bytes() == (run / f"h{h}.jsonl").read_bytes()
            assert not (run / "servers" / f"s{1 - server}" / f"h{h}.jsonl").exists()
        assert {p.name for p in there.glob("*.agent.pid")}, there
    # the protocol lines came back on the ssh channel, one file per host
    assert all((run / f"h{h}.host.out").read_text().count('"ready"') == 1 for h in range(8))


def _processes_naming(path: str) -> list[int]:
    """Live processes whose command line names ``path`` (this test's own folder)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if path.encode() in f.read() and open(f"/proc/{pid}/stat").read().split()[2] != "Z":
                    out.append(int(pid))
        except OSError:
            pass
    return out


def test_a_sigkilled_run_over_ssh_leaves_nothing_after_clean(tmp_path):
    import sys
    import time
    from emulator.launch import ledger
    from tests.test_robust_run_emulation import left_behind, start, wait_for
    from topologies.wiring import REPO_ROOT
    spec = tmp_path / "servers.toml"
    spec.write_text(
        'name = "killed-ssh"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\npods = 2\nleaves = 1\nspines = 1\nhosts_per_leaf = 2\n'
        'cores = 1\nservers = 2\nssh = true\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = 65536\npasses = 8\n'
        '[run]\nschemes = ["symphony"]\nseeds = [1]\ntimeout_s = 120\n')
    before_ns, privsep = _netns(), os.path.isdir("/run/sshd")
    out = tmp_path / "killed"
    p = start(spec, out)
    rundir = out / "symphony-seed1"
    started = wait_for(lambda: any(r["kind"] == "process" and ".group.json" in r["name"]
                                   for r in ledger.read(str(rundir))), 90)
    if not started:
        p.kill()
        pytest.fail(f"the run never started its host processes: {p.communicate()[0][-3000:]}")
    time.sleep(1.0)
    p.kill()
    p.wait()
    # the ssh clients die with the runner; every session's hangup ends what it ran
    assert wait_for(lambda: _processes_naming(str(tmp_path)) == [], 15), \
        _processes_naming(str(tmp_path))
    cl = subprocess.run([sys.executable, "-m", "emulator.cli", "clean", str(out)],
                        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert cl.returncode == 0, cl.stderr
    assert left_behind(out) == [] and _netns() == before_ns
    # folders made outside the run folder: the ssh control sockets' (pytest's run folder
    # is too deep for a socket address) and the sshds' privilege-separation folder, if
    # this run made it
    made = [r["path"] for r in ledger.read(str(rundir)) if r["kind"] == "dir"]
    assert any("symphony-emu-ssh-" in d for d in made), made
    assert not [d for d in made if os.path.isdir(d)], made
    assert privsep or not os.path.isdir("/run/sshd")
