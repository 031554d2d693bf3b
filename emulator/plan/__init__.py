"""The run plan: a spec compiled, for one scheme and seed, into everything a run needs.

    plan = compile(spec, "symphony", seed=1)
    plan.hosts["h0"]          # hosts.config.HostConfig: what h0's process runs
    plan.agents["leaf0"]      # switch_agent.config.AgentConfig: leaf0's agent
    plan.fabric               # FabricPlan: shape, link and port rates, qdisc
    plan.perturbations        # emulator.perturbations.base.Timed entries
    plan.verify               # how the ranks verify: "buffers" | "checksums" (memory)

Pure: no network, no clock, no files. Everything downstream — the fabric, the launcher,
the perturbation engine, the flow-level model, the report — reads the plan and never
the spec's values again. Every real-scale quantity is converted here, once, by the
scale module (``runtime.scale``); the plan holds emulated values only (docs/architecture.md
§7, §10).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from emulator.perturbations import KINDS
from emulator.perturbations.base import Context, Timed
from emulator.plan import memory
from emulator.plan.layout import JobLayout, layout as job_layout
from emulator.plan.messages import Message, host_configs
from emulator.spec.schema import Spec
from emulator.spec.schemes import Scheme, scheme as scheme_named
from hosts.cc import CcConfig, algorithm
from hosts.config import HostConfig, RankConfig, TransportParams
from runtime import wire
from runtime.codec import Codec
from runtime.scale import Scale
from switch_agent.config import AgentConfig, RedParams, SymphonyParams
from switch_agent.queue_model import L2_HEADER_BYTES
from topologies import wiring


@dataclass(frozen=True)
class FabricPlan:
    """The fabric to build: shape and routing as in the spec, rates emulated."""
    kind: str                     # leafspine | dumbbell
    leaves: int                   # per pod
    spines: int                   # per pod
    hosts_per_leaf: int
    pods: int
    cores: int
    oversubscription: float
    servers: int
    routing: str
    rate_bps: float
    buffer_bytes: int
    port_qdisc: str               # the scheme's: fifo | pq
    slow_hops: tuple              # ((switch, toward, rate_bps), ...): slower hops from t = 0
    ssh: bool = False             # the servers reached over ssh (topology.ssh)
    server_targets: tuple = ()    # real servers, [user@]host[:port] (topology.servers)
    ssh_config: str = ""          # their ssh_config file ("": the user's own)
    underlay: tuple = ()          # their addresses for the cut links (): their sshd's)
    underlay_bps: float = 0.0     # the servers' network, per server (0: as it reports)
    flow_control: str = "drop"    # drop-tail ports | pfc: lossless (each agent's ``pfc``)
    control_priority: bool = True # pfc: ACK, NAK, CNP in a priority never paused
    path_seed: int | None = None  # topology.paths = "fixed": the draw every seed takes;
                                  # None: each run's seed draws its paths

    @property
    def port_rates(self) -> dict[str, dict[str, float]]:
        """The slow hops as Mininet sees them: {switch: {interface: rate_bps}}."""
        out: dict[str, dict[str, float]] = {}
        pods = self.pods > 1
        for sw, toward, rate in self.slow_hops:
            intf = wiring.port_toward(sw, toward, self.per_leaf, self.leaves if pods else 0,
                                      self.spines if pods else 0)
            out.setdefault(sw, {})[intf] = rate
        return out

    @property
    def per_leaf(self) -> int:
        return self.hosts_per_leaf


@dataclass(frozen=True)
class RunPlan(Codec):
    """A run folder's manifest stores it (``to_dict``); the analysis reads it back
    (``RunPlan.from_dict``) and never compiles the spec again."""
    name: str
    scheme: Scheme
    seed: int
    scale: Scale
    fabric: FabricPlan
    layouts: tuple[JobLayout, ...]
    hosts: dict[str, HostConfig]  # telemetry paths: the launcher's
    agents: dict[str, AgentConfig]   # ports, paths: the fabric's
    perturbations: tuple[Timed, ...]  # emulated seconds
    timeout_s: float              # wall clock, per run
    mtu_bytes: int
    path_hops: int                # links on the longest host-to-host path
    host_processes: int           # processes serving the hosts (0: the launcher's default)
    agent_processes: int          # processes serving the switch agents (0: likewise)
    pin_cpus: bool                # those processes on one CPU each (runtime.sched)
    verify: str = "buffers"       # how the ranks verify (emulator.plan.memory)

    @property
    def link_rate_bps(self) -> float:
        return self.fabric.rate_bps

    @property
    def path_seed(self) -> int:
        """What draws the run's ECMP paths (the hash's salt, the ports' salt): its seed, or
        the fabric's fixed draw (``topology.paths = "fixed"``)."""
        return self.seed if self.fabric.path_seed is None else self.fabric.path_seed


