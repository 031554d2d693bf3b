"""Real-server mode (``--servers user@host,...``, cluster.servers) over real ssh (root).

The servers are a lab that outlives each run, as real machines do: two stand-in servers
(network namespaces on an underlay bridge, each running Debian's sshd on its underlay
address) and a coordinator machine (a namespace of its own on the underlay, where
``symphony-emu`` runs as a user would run it on theirs). The coordinator reaches the
servers only through the user's ssh set-up, here an ssh_config file naming the key and
the servers' host keys; nothing of the lab is made by the run, so whatever the run
leaves there is really left."""

import os
import signal
import subprocess
import sys
import time

import pytest

from emulator.launch import ledger
from emulator.rundir import RunFolder
from topologies.wiring import REPO_ROOT
from cluster.overlay import StandInServers
from cluster.ssh import SSHD

pytestmark = [pytest.mark.emulation,
              pytest.mark.skipif(not os.path.exists(SSHD),
                                 reason=f"no {SSHD} (scripts/setup.sh installs openssh-server)")]

SPEC = ('name = "{name}"\n[scale]\ndilation = 2000\n'
        '[topology]\nkind = "leafspine"\npods = 2\nleaves = 2\nspines = 2\nhosts_per_leaf = 2\n'
        'cores = 2\n'
        '[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = {chunk}\npasses = {passes}\n'
        '[run]\nschemes = ["baseline"]\nseeds = [1]\ntimeout_s = 240\n')


class Lab:
    def __init__(self, state: str):
        self.servers = StandInServers(2, tag=f"r{os.getpid()}")
        self.servers.start()
        self.servers.start_ssh(state)
        self.servers.access.close()          # the lab's own connections: not the run's
        self.servers.access = None
        self.config = os.path.join(state, "user_ssh_config")
        with open(self.config, "w") as f:    # what a user's ~/.ssh/config would say
            f.write(f"Host 192.168.250.*\n  User root\n"
                    f"  IdentityFile {os.path.join(state, 'id_ed25519')}\n"
                    "  IdentitiesOnly yes\n"
                    f"  UserKnownHostsFile {os.path.join(state, 'known_hosts')}\n"
                    "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n")
        self.targets = [f"root@{self.servers.address(i)}" for i in range(2)]

    def coordinator(self, *argv, **kw) -> list[str]:
        return ["ip", "netns", "exec", self.servers.coordinator_ns, *argv]

    def symphony(self, *args) -> list[str]:
        return self.coordinator(sys.executable, "-m", "emulator", *args)

    def run_args(self, spec, out, *extra) -> list[str]:
        return ["run", str(spec), "--servers", ",".join(self.targets), "--set",
                f"topology.ssh_config={self.config}", "--no-plots", "--out", str(out), *extra]

    def others(self, server: int) -> list[int]:
        """Processes in the server's namespace besides the lab's own sshd listener and
        its sessions (an sshd session of a dead connection may linger until TCP gives
        up: it is the lab's, not the run's)."""
        pids = subprocess.run(["ip", "netns", "pids", self.servers.server_ns[server]],
                              capture_output=True, text=True).stdout.split()
        out = []
        for p in map(int, pids):
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() not in ("sshd", "sshd-session"):
                        out.append(p)
            except OSError:
                pass
        return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(str(tmp_path_factory.mktemp("lab")))
    try:
        yield lab
    finally:
        assert not lab.servers.stop()


def _wait(cond, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.2)
    return cond()


