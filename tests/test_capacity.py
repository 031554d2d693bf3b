"""The size guard (emulator/launch/capacity.py): a spec larger than the machine can
emulate is refused before anything starts, naming the limit and where it comes from;
``--force-size`` overrides it; ``predict`` never asks."""

import os

import pytest

from emulator import cli
from emulator.cli import common
from emulator import plan as planning
from emulator.launch import capacity
from emulator.spec import load

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE1 = os.path.join(MAIN, "runs", "table1.toml")
MB = 1 << 20
TWO_CORES = capacity.Machine(cpus=2, mem_available_bytes=24_000 * MB)
TWO_EACH = ["scale.host_processes=2", "scale.agent_processes=2"]    # not this machine's default


def test_table1s_demand_counts_every_process_and_buffer():
    plan = planning.compile(load(TABLE1, TWO_EACH), "symphony", 1)
    d = capacity.demand(plan)
    # 16 hosts + 8 switches: 24 shells, 2 host processes, 2 agent processes
    assert (d.nodes, d.hosts, d.processes) == (24, 16, 28)
    # 4 rail rings of 4: a rank's buffer is 4 chunks of 256 KB; (4 + 4) of them per rank
    assert d.buffer_bytes == 16 * (4 + 4) * 4 * 262144
    assert d.memory_bytes == (24 * 4 + 4 * 67 + 24 * 2) * MB + d.buffer_bytes
    # one process per host and per switch: the processes and their memory
    one_each = capacity.demand(planning.compile(
        load(TABLE1, ["scale.host_processes=16", "scale.agent_processes=8"]), "symphony", 1))
    assert one_each.processes == 48
    assert one_each.memory_bytes == (24 * 4 + 24 * 67 + 24 * 2) * MB + d.buffer_bytes
    assert capacity.refusals(d, TWO_CORES) == []


def test_a_background_flow_adds_two_iperf3_processes():
    spec = load(TABLE1, TWO_EACH + ['perturbations=[{kind="background", src="h0", dst="h5", '
                                    'rate_gbps=1.0, start_ms=0.0, duration_ms=1.0}]'])
    assert capacity.demand(planning.compile(spec, "symphony", 1)).processes == 30


def test_more_hosts_than_32_per_core_are_refused_naming_the_benchmark():
    assert capacity.check(load(TABLE1, ["topology.leaves=16"]), "symphony", 1, TWO_CORES) == []
    (why,) = capacity.check(load(TABLE1, ["topology.leaves=17"]), "symphony", 1, TWO_CORES)
    assert why == ("68 hosts: more than the 64 this machine emulates faithfully (32 per core "
                   "x 2 cores; the scale benchmark, benchmarks/scale.py, measured 64 hosts "
                   "faithful on 2 cores)")
    four = capacity.Machine(cpus=4, mem_available_bytes=24_000 * MB)
    assert capacity.check(load(TABLE1, ["topology.leaves=17"]), "symphony", 1, four) == []


def test_a_1000_host_spec_is_refused_without_compiling_its_plan(monkeypatch):
    monkeypatch.setattr(planning, "compile", lambda *a: pytest.fail("compiled"))
    spec = load(TABLE1, ["topology.leaves=125", "topology.hosts_per_leaf=8"])
    (why,) = capacity.check(spec, "symphony", 1, TWO_CORES)
    assert why.startswith("1000 hosts: more than the 64")


def test_memory_beyond_80_percent_of_memavailable_is_refused_with_the_sums():
    spec = load(TABLE1, TWO_EACH + ["jobs.0.chunk_bytes=67108864", "jobs.0.passes=1",  # 64 MiB
                                    "run.verify=buffers"])
    d = capacity.demand(planning.compile(spec, "symphony", 1))
    assert d.buffer_bytes == 16 * 8 * 4 * 64 * MB                 # 32 GiB
    (why,) = capacity.refusals(d, TWO_CORES)
    assert why.startswith(f"needs about {d.memory_bytes / MB:,.0f} MB (28 processes: 67 MB "
                          "per host or agent process as the scale benchmark measured and 2 MB "
                          "per host and switch it serves, 4 MB per node shell, plus 32,768 MB "
                          "of collective buffers)")
    assert why.endswith("more than 80% of the 24,000 MB available (MemAvailable, /proc/meminfo)")
    big = capacity.Machine(cpus=2, mem_available_bytes=64_000 * MB)
    assert capacity.refusals(d, big) == []


