"""benchmarks/host_cpu.py's bookkeeping: which ledger processes are ranks and agents, and
wake-ups and CPU counted from t = 0 to each process's last sample."""

import importlib.util
import os

import pytest

from tests.records_util import rank_summary

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "host_cpu_benchmark", os.path.join(HERE, "..", "benchmarks", "host_cpu.py"))
host_cpu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(host_cpu)


@pytest.mark.parametrize("name,kind", [
    ("h8: -m hosts.group --config h8.group.json", "ranks"),      # as the ledger names them
    ("spine2: -m switch_agent --config spine2.agent.json", "agents"),
    ("h1: tcpdump -i h1-eth0 -w x.pcap", None),
])
def test_ledger_processes_are_sorted_into_ranks_and_agents(name, kind):
    assert host_cpu.process_kind(name) == kind


def test_a_proc_sample_reads_switches_and_cpu_of_a_live_process():
    cs, invol, cpu, kernel = host_cpu.proc_sample(os.getpid())
    assert cs >= invol >= 0 and cs > 0 and cpu > 0 and 0 <= kernel <= cpu
    assert host_cpu.proc_sample(2 ** 22 + 1) is None          # beyond pid_max: no process


def test_wakeups_and_cpu_count_only_from_t0_to_the_last_sample(tmp_path):
    s = host_cpu.Sampler(str(tmp_path))
    s.procs = {10: ("ranks", "h0"), 11: ("ranks", "h1"), 20: ("agents", "leaf0")}
    s.series = {
        # set-up before t = 5 (CPU-heavy, few switches) must not count
        10: [(1.0, 5, 1, 0.0, 0.0), (4.9, 9, 2, 0.30, 0.1), (5.0, 10, 2, 0.31, 0.1),
             (7.0, 410, 42, 0.51, 0.18)],
        11: [(5.2, 0, 0, 0.0, 0.0), (6.2, 300, 30, 0.1, 0.04)],
        20: [(5.0, 0, 0, 0.0, 0.0)],            # one sample from t = 0 on: not measured
    }
    d = s.during(5.0)
    # (seconds, switches, involuntary, CPU s, kernel CPU s): 200 and 300 wake-ups/s, 0.3
    # CPU-s in all, 0.12 of it in the kernel
    assert d["ranks"] == [pytest.approx((2.0, 400, 40, 0.20, 0.08)),
                          pytest.approx((1.0, 300, 30, 0.1, 0.04))]
    assert d["agents"] == []


def test_a_host_process_serving_several_hosts_counts_its_cpu_once():
    # each host's summary carries the process's CPU at the time it finished
    rows = [rank_summary("h0", cpu_s=1.0, process={"pid": 7, "hosts": 2, "cpu_s": 2.0}),
            rank_summary("h1", cpu_s=1.5, process={"pid": 7, "hosts": 2, "cpu_s": 3.0}),
            rank_summary("h2", cpu_s=0.5, process={"pid": 9, "hosts": 1, "cpu_s": 0.5})]
    assert host_cpu.host_process_cpu_s(rows) == pytest.approx(3.5)


def test_all_in_adds_ranks_and_agents_per_data_packet_and_the_cpus_the_bound_needs():
    ranks = {"run_cpu_s": 1.2, "run_kernel_cpu_s": 0.5, "run_us_per_pkt": 120.0}
    agents = {"run_cpu_s": 0.8, "run_kernel_cpu_s": 0.3, "run_us_per_pkt": 20.0}
    a = host_cpu.all_in(ranks, agents, data_packets=10_000, bound_s=4.0, cpus=2)
    # 2.0 CPU-s over 10 000 data packets; 2.0 CPU-s in a 4 s bound: half a CPU
    assert a == pytest.approx({"us_per_pkt": 200.0, "kernel_us_per_pkt": 80.0,
                               "cpus_at_bound": 0.5, "kernel_cpus_at_bound": 0.2, "cpus": 2})
    assert host_cpu.all_in(ranks, {**agents, "run_us_per_pkt": None}, 10_000, 4.0, 2) == {}