def _read(path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _server_records(rundir, server: int) -> list[dict]:
    return ledger.read(str(rundir / "servers" / f"s{server}"))


def test_a_job_on_servers_given_as_user_at_host_is_verified_faithful_and_leaves_nothing(
        lab, tmp_path):
    from emulator.analysis import report
    spec = tmp_path / "real.toml"
    spec.write_text(SPEC.format(name="real", chunk=32768, passes=2))
    out = tmp_path / "out"
    r = subprocess.run(lab.symphony(*lab.run_args(spec, out, "--set",
                                                  "topology.underlay_gbps=1")),
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    # each server was reached and checked over the user's ssh before the run
    for i in range(2):
        assert f"server s{i} root@192.168.250.{i + 1}: " in r.stdout, r.stdout[:2000]
        assert f"underlay 192.168.250.{i + 1} on underlay" in r.stdout
    run = out / "baseline-seed1"
    res = report.analyze_run(str(run))
    (job,) = res.jobs
    assert job.ranks == 8 and all(c.verified for c in job.collectives), job
    assert res.fidelity.faithful, res.fidelity.reasons
    meas = RunFolder(str(run)).measurements
    assert set(meas.cpu_busy_servers) == {"s0", "s1"}
    # the underlay over the run, against the 1 Gb/s given: what crossed, and its share
    for u in meas.underlay:
        assert u.capacity_bps == 1e9 and u.tx_bytes > 100_000, u
        assert u.utilisation == pytest.approx(max(u.tx_bps, u.rx_bps) / 1e9)
        assert 0 < u.utilisation < 0.8
    # the coordinator's ledger says how to reach and clean each server; each server's
    # own ledger holds every node shell placed there and every process started there
    recs = ledger.read(str(run))
    assert [(x["name"], x["label"]) for x in recs if x["kind"] == "server"] == \
        [("s0", lab.targets[0]), ("s1", lab.targets[1])]
    nodes = {0: {"h0", "h1", "h2", "h3", "leaf0", "leaf1", "spine0", "spine1", "core0"},
             1: {"h4", "h5", "h6", "h7", "leaf2", "leaf3", "spine2", "spine3", "core1"}}
    for i in range(2):
        there = _server_records(run, i)
        shells = [x for x in there if x["kind"] == "node"]
        assert {x["name"] for x in shells} == nodes[i]
        assert all(x["pid"] and x["start"] and x["netns"] for x in shells), shells
        names = [x["name"] for x in there if x["kind"] == "process"]
        assert any("hosts.group" in n for n in names) and any("agent" in n for n in names), \
            names
        # nothing the run started there is left: every recorded process is gone, and the
        # server's namespace holds only the lab's sshd
        assert _wait(lambda: not any(ledger.alive(x["pid"], x.get("start")) for x in there),
                     10), there
        assert _wait(lambda: lab.others(i) == [], 10), lab.others(i)
        # no interface or rule of the run in the server's own namespace (the VXLAN ends
        # were made there and moved into the nodes, whose namespaces are gone)
        ns = lab.servers.server_ns[i]
        links = subprocess.run(["ip", "-n", ns, "-o", "link", "show"], capture_output=True,
                               text=True, check=True).stdout
        assert sorted(x.split(": ")[1].split("@")[0] for x in links.splitlines()) == \
            ["lo", "underlay"], links
        rules = subprocess.run(["ip", "netns", "exec", ns, "iptables", "-S"],
                               capture_output=True, text=True, check=True).stdout
        assert [r for r in rules.splitlines() if not r.startswith("-P ")] == [], rules


def _ports_to(lab, address: str) -> list[str]:
    """The coordinator's local ports of its established ssh connections to ``address``."""
    out = subprocess.run(lab.coordinator("ss", "-Htn", "state", "established", "dst",
                                         f"{address}:22"),
                         capture_output=True, text=True, check=True).stdout
    return [line.split()[-2].rsplit(":", 1)[1] for line in out.splitlines() if line.strip()]


def test_a_server_cut_off_when_the_coordinator_dies_is_cleaned_from_its_own_ledger(
        lab, tmp_path):
    """The coordinator is SIGKILLed while server s1 cannot hear it (its connection's
    packets dropped both ways), so s1's sessions never hang up and what the run started
    there keeps running; ``clean`` on the coordinator then reaches s1 over a new ssh
    connection and removes exactly what s1's ledger names. s0 heard the connection end:
    its sessions' hangups ended everything, and its clean finds nothing."""
    spec = tmp_path / "long.toml"
    spec.write_text(SPEC.format(name="long", chunk=262144, passes=40))
    out = tmp_path / "out"
    p = subprocess.Popen(lab.symphony(*lab.run_args(spec, out)), cwd=REPO_ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    run = out / "baseline-seed1"
    rules = []
    try:
        started = _wait(lambda: any("hosts.group" in x.get("name", "")
                                    for x in _server_records(run, 1)), 120)
        if not started:
            p.kill()
            pytest.fail(f"the run never started its hosts: {p.communicate()[0][-3000:]!r}")
        time.sleep(1.0)
        ports = _ports_to(lab, lab.servers.address(1))
        assert ports, "no ssh connection to s1"
        for port in ports:
            for chain, flag in (("OUTPUT", "--sport"), ("INPUT", "--dport")):
                rule = [chain, "-p", "tcp", flag, port, "-j", "DROP"]
                subprocess.run(lab.coordinator("iptables", "-I", *rule), check=True)
                rules.append(rule)
        p.send_signal(signal.SIGKILL)
        p.wait()
        shells1 = [x for x in _server_records(run, 1) if x["kind"] == "node"]
        assert _wait(lambda: lab.others(0) == [], 15), lab.others(0)
        assert all(ledger.alive(x["pid"], x["start"]) for x in shells1), \
            "s1's node shells should outlive a coordinator it cannot hear"
        cl = subprocess.run(lab.symphony("clean", str(out)), cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=120)
        assert cl.returncode == 0, cl.stdout + cl.stderr
        for x in shells1:
            assert f"s1: node {x['name']} (pid {x['pid']})" in cl.stdout, cl.stdout
        assert "s0: " not in cl.stdout, cl.stdout
        assert not any(ledger.alive(x["pid"], x.get("start"))
                       for x in _server_records(run, 1) if x["kind"] in ("node", "process"))
        assert _wait(lambda: lab.others(1) == [], 10), lab.others(1)
        assert ledger.state(str(run)) == "cleaned"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for rule in rules:
            subprocess.run(lab.coordinator("iptables", "-D", *rule))


def test_servers_that_cannot_take_the_fabric_are_refused_before_anything_starts(lab,
                                                                                 tmp_path):
    spec = tmp_path / "real.toml"
    spec.write_text(SPEC.format(name="refused", chunk=32768, passes=1))
    # a server that does not answer: named, with what ssh said
    out = tmp_path / "unreachable"
    args = lab.run_args(spec, out)
    args[args.index("--servers") + 1] = f"{lab.targets[0]},root@192.168.250.9"
    r = subprocess.run(lab.symphony(*args), cwd=REPO_ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and not out.exists(), r.stderr
    assert "the servers are not ready" in r.stderr
    assert "server s1 (root@192.168.250.9): no ssh connection within" in r.stderr, r.stderr
    # an underlay that cannot carry the fabric's jumbo frames plus VXLAN's 50 bytes
    ns = lab.servers.server_ns[1]
    subprocess.run(["ip", "-n", ns, "link", "set", "underlay", "mtu", "1500"], check=True)
    try:
        out = tmp_path / "mtu"
        r = subprocess.run(lab.symphony(*lab.run_args(spec, out)), cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["ip", "-n", ns, "link", "set", "underlay", "mtu", "9100"], check=True)
    assert r.returncode == 2 and not out.exists(), r.stderr
    assert ("server s0 (root@192.168.250.1): a 9050-byte frame (the fabric's 9000-byte MTU "
            "plus VXLAN's 50) does not reach 192.168.250.2") in r.stderr, r.stderr
    assert "server s1 (root@192.168.250.2): a 9050-byte frame" in r.stderr, r.stderr


def test_a_server_lost_mid_run_ends_the_run_loudly_and_the_teardown_finishes(lab, tmp_path):
    """Server s1's ssh sessions die while the job runs (as when a server or the network to
    it goes): the run stops as broken, naming what died there, the teardown does not wait
    on the lost nodes' shells (Mininet would, for ever), and nothing is left on either
    server."""
    spec = tmp_path / "long.toml"
    spec.write_text(SPEC.format(name="lost", chunk=262144, passes=40))
    out = tmp_path / "out"
    p = subprocess.Popen(lab.symphony(*lab.run_args(spec, out)), cwd=REPO_ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = out / "baseline-seed1"
    try:
        # the job runs on s1 once one of its hosts reports a step done (set-up is over:
        # a server lost in set-up is a set-up error, not this test's case)
        assert _wait(lambda: '"progress"' in _read(run / "h4.host.out"), 120), "never started"
        sessions = subprocess.run(["ps", "-o", "pid=", "--ppid", str(lab.servers.sshd[1].pid)],
                                  capture_output=True, text=True).stdout.split()
        assert sessions
        for pid in sessions:                 # the lab's own sshd's sessions on server 1
            os.kill(int(pid), signal.SIGKILL)
        said, _ = p.communicate(timeout=180)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1, said[-3000:]
    assert (run / "measurements.json").exists(), said[-3000:]
    meas = RunFolder(str(run)).measurements
    assert any("core1, leaf2, leaf3, spine2, spine3 died" in b for b in meas.broken), meas
    lost = sorted(x.split()[1] for x in meas.teardown_leftovers)
    assert lost == ["core1", "h4", "h5", "h6", "h7", "leaf2", "leaf3", "spine2", "spine3"], \
        meas.teardown_leftovers
    assert ledger.state(str(run)) == "closed"
    assert _wait(lambda: lab.others(0) == [] and lab.others(1) == [], 10), \
        (lab.others(0), lab.others(1))