def test_a_run_verified_by_checksums_needs_its_messages_not_its_buffers():
    """The same 64 MiB run, its ranks verifying by checksums (what run.verify = auto
    takes for it): four 256 KiB blocks of its messages and a byte per element of its 256
    MiB buffer each, and it fits."""
    spec = load(TABLE1, TWO_EACH + ["jobs.0.chunk_bytes=67108864", "jobs.0.passes=1"])
    plan = planning.compile(spec, "symphony", 1)
    assert plan.verify == "checksums"
    d = capacity.demand(plan)
    assert d.buffer_bytes == 16 * (MB + 64 * MB)                     # 1 GiB, not 32
    assert capacity.refusals(d, TWO_CORES) == []


def test_a_process_limit_is_a_refusal():
    d = capacity.demand(planning.compile(load(TABLE1, TWO_EACH), "symphony", 1))
    tight = capacity.Machine(cpus=2, mem_available_bytes=24_000 * MB, max_processes=20)
    assert capacity.refusals(d, tight) == ["28 processes: more than this user's limit of 20 "
                                           "(RLIMIT_NPROC)"]


def test_this_machine_reads_meminfo_and_the_cpus_it_may_use():
    m = capacity.this_machine()
    assert m.cpus == len(os.sched_getaffinity(0)) >= 1
    with open("/proc/meminfo") as f:
        total_kb = next(int(x.split()[1]) for x in f if x.startswith("MemTotal:"))
    assert 0 < m.mem_available_bytes <= total_kb * 1024


# --- the command line -------------------------------------------------------------------

@pytest.fixture
def as_root(monkeypatch):
    """The command line as root on a 2-core machine with 24 GB free; a run that would
    start exits with code 99 instead (and is recorded)."""
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(capacity, "this_machine", lambda: TWO_CORES)
    from emulator.launch import runner
    started = []
    monkeypatch.setattr(runner, "run_one", lambda *a, **k: started.append(a) or
                        (_ for _ in ()).throw(SystemExit(99)))
    return started


def test_run_refuses_a_too_large_spec_before_anything_starts(tmp_path, capsys, as_root):
    out = tmp_path / "out"
    code = cli.main(["run", TABLE1, "--set", "topology.leaves=17", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and as_root == [] and not out.exists()
    assert err == (f"symphony-emu run: {TABLE1}: too large for this machine: 68 hosts: more "
                   "than the 64 this machine emulates faithfully (32 per core x 2 cores; the "
                   "scale benchmark, benchmarks/scale.py, measured 64 hosts faithful on 2 "
                   "cores); --backend sim simulates it in virtual time, --force-size "
                   "emulates it anyway\n")


def test_force_size_runs_it_anyway(tmp_path, as_root):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", TABLE1, "--set", "topology.leaves=17", "--force-size",
                  "--out", str(tmp_path / "out")])
    assert e.value.code == 99 and len(as_root) == 1           # the runner was called