def compile(spec: Spec, scheme: str, seed: int) -> RunPlan:    # noqa: A001 - the verb
    """The run of ``spec`` with ``scheme`` and ``seed``."""
    sc = Scale(spec.scale.dilation)
    sch = scheme_named(scheme)
    t = spec.topology
    rate = sc.rate_bps(t.link_rate_gbps * 1e9)
    late = any(KINDS[p.kind].late_symphony for p in spec.perturbations)
    fab = FabricPlan(t.kind, t.leaves if t.kind == "leafspine" else 1,
                     t.spines if t.kind == "leafspine" else 0, t.per_leaf, t.pods, t.cores,
                     t.oversubscription, t.servers, t.routing, rate, t.buffer_bytes,
                     sch.port_qdisc, tuple(hop for p in spec.perturbations
                                           for hop in KINDS[p.kind].slow_hops(p, rate)),
                     t.ssh or bool(t.server_targets), t.server_targets,
                     os.path.expanduser(t.ssh_config) if t.ssh_config else "", t.underlay,
                     t.underlay_gbps * 1e9, t.flow_control, spec.pfc.control_priority,
                     path_draw(t))
    agents = {name: agent_config(spec, sc, sch.hook_at_start(late), seed, name)
              for name in wiring.switch_names(t)}
    lays = layouts(spec)
    verify = memory.verification(spec.run, lays).mode
    hosts = (_message_hosts(spec, sc, rate, seed) if spec.messages
             else _rank_hosts(spec, sc, rate, lays, seed, verify))
    if t.flow_control == "pfc":         # each NIC honours its leaf's PAUSE frames
        hosts = {n: replace(h, pfc=True) for n, h in hosts.items()}
    timed = _timed(spec, sc, sch, rate)
    return RunPlan(spec.name, sch, seed, sc, fab, lays, hosts, agents, timed,
                   spec.run.timeout_s, spec.transport.mtu_bytes,
                   4 if t.kind == "leafspine" and t.leaves > 1 else 2,
                   spec.scale.host_processes, spec.scale.agent_processes, spec.scale.pin_cpus,
                   verify)


def layouts(spec: Spec) -> tuple[JobLayout, ...]:
    """The spec's jobs laid out on its fabric (the same for every scheme and seed)."""
    time_s = Scale(spec.scale.dilation).time_s
    return tuple(job_layout(j, spec.topology, time_s, spec.collective.order)
                 for j in spec.jobs)


def verification(spec: Spec) -> memory.Verification:
    """How the ranks of every run of ``spec`` verify their results, and why."""
    return memory.verification(spec.run, layouts(spec))


# --- switches -----------------------------------------------------------------------------

def agent_config(spec: Spec, sc: Scale, hook: str, seed: int, switch: str) -> AgentConfig:
    sw, sy = spec.switch, spec.symphony
    return AgentConfig(
        switch=switch, scheme=hook, seed=seed,
        red=RedParams(sw.red, sw.kmin_bytes, sw.kmax_bytes, sw.pmax,
                      sc.rate_bps(spec.topology.link_rate_gbps * 1e9)
                      if sw.red_scale_with_rate else 0.0, sw.red_per_class),
        symphony=SymphonyParams(t_win_s=sy.t_win_s(sc), k=sy.k, tau=sy.tau,
                                n_warmup=sy.n_warmup, n_sample=sy.n_sample,
                                tracking=sy.tracking,
                                mark_min_queue_bytes=sy.mark_min_queue_bytes),
        trace_arrivals=sw.trace_arrivals,
        pfc=spec.pfc.params(spec.topology.link_rate_gbps, spec.transport.mtu_bytes)
        if spec.topology.flow_control == "pfc" else None,
        pfc_frame_bytes=spec.transport.mtu_bytes + wire.OVERHEAD_BYTES + L2_HEADER_BYTES,
        pfc_control_priority=spec.pfc.control_priority)


def port_toward(spec: Spec, switch: str, neighbor: str) -> str:
    """``switch``'s interface on its link to ``neighbor`` in this spec's fabric."""
    t = spec.topology
    pods = t.pods > 1
    return wiring.port_toward(switch, neighbor, t.per_leaf, t.leaves if pods else 0,
                              t.spines if pods else 0)


# --- hosts --------------------------------------------------------------------------------

