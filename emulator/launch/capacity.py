"""The size guard: whether this machine can emulate a run plan — hosts, processes,
memory — asked before anything starts (``symphony-emu run``, ``sweep``, ``cli``; the
flow-level model of ``predict`` runs any size). ``--force-size`` skips it.

The figures come from the scale benchmark (``benchmarks/scale.py``, docs/usage.md "Scale"), on
this kind of machine (2 cores):

* **hosts**: 64 hosts were the most it emulated faithfully (at D = 16000; 32 hosts at
  D = 4000), and the limit is the CPUs, so :data:`HOSTS_PER_CORE` = 32 per core.
* **memory**: a host process peaked at 67 MB resident and so did a switch agent, from 8
  to 64 hosts (:data:`PROCESS_MB`). A rank also holds its collective's buffers: its own,
  the expected result, and every source rank's input while that result is computed
  (``hosts/collectives/expected.py``): (ring members + 4) x its bytes (measured: 82 MB
  for 16 members of 4 MB, ``hosts.rank.build``); a run verified by checksums
  (``RunPlan.verify``, docs/architecture.md §4) holds a block of each message in flight and
  the elements' codes instead (:func:`emulator.plan.memory.rank_bytes`). Each Mininet
  node is a shell of a few MB (:data:`SHELL_MB`). All of it must fit in
  :data:`MEMORY_SHARE` of what the kernel reports available (``MemAvailable`` in
  ``/proc/meminfo``), which counts what other runs on the machine already use.
* **processes**: one shell per node, the host processes and agent processes (one per
  CPU by default, each serving several hosts or switches, :data:`SERVED_MB` for each),
  two iperf3 per background flow; they must fit in the user's process limit
  (``RLIMIT_NPROC``) when there is one.

Pure except :func:`this_machine`, which reads the machine.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

from emulator import plan as planning
from emulator.plan import memory as verify_memory, placement
from cluster.placement import VXLAN_OVERHEAD_BYTES, server_of_nodes

PER_PROCESS = 8                   # hosts (or switches) one process serves by default, at most


def default_processes(n: int) -> int:
    """How many processes serve ``n`` hosts (or switch agents) by default: one per CPU (a
    process spends more CPU waking up than moving packets, and each extra runnable one
    delays the others), more when that would put more than PER_PROCESS in one."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(n, max(cpus, -(-n // PER_PROCESS))))


HOSTS_PER_CORE = 32          # benchmarks/scale.py: 64 hosts faithful on 2 cores
PROCESS_MB = 67              # benchmarks/scale.py: peak RSS of a host process, of an agent
SERVED_MB = 2                # a host's or a switch's own state in a process serving several
SHELL_MB = 4                 # a Mininet node's bash (measured: 2.2 MB without a prompt)
MEMORY_SHARE = 0.8           # of MemAvailable; the rest for the kernel and Mininet
MB = 1 << 20
# a 4 KB RoCE frame (the transport's default MTU) carried over VXLAN, its outer headers
# on top
UNDERLAY_OVERHEAD = 1 + VXLAN_OVERHEAD_BYTES / 4096


@dataclass(frozen=True)
class Machine:
    cpus: int
    mem_available_bytes: int
    max_processes: int | None = None     # RLIMIT_NPROC, None: unlimited
    # the cores of each server a fabric is placed on; None: stand-in servers, sharing
    # this machine's cpus evenly
    server_cpus: tuple[float, ...] | None = None
    # real servers: each one's available memory, and its underlay's capacity (None:
    # unknown) -- read over ssh (cluster.servers.preflight)
    server_mem_bytes: tuple[int, ...] | None = None
    server_underlay_bps: tuple[float | None, ...] | None = None


@dataclass(frozen=True)
class Demand:
    nodes: int               # Mininet hosts + switches (a namespace shell each)
    hosts: int               # hosts of the topology
    processes: int
    memory_bytes: int
    buffer_bytes: int        # of that, the ranks' collective buffers
    hosts_per_server: tuple[int, ...] = ()   # a fabric placed on several servers
    cut_bps_per_server: tuple[float, ...] = ()  # emulated rate of its links to others,
                                                # each way (emulator.plan.placement)


def demand(plan) -> Demand:
    """What a compiled run plan (``emulator.plan.compile``) needs of the machine."""
    hosts = plan.fabric.leaves * plan.fabric.pods * plan.fabric.hosts_per_leaf
    nodes = hosts + len(plan.agents)
    started = sum(t.what.processes for t in plan.perturbations if not t.undo)
    # the host and agent processes, each serving several (emulator.launch.launcher)
    served = (min(len(plan.hosts), plan.host_processes or default_processes(len(plan.hosts)))
              + min(len(plan.agents),
                    plan.agent_processes or default_processes(len(plan.agents))))
    processes = nodes + served + started
    if plan.verify == "checksums":
        buffers = sum(verify_memory.rank_bytes(lay) * len(lay.hosts) for lay in plan.layouts)
    else:
        buffers = sum((_members(r.group) + 4) * _largest_bytes(r)
                      for cfg in plan.hosts.values() for r in cfg.ranks)
    memory = (nodes * SHELL_MB + served * PROCESS_MB
              + (len(plan.hosts) + len(plan.agents)) * SERVED_MB) * MB + buffers
    f = plan.fabric
    per_server, cut = (), ()
    if f.servers > 1 or f.server_targets:
        where = server_of_nodes(f.leaves, f.spines, f.hosts_per_leaf, f.pods, f.cores,
                                f.servers)
        per_server = tuple(sum(1 for h in plan.hosts if where[h] == i)
                           for i in range(f.servers))
        pairs = placement.plan(f, f.servers, f.rate_bps).cut_rate_bps
        cut = tuple(sum(r for pair, r in pairs.items() if i in pair)
                    for i in range(f.servers))
    return Demand(nodes, hosts, processes, memory, buffers, per_server, cut)