def test_sweep_refuses_the_point_that_is_too_large(tmp_path, capsys, as_root):
    code = cli.main(["sweep", TABLE1, "--param", "topology.leaves=2,17",
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and as_root == [] and not (tmp_path / "out").exists()
    assert f"{TABLE1} (topology.leaves=17): too large for this machine: 68 hosts" in err


def test_sweep_names_a_bad_point_instead_of_a_traceback(tmp_path, capsys, as_root):
    code = cli.main(["sweep", TABLE1, "--param", "scale.dilation=2000,inf",
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"symphony-emu sweep: {TABLE1}: scale.dilation = inf: must be > 0")


def test_predict_has_no_size_guard(tmp_path, capsys, as_root, monkeypatch):
    from emulator.launch import predict
    monkeypatch.setattr(predict, "run_predict", lambda *a: (_ for _ in ()).throw(SystemExit(98)))
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", TABLE1, "--set", "topology.leaves=32", "--out", str(tmp_path / "p")])
    assert e.value.code == 98 and "too large" not in capsys.readouterr().err


def test_a_server_given_more_hosts_than_its_cores_emulate_is_refused_by_name():
    # 3 pods of 2 x 12 hosts on 2 servers: pods go round robin, so server 0 takes two
    # (48 hosts) and server 1 one (24)
    over = ["topology.pods=3", "topology.leaves=2", "topology.spines=2",
            "topology.hosts_per_leaf=12", "topology.cores=2", "topology.servers=2"]
    d = capacity.demand(planning.compile(load(TABLE1, over), "symphony", 1))
    assert d.hosts_per_server == (48, 24)
    big = capacity.Machine(cpus=8, mem_available_bytes=24_000 * MB, server_cpus=(1, 4))
    (why,) = capacity.refusals(d, big)
    assert why.startswith("server 0: 48 hosts placed on it, more than the 32 its 1 cores")
    roomy = capacity.Machine(cpus=8, mem_available_bytes=24_000 * MB, server_cpus=(2, 1))
    assert capacity.refusals(d, roomy) == []
    # stand-in servers share this machine's cores: 4 cores, 2 each, 64 hosts a server
    shared = capacity.refusals(d, capacity.Machine(cpus=4, mem_available_bytes=24_000 * MB))
    assert shared == [] and capacity.demand(
        planning.compile(load(TABLE1), "symphony", 1)).hosts_per_server == ()


def test_real_servers_are_judged_by_their_own_cores_memory_and_underlay():
    """With real servers nothing runs on the coordinator: its cores and memory do not
    limit the fabric; each server's do (read over ssh), and the links cut between servers
    must fit each server's underlay at their emulated rates, VXLAN included."""
    from emulator.launch import capacity
    from cluster.servers import ServerFacts
    spec = load(TABLE1, ["topology.pods=2", "topology.leaves=2", "topology.spines=2",
                          "topology.hosts_per_leaf=4", "topology.cores=2",
                         'topology.servers=["root@10.0.0.2", "root@10.0.0.3"]', *TWO_EACH])
    tiny = capacity.Machine(cpus=1, mem_available_bytes=1 << 20)       # the coordinator
    big = ServerFacts("root@10.0.0.2", "10.0.0.2", "eth1", 16, 64 << 30, 25e9)
    fits = capacity.with_servers(tiny, [big, big])
    assert capacity.check(spec, "baseline", 1, fits) == []
    # 4 spine-core links cross each way at 10 Gb/s / D = 1000: 40 Mb/s each server
    slow = capacity.with_servers(tiny, [big, big], underlay_bps=30e6)
    why = capacity.check(spec, "baseline", 1, slow)
    assert len(why) == 2 and why[0].startswith(
        "server 0: its links to other servers carry up to 0.0405 Gb/s each way at their "
        "emulated rates (VXLAN included), more than its underlay's 0.03 Gb/s"), why
    small = ServerFacts("root@10.0.0.3", "10.0.0.3", "eth1", 1, 64 << 20, None)
    why = capacity.check(spec, "baseline", 1, capacity.with_servers(tiny, [big, small]))
    assert [w.split(":")[0] for w in why] == ["server 1"], why
    assert "its 8 hosts need about" in why[0] and "of its 64 MB available" in why[0]


def test_servers_on_the_command_line_reach_every_command_that_loads_the_spec():
    """``--servers a,b`` becomes topology.servers for run, cli and each sweep point."""
    import argparse
    from emulator.launch import sweep
    args = argparse.Namespace(set=["symphony.k=0.001"], servers="root@10.0.0.2, root@10.0.0.3")
    sets = common.sets(args)
    assert sets == ["symphony.k=0.001", 'topology.servers=["root@10.0.0.2", "root@10.0.0.3"]']
    two_pods = ["topology.pods=2", "topology.cores=2"]
    pts = sweep.points(TABLE1, ["symphony.tau=0.25,0.5"], two_pods + sets, None)
    assert [load(TABLE1, s).topology.server_targets for _, s in pts] == \
        [("root@10.0.0.2", "root@10.0.0.3")] * 2
    assert common.sets(argparse.Namespace(set=None)) == []