def host_ip(spec: Spec, host: str) -> str:
    """The address plan's IP of host ``hN`` (``topologies.wiring``)."""
    n, per = int(host[1:]), spec.topology.per_leaf
    return wiring.host_ip(n // per, n % per)


def cc_config(spec: Spec, sc: Scale) -> CcConfig:
    tr, dc = spec.transport, spec.dcqcn
    if tr.congestion_control != "dcqcn":
        return CcConfig.default(tr.congestion_control, spec.topology.link_rate_gbps * 1e9, sc)
    name = f"dcqcn_{dc.variant}"
    real = algorithm(name).defaults(spec.topology.link_rate_gbps * 1e9)
    real = replace(real, min_rate_bps=dc.min_rate_gbps * 1e9,
                   clamp_target_rate=dc.clamp_target_rate, first_cut_at_once=dc.first_cut_at_once)
    return CcConfig(name, real.scaled(sc))


def path_draw(topo) -> int | None:
    """The fixed ECMP draw every seed takes (``topology.paths = "fixed"``), or None: each
    run's seed draws its own (``FabricPlan.path_seed``)."""
    return topo.path_seed if topo.paths == "fixed" else None


def transport_params(spec: Spec, sc: Scale, seed: int = 0) -> TransportParams:
    """The hosts' transport: the spec's real-scale timers dilated like every other timer;
    the run's seed salts the flows' source ports, so each seed is a new ECMP draw (with
    ``topology.paths = "fixed"``, ``path_seed`` does: every seed the same ports)."""
    tr = spec.transport
    draw = path_draw(spec.topology)
    seed = seed if draw is None else draw
    return TransportParams(mtu_bytes=tr.mtu_bytes, ack_every=tr.ack_every,
                           per_step_sport=tr.per_step_sport, rto_s=tr.rto_s(sc),
                           nak_timeout_s=tr.nak_timeout_s(sc),
                           sport_seed=seed, congestion_flag=tr.congestion_flag)


def _host(spec: Spec, sc: Scale, rate: float, name: str, seed: int, **what) -> HostConfig:
    return HostConfig(name=name, ip=host_ip(spec, name), line_rate_bps=rate,
                      cc=cc_config(spec, sc), transport=transport_params(spec, sc, seed),
                      timeout_s=spec.run.timeout_s, **what)


def _rank_hosts(spec: Spec, sc: Scale, rate: float, lays, seed: int,
                verify: str) -> dict[str, HostConfig]:
    delays = step_delays(spec, sc)
    ranks: dict[str, list[RankConfig]] = {}
    for lay in lays:
        rank_ips = {r: host_ip(spec, h) for r, h in enumerate(lay.hosts)}
        for rank, host in enumerate(lay.hosts):
            ring_idx = next(i for i, r in enumerate(lay.rings) if rank in r)
            ranks.setdefault(host, []).append(RankConfig(
                job=lay.job, rank=rank, algorithm=lay.algorithm,
                group=lay.grid if lay.grid else lay.rings[ring_idx],
                channel=0 if lay.grid else ring_idx, rank_ips=rank_ips, nbytes=lay.nbytes,
                passes=lay.passes, steps_per_collective=lay.steps, seed=seed,
                compute_gap_s=lay.compute_gap_s, start_s=lay.start_s, after_job=lay.after_job,
                step_delay_s=delays.get(host, 0.0), program=lay.program, order=lay.order,
                verify=verify, in_flight=lay.in_flight))
    return {h: _host(spec, sc, rate, h, seed, ranks=tuple(rs)) for h, rs in ranks.items()}


def _message_hosts(spec: Spec, sc: Scale, rate: float, seed: int) -> dict[str, HostConfig]:
    msgs = [Message(m.src, m.dst, m.bytes, sc.time_s(m.start_ms * 1e-3), m.job, m.channel,
                    m.step) for m in spec.messages]
    return host_configs(msgs, lambda h: host_ip(spec, h), rate, cc_config(spec, sc),
                        transport_params(spec, sc, seed), spec.run.timeout_s)


# --- perturbations ------------------------------------------------------------------------

def _context(spec: Spec, rate: float, index: int) -> Context:
    return Context(Scale(spec.scale.dilation), rate, index,
                   lambda switch, toward: port_toward(spec, switch, toward))


def perturbation(spec: Spec, p, rate: float, index: int = 0):
    """A validated ``PerturbationSpec`` as the object that applies it (emulated units):
    its kind's (``emulator.perturbations.KINDS``) ``from_spec``."""
    return KINDS[p.kind].from_spec(p, _context(spec, rate, index))


def step_delays(spec: Spec, sc: Scale) -> dict[str, float]:
    """Host -> the delay its ranks wait before each step's send (stragglers), emulated s."""
    return {h: d for p in spec.perturbations
            for h, d in KINDS[p.kind].step_delays(p, sc).items()}


def _timed(spec: Spec, sc: Scale, sch: Scheme, rate: float) -> tuple:
    """What the engine fires: each kind's ``timed`` (imbalance and stragglers: none, they
    are in the port rates and host configs from t = 0)."""
    out = [e for i, p in enumerate(spec.perturbations)
           for e in KINDS[p.kind].timed(p, _context(spec, rate, i), sch)]
    return tuple(sorted(out, key=lambda e: e.t_s))