def refusals(d: Demand, m: Machine) -> list[str]:
    """Why this machine cannot emulate ``d`` (empty: it can), each naming the limit and
    where it comes from."""
    out = []
    max_hosts = HOSTS_PER_CORE * m.cpus
    real = m.server_mem_bytes is not None      # real servers: nothing runs here
    if real:
        out += _server_refusals(d, m)
    elif d.hosts > max_hosts:
        out.append(f"{d.hosts} hosts: more than the {max_hosts} this machine emulates "
                   f"faithfully ({HOSTS_PER_CORE} per core x {m.cpus} cores; the scale "
                   "benchmark, benchmarks/scale.py, measured 64 hosts faithful on 2 cores)")
    if d.hosts_per_server:
        n = len(d.hosts_per_server)
        cores = m.server_cpus or (m.cpus / n,) * n
        for i, (h, c) in enumerate(zip(d.hosts_per_server, cores)):
            if h > HOSTS_PER_CORE * c:
                out.append(f"server {i}: {h} hosts placed on it, more than the "
                           f"{HOSTS_PER_CORE * c:g} its {c:g} cores emulate faithfully "
                           f"({HOSTS_PER_CORE} per core, benchmarks/scale.py"
                           f"{'' if m.server_cpus else '; stand-in servers share this machine'})")
    budget = MEMORY_SHARE * m.mem_available_bytes
    if not real and d.memory_bytes > budget:
        out.append(f"needs about {d.memory_bytes / MB:,.0f} MB ({d.processes} processes: "
                   f"{PROCESS_MB} MB per host or agent process as the scale benchmark "
                   f"measured and {SERVED_MB} MB per host and switch it serves, {SHELL_MB} MB "
                   f"per node shell, plus {d.buffer_bytes / MB:,.0f} MB of collective "
                   "buffers), more than "
                   f"{MEMORY_SHARE:.0%} of the {m.mem_available_bytes / MB:,.0f} MB "
                   "available (MemAvailable, /proc/meminfo)")
    if m.max_processes is not None and d.processes > m.max_processes:
        out.append(f"{d.processes} processes: more than this user's limit of "
                   f"{m.max_processes} (RLIMIT_NPROC)")
    return out


def _server_refusals(d: Demand, m: Machine) -> list[str]:
    """Real servers: each one's share of the memory (by its hosts) within its own, and
    the cut links' rate within its underlay (VXLAN's bytes included)."""
    out = []
    for i, h in enumerate(d.hosts_per_server):
        need = d.memory_bytes * h / max(1, d.hosts)
        have = MEMORY_SHARE * m.server_mem_bytes[i]
        if need > have:
            out.append(f"server {i}: its {h} hosts need about {need / MB:,.0f} MB, more "
                       f"than {MEMORY_SHARE:.0%} of its {m.server_mem_bytes[i] / MB:,.0f} MB "
                       "available")
    for i, cut in enumerate(d.cut_bps_per_server):
        cap = (m.server_underlay_bps or (None,) * len(d.cut_bps_per_server))[i]
        need = cut * UNDERLAY_OVERHEAD
        if cap and need > cap:
            out.append(f"server {i}: its links to other servers carry up to "
                       f"{need / 1e9:.3g} Gb/s each way at their emulated rates (VXLAN "
                       f"included), more than its underlay's {cap / 1e9:.3g} Gb/s: raise D "
                       "or set topology.underlay_gbps if the interface's speed is wrong")
    return out


def this_machine() -> Machine:
    avail_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail_kb = int(line.split()[1])
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    return Machine(cpus=len(os.sched_getaffinity(0)), mem_available_bytes=avail_kb * 1024,
                   max_processes=None if soft == resource.RLIM_INFINITY else soft)


def with_servers(m: Machine, facts, underlay_bps: float = 0.0) -> Machine:
    """``m`` (this machine, the coordinator) with the real servers' ``facts``
    (``cluster.servers.ServerFacts``): their cores, memory and underlay."""
    from dataclasses import replace
    return replace(m, server_cpus=tuple(float(f.cpus) for f in facts),
                   server_mem_bytes=tuple(f.mem_available_bytes for f in facts),
                   server_underlay_bps=tuple(underlay_bps or f.speed_bps for f in facts))


def check(spec, scheme: str, seed: int, machine: Machine | None = None) -> list[str]:
    """:func:`refusals` of ``spec``'s plan for ``scheme`` and ``seed`` on this machine
    (with real servers, ``machine`` should carry their facts: :func:`with_servers`)."""
    m = machine or this_machine()
    hosts = len(spec.topology.host_names)
    if hosts > HOSTS_PER_CORE * m.cpus and m.server_mem_bytes is None:
        # a huge fabric: refused before compiling
        return refusals(Demand(hosts, hosts, hosts, 0, 0), m)
    return refusals(demand(planning.compile(spec, scheme, seed)), m)


def _members(group) -> int:
    """Ranks in a rank's group: a ring (ids) or a grid's rows (tuples of ids)."""
    return sum(len(x) if isinstance(x, tuple) else 1 for x in group)


def _largest_bytes(rank) -> int:
    return max(c[0] for c in rank.program) if rank.program else rank.nbytes
