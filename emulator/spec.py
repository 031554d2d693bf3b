"""Experiment specs: TOML files validated into frozen dataclasses before anything starts.

Quantities are written at **real scale**, as in the paper (link rates in Gb/s, times in
µs/ms); the run converts them with ``hosts.scale`` (``[scale] dilation``). Byte
quantities are the same at both scales. A complete spec with every key::

    name = "table1"
    description = "free text"

    [scale]
    dilation = 1000                  # emulated = real / D for rates, x D for times

    [topology]
    kind = "leafspine"               # leafspine | dumbbell
    leaves = 4                       # leafspine only
    spines = 4                       # leafspine only
    hosts_per_leaf = 4               # leafspine; dumbbell: `hosts`
    hosts = 3                        # dumbbell only
    routing = "ecmp"                 # ecmp | static
    link_rate_gbps = 10.0
    buffer_bytes = 524288            # per switch egress port
    pods = 1                         # > 1: pods of `leaves` x `spines`, joined by cores
    cores = 0                        # core switches (every spine links to every core)
    oversubscription = 1.0           # spine downlink : uplink capacity (sets core links' rate)
    servers = 1                      # > 1: whole pods on that many stand-in servers, the
                                     # links between them over VXLAN (docs/distributed.md)

    [switch]                         # RED/ECN of the congestion point
    red = true
    kmin_bytes = 50000
    kmax_bytes = 100000
    pmax = 0.2

    [symphony]                       # used by scheme "symphony"
    k = 0.01
    tau = 0.25
    t_win_us = 100.0
    n_warmup = 2
    n_sample = 8
    tracking = "job"                 # job: state per job (Algorithm 1) | ring: per (job, ring)

    [dcqcn]
    variant = "paper"                # paper | mlx

    [transport]
    mtu_bytes = 4096
    ack_every = 8
    per_step_sport = true            # false: one source port per connection
    rto_us = 1000.0                  # go-back-N retransmission timeout, from the last send
    nak_timeout_us = 200.0           # receiver: a further NAK for the same gap after this
    congestion_control = "dcqcn"     # dcqcn (the [dcqcn] variant) | none (line rate,
                                     # CNPs ignored: what congestion control costs)

    [[jobs]]                         # one table per job
    id = 1                           # job id (P_Key), 1..32767
    hosts = "all"                    # "all", or a list of host names ["h0", "h4", ...]
    algorithm = "ring_allreduce"     # ring_allreduce | ring_reducescatter | ring_allgather
                                     # | ring2d_allreduce | halving_doubling_allreduce
                                     # (power-of-two ranks per ring); hosts.collectives
    rings = "rail"                   # rail: ring r = host r of every leaf (Fig 1a);
                                     # single: one ring over `hosts` in order
    grid = [4, 4]                    # ring2d_allreduce: [rows, columns], hosts row by row
    chunk_bytes = 262144             # bytes per step flow (or size_bytes: bytes per rank)
    passes = 4                       # back-to-back collectives
    compute_gap_us = 0.0             # between passes
    start_ms = 0.0                   # with after_job: the gap after that job
    after_job = 0                    # a job id: each rank starts once that job's rank on
                                     # its host has finished (hosts may then be shared)
    # Instead of chunk_bytes/size_bytes and passes: data-parallel training (emulator.workloads;
    # ring_allreduce only). Each iteration: forward, then backward with gradient buckets
    # all-reduced one at a time as soon as their gradients exist.
    workload = "vgg16"               # vgg16 | resnet50 | transformer
    iterations = 2
    gradient_scale = 0.00390625      # share of the real gradient bytes sent (1/256);
                                     # compute times scale with it (ratio kept)
    bucket_mb = 25.0                 # DDP bucket size, real scale (MiB)
    compute_speedup = 1.0            # divides compute times (Fig 6: 1..64)

    [job_stream]                     # instead of [[jobs]]: a random stream of jobs
    seed = 1                         # (paper Fig 7c); see emulator.jobstream
    slots = [["h0", "h4"], ["h1", "h5"]]
    jobs_per_slot = 3
    size_bytes = [65536, 262144, 524288]
    passes = [1, 8]
    gap_ms = [0.0, 4.0]

    [[perturbations]]                # optional, any number; see PerturbationSpec
    kind = "imbalance"
    switch = "leaf0"
    toward = "spine0"
    ratio = 1.13

    [run]
    schemes = ["baseline", "symphony"]   # and "pq": strict priority for lagging flows
    seeds = [1]                      # or a count: seeds = 3 -> [1, 2, 3]
    timeout_s = 600                  # per run, wall clock

A bad spec raises :class:`SpecError` naming the file, the key, the value and what is
allowed.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator import jobstream
from emulator.schemes import SCHEMES as SCHEME_REGISTRY
from emulator.workloads import WORKLOAD_NAMES
from hosts.cc import ALGORITHMS as CC_ALGORITHMS
from hosts.collectives import ALGORITHMS
from hosts.config import ConfigError, TransportParams, finite
from hosts.scale import DEFAULT_DILATION, PAPER_LINK_RATE_BPS, Scale
from switch_agent.config import T_WIN_S, RedParams, SymphonyParams
from topologies import fabric as wiring
from topologies.fabric import neighbors, switch_names  # noqa: F401  (part of the spec API)

SCHEMES = tuple(SCHEME_REGISTRY)          # emulator.schemes: one object each
PERTURBATIONS = ("imbalance", "background", "link_down", "straggler", "loss",
                 "symphony_late_start")
TOPOLOGY_KINDS = ("leafspine", "dumbbell")
ROUTINGS = ("ecmp", "static")
ALGORITHM_NAMES = tuple(ALGORITHMS)
GRID_ALGORITHMS = tuple(n for n, c in ALGORITHMS.items() if c.needs_grid)
RING_LAYOUTS = ("rail", "single")
DCQCN_VARIANTS = ("paper", "mlx")
CONGESTION_CONTROLS = ("dcqcn",) + tuple(n for n in CC_ALGORITHMS if not n.startswith("dcqcn"))


class SpecError(ValueError):
    pass


@dataclass(frozen=True)
class ScaleSpec:
    dilation: float = DEFAULT_DILATION


@dataclass(frozen=True)
class TopologySpec:
    kind: str = "leafspine"
    leaves: int = 4
    spines: int = 4
    hosts_per_leaf: int = 4
    hosts: int = 3
    routing: str = "ecmp"
    link_rate_gbps: float = PAPER_LINK_RATE_BPS / 1e9
    buffer_bytes: int = wiring.DEFAULT_BUFFER_BYTES
    pods: int = 1
    cores: int = 0
    oversubscription: float = 1.0
    servers: int = 1

    @property
    def host_names(self) -> list[str]:
        n = self.leaves * self.pods * self.hosts_per_leaf if self.kind == "leafspine" \
            else self.hosts
        return [f"h{i}" for i in range(n)]

    @property
    def per_leaf(self) -> int:
        return self.hosts_per_leaf if self.kind == "leafspine" else self.hosts


@dataclass(frozen=True)
class SwitchSpec:                    # defaults: the agent's own (switch_agent.config)
    red: bool = RedParams.enabled
    kmin_bytes: int = RedParams.kmin_bytes
    kmax_bytes: int = RedParams.kmax_bytes
    pmax: float = RedParams.pmax


@dataclass(frozen=True)
class SymphonySpec:                  # defaults: the agent's own (switch_agent.config)
    k: float = SymphonyParams.k
    tau: float = SymphonyParams.tau
    t_win_us: float = T_WIN_S * 1e6  # real scale
    n_warmup: int = SymphonyParams.n_warmup
    n_sample: int = SymphonyParams.n_sample
    tracking: str = SymphonyParams.tracking   # job (Algorithm 1) | ring: per (job, ring)


@dataclass(frozen=True)
class DcqcnSpec:
    variant: str = "paper"


@dataclass(frozen=True)
class TransportSpec:
    mtu_bytes: int = TransportParams.mtu_bytes       # scale-free: declared on the
    ack_every: int = TransportParams.ack_every       # NIC's own type
    per_step_sport: bool = TransportParams.per_step_sport
    rto_us: float = 1000.0          # real scale; above a full 512 KB queue at 10 Gb/s (420 us)
    nak_timeout_us: float = 200.0
    congestion_control: str = "dcqcn"   # dcqcn ([dcqcn] variant) | none | a hosts.cc name


@dataclass(frozen=True)
class JobSpec:
    id: int = 1
    hosts: tuple = ("all",)
    algorithm: str = "ring_allreduce"
    rings: str = "rail"
    grid: tuple | None = None
    chunk_bytes: int | None = None
    size_bytes: int | None = None
    passes: int = 1
    compute_gap_us: float = 0.0
    start_ms: float = 0.0
    after_job: int = 0
    workload: str | None = None
    iterations: int = 1
    gradient_scale: float = 1 / 256
    bucket_mb: float = 25.0
    compute_speedup: float = 1.0


@dataclass(frozen=True)
class PerturbationSpec:
    """One perturbation (``[[perturbations]]``); which keys apply depends on ``kind``:

    imbalance            switch, toward, ratio      the hop switch->toward runs at
                                                    link rate / ratio (e.g. 1.13)
    background           src, dst, rate_gbps,       iperf3 UDP (non-RoCE) traffic from
                         start_ms, duration_ms      start for duration
    link_down            switch, toward, at_ms,     the link goes down at at_ms (and up
                         up_ms (optional)           again at up_ms: a flap)
    straggler            host, delay_us             the rank on host waits delay_us
                                                    (compute) before each step's send
    loss                 switch, fraction           the switch drops that fraction of
                                                    RoCE data packets
    symphony_late_start  at_ms                      Symphony switched on at at_ms (the
                                                    symphony scheme only)
    """
    kind: str = ""
    switch: str = ""
    toward: str = ""
    ratio: float = 1.0
    src: str = ""
    dst: str = ""
    rate_gbps: float = 0.0
    start_ms: float = 0.0
    duration_ms: float = 0.0
    at_ms: float = 0.0
    up_ms: float = -1.0
    host: str = ""
    delay_us: float = 0.0
    fraction: float = 0.0


PERTURBATION_KEYS = {
    "imbalance": {"switch", "toward", "ratio"},
    "background": {"src", "dst", "rate_gbps", "start_ms", "duration_ms"},
    "link_down": {"switch", "toward", "at_ms", "up_ms"},
    "straggler": {"host", "delay_us"},
    "loss": {"switch", "fraction"},
    "symphony_late_start": {"at_ms"},
}


@dataclass(frozen=True)
class MessageSpec:
    """One message (``[[messages]]``): a single flow without any collective, e.g. the
    paper's Fig 9 (two flows of one job, different steps, through one port)."""
    src: str = ""
    dst: str = ""
    bytes: int = 0
    start_ms: float = 0.0
    job: int = 1
    step: int = 0
    channel: int = 0


@dataclass(frozen=True)
class RunSpec:
    schemes: tuple = ("baseline", "symphony")
    seeds: tuple = (1,)
    timeout_s: float = 600.0


@dataclass(frozen=True)
class Spec:
    name: str
    path: str
    description: str = ""
    scale: ScaleSpec = field(default_factory=ScaleSpec)
    topology: TopologySpec = field(default_factory=TopologySpec)
    switch: SwitchSpec = field(default_factory=SwitchSpec)
    symphony: SymphonySpec = field(default_factory=SymphonySpec)
    dcqcn: DcqcnSpec = field(default_factory=DcqcnSpec)
    transport: TransportSpec = field(default_factory=TransportSpec)
    jobs: tuple = ()
    messages: tuple = ()
    perturbations: tuple = ()
    run: RunSpec = field(default_factory=RunSpec)
    raw: dict = field(default_factory=dict, compare=False, repr=False)


SECTIONS = {"scale": ScaleSpec, "topology": TopologySpec, "switch": SwitchSpec,
            "symphony": SymphonySpec, "dcqcn": DcqcnSpec, "transport": TransportSpec,
            "run": RunSpec}
TOP_KEYS = ("name", "description", "jobs", "job_stream", "messages", "perturbations",
            "variants") + tuple(SECTIONS)


# --- loading -----------------------------------------------------------------------

def variants(spec: Spec) -> list[tuple[str, list[str]]]:
    """The spec's ``[[variants]]``: (name, overrides) pairs; ``symphony-emu sweep`` runs
    each (e.g. Fig 2's baseline / imbalance / transient congestion)."""
    return [(v["name"], list(v.get("set", []))) for v in spec.raw.get("variants", [])]


def load(path: str, overrides: list[str] = ()) -> Spec:
    """Read, override (``key=value``, dotted keys) and validate a spec file."""
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{path}: not valid TOML: {e}") from None
    for item in overrides:
        apply_override(raw, item, path)
    spec = validate(raw, path)
    for name, sets in variants(spec):          # every variant must validate too
        v = copy.deepcopy(raw)
        v.pop("variants", None)
        try:
            for item in sets:
                apply_override(v, item, path)
            validate(v, path)
        except SpecError as e:
            raise SpecError(f"variant {name!r}: {e}") from None
    return spec


def apply_override(raw: dict, item: str, path: str = "--set") -> None:
    """``symphony.k=0.001``, ``jobs.0.passes=2``, ``run.schemes=["symphony"]``."""
    if "=" not in item:
        raise SpecError(f"--set {item!r}: expected key=value, e.g. symphony.k=0.001")
    key, text = item.split("=", 1)
    text = text.strip()
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        value = text                      # a bare word: take it as a string
    parts = key.strip().split(".")
    node = raw
    for i, p in enumerate(parts[:-1]):
        if isinstance(node, list):
            if not p.isdigit() or int(p) >= len(node):
                raise SpecError(f"--set {key}: {'.'.join(parts[:i])} has {len(node)} entries, "
                                f"no index {p!r}")
            node = node[int(p)]
        elif isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            raise SpecError(f"--set {key}: {'.'.join(parts[:i])} is a value, not a table")
        if not isinstance(node, (dict, list)):
            raise SpecError(f"--set {key}: {'.'.join(parts[:i + 1])} is a value, not a table")
    last = parts[-1]
    if isinstance(node, list):
        raise SpecError(f"--set {key}: give an index into {'.'.join(parts[:-1])}")
    node[last] = value


def _section(cls, data, where: str, path: str):
    if not isinstance(data, dict):
        raise SpecError(f"{path}: [{where}] must be a table, got {data!r}")
    allowed = list(cls.__dataclass_fields__)
    for k in data:
        if k not in allowed:
            raise SpecError(f"{path}: unknown key {where}.{k}; allowed: {', '.join(allowed)}")
    out = {}
    for k, v in data.items():
        default = cls.__dataclass_fields__[k].default
        out[k] = _typed(v, default, f"{where}.{k}", path)
    return cls(**out)


def _typed(v, default, key, path):
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise SpecError(f"{path}: {key} = {v!r}: must be true or false")
        return v
    if isinstance(default, int) and default is not None and not isinstance(default, bool):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{path}: {key} = {v!r}: must be an integer")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"{path}: {key} = {v!r}: must be a number")
        return float(v)
    if isinstance(default, str):
        if not isinstance(v, str):
            raise SpecError(f"{path}: {key} = {v!r}: must be a string")
        return v
    return v


def _need(cond: bool, path: str, key: str, value, allowed: str) -> None:
    if not cond:
        raise SpecError(f"{path}: {key} = {value!r}: {allowed}")


def _reuse(path: str, section: str, values, build, keys: dict | None = None,
           unit: str = ""):
    """Run a process-config type's own range check (``build``) on a spec section's values;
    its ``ConfigError`` names a field, reported here as the spec's key (``keys`` maps
    fields whose spec key differs, e.g. emulated ``t_win_s`` -> real-scale ``t_win_us``)
    with the spec's own value, and ``unit`` after the words of a renamed key)."""
    try:
        return build()
    except ConfigError as e:
        key = (keys or {}).get(e.field, e.field)
        value = getattr(values, key, e.value)
        note = unit if key != e.field else ""
        raise SpecError(f"{path}: {section}.{key} = {value!r}: {e.allowed}{note}") from None


def validate(raw: dict, path: str) -> Spec:
    raw = copy.deepcopy(raw)
    for k in raw:
        if k not in TOP_KEYS:
            raise SpecError(f"{path}: unknown key {k!r}; allowed: {', '.join(TOP_KEYS)}")
    name = raw.get("name", os.path.splitext(os.path.basename(path))[0])
    _need(isinstance(name, str) and name != "", path, "name", name, "must be a non-empty string")
    sections = {k: _section(cls, raw.get(k, {}), k, path) for k, cls in SECTIONS.items()
                if k != "run"}
    run_raw = raw.get("run", {})
    if not isinstance(run_raw, dict):
        raise SpecError(f"{path}: [run] must be a table, got {run_raw!r}")
    run_raw = dict(run_raw)
    if isinstance(run_raw.get("seeds"), int) and not isinstance(run_raw.get("seeds"), bool):
        _need(run_raw["seeds"] >= 1, path, "run.seeds", run_raw["seeds"],
              "a count must be >= 1 (or give a list of seeds)")
        run_raw["seeds"] = list(range(1, run_raw["seeds"] + 1))
    run = _section(RunSpec, run_raw, "run", path)

    sc, topo, sw, sy, dc, tr = (sections[k] for k in
                                ("scale", "topology", "switch", "symphony", "dcqcn", "transport"))
    _need(finite(sc.dilation) and 1e-3 <= sc.dilation <= 1e7, path, "scale.dilation",
          sc.dilation, "must be > 0: a finite number in [0.001, 1e7]")
    _need(topo.kind in TOPOLOGY_KINDS, path, "topology.kind", topo.kind,
          f"allowed: {', '.join(TOPOLOGY_KINDS)}")
    if topo.kind == "leafspine":
        _reuse(path, "topology", topo, lambda: wiring.check_shape(
            topo.leaves, topo.spines, topo.hosts_per_leaf, topo.routing))
    else:
        _reuse(path, "topology", topo, lambda: wiring.check_shape(1, 0, 1, topo.routing))
    _need(2 <= topo.hosts <= 254, path, "topology.hosts", topo.hosts, "must be in 2..254")
    _need(finite(topo.link_rate_gbps) and 1e-3 <= topo.link_rate_gbps <= 1e4, path,
          "topology.link_rate_gbps", topo.link_rate_gbps,
          "must be > 0: a finite rate in [0.001, 10000] Gb/s")
    _need(topo.pods == 1 or topo.kind == "leafspine", path, "topology.pods", topo.pods,
          "several pods: leafspine only")
    _reuse(path, "topology", topo, lambda: wiring.check_pods(
        topo.pods, topo.cores, topo.leaves, topo.spines, topo.routing, topo.oversubscription))
    _need(1 <= topo.servers <= topo.pods and (topo.servers == 1 or topo.kind == "leafspine"),
          path, "topology.servers", topo.servers,
          f"must be in 1..pods ({topo.pods}): whole pods go to one server each")
    _need(16_384 <= topo.buffer_bytes <= 1 << 30, path, "topology.buffer_bytes",
          topo.buffer_bytes, "must be >= 16384 (a few 4 KB frames) and <= 2**30")
    _reuse(path, "switch", sw, lambda: RedParams(sw.red, sw.kmin_bytes, sw.kmax_bytes, sw.pmax),
           {"enabled": "red"})
    scale = Scale(sc.dilation)
    _reuse(path, "symphony", sy, lambda: SymphonyParams(
        scale.time_s(sy.t_win_us * 1e-6), sy.k, sy.tau, sy.n_warmup, sy.n_sample, sy.tracking),
        {"t_win_s": "t_win_us"})
    _need(dc.variant in DCQCN_VARIANTS, path, "dcqcn.variant", dc.variant,
          f"allowed: {', '.join(DCQCN_VARIANTS)}")
    _need(tr.congestion_control in CONGESTION_CONTROLS, path, "transport.congestion_control",
          tr.congestion_control, f"allowed: {', '.join(CONGESTION_CONTROLS)}")
    _reuse(path, "transport", tr, lambda: TransportParams(
        mtu_bytes=tr.mtu_bytes, ack_every=tr.ack_every, rto_s=scale.time_s(tr.rto_us * 1e-6),
        nak_timeout_s=scale.time_s(tr.nak_timeout_us * 1e-6)),
        {"rto_s": "rto_us", "nak_timeout_s": "nak_timeout_us"}, " (µs, real scale)")
    schemes = run.schemes
    _need(isinstance(schemes, (list, tuple)) and len(schemes) > 0
          and all(s in SCHEMES for s in schemes), path, "run.schemes", schemes,
          f"a non-empty list of: {', '.join(SCHEMES)}")
    seeds = run.seeds
    _need(isinstance(seeds, (list, tuple)) and len(seeds) > 0
          and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds), path,
          "run.seeds", seeds, "a list of integers or a count")
    _need(run.timeout_s > 0, path, "run.timeout_s", run.timeout_s, "must be > 0")
    run = RunSpec(tuple(schemes), tuple(seeds), run.timeout_s)

    jobs_raw = raw.get("jobs", [])
    if "job_stream" in raw:
        _need(not jobs_raw and isinstance(raw["job_stream"], dict), path, "job_stream",
              raw["job_stream"], "a table, instead of [[jobs]] (it generates them)")

        def stream_error(key, value, allowed):
            _need(False, path, key, value, allowed)
        jobs_raw = jobstream.expand(raw["job_stream"], stream_error)
    msgs_raw = raw.get("messages", [])
    _need(isinstance(msgs_raw, list), path, "messages", msgs_raw,
          "must be a list of [[messages]] tables")
    _need(isinstance(jobs_raw, list) and (len(jobs_raw) > 0) != (len(msgs_raw) > 0), path,
          "jobs", jobs_raw, "give [[jobs]] (collectives) or [[messages]] (single flows), "
          "exactly one of the two")
    messages = tuple(_validate_message(_section(MessageSpec, m, f"messages[{i}]", path),
                                       f"messages[{i}]", path, topo)
                     for i, m in enumerate(msgs_raw))
    keys = [(m.src, m.dst, m.job, m.channel, m.step) for m in messages]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    _need(dup is None, path, "messages", dup,
          "two messages with the same (src, dst, job, channel, step)")
    jobs = []
    used_hosts: dict[str, list[int]] = {}
    follows: dict[int, set[int]] = {}          # job id -> ids it (transitively) runs after
    for i, j in enumerate(jobs_raw):
        where = f"jobs[{i}]"
        if isinstance(j, dict) and "hosts" in j and isinstance(j["hosts"], list):
            j = dict(j, hosts=tuple(j["hosts"]))
        if isinstance(j, dict) and isinstance(j.get("grid"), list):
            j = dict(j, grid=tuple(j["grid"]))
        job = _section(JobSpec, j, where, path)
        job = _validate_job(job, where, path, topo, tr)
        follows[job.id] = set()
        if job.after_job:
            prev = next((x for x in jobs if x.id == job.after_job), None)
            _need(prev is not None, path, f"{where}.after_job", job.after_job,
                  "must be the id of a job listed before this one")
            missing = set(_job_hosts(job, topo)) - set(_job_hosts(prev, topo))
            _need(not missing, path, f"{where}.after_job", job.after_job,
                  f"each rank starts after job {prev.id}'s rank on its host, so the hosts must "
                  f"be a subset of job {prev.id}'s; not in it: {', '.join(sorted(missing))}")
            follows[job.id] = {prev.id} | follows[prev.id]
        for h in _job_hosts(job, topo):
            clash = [x for x in used_hosts.get(h, []) if x not in follows[job.id]]
            _need(not clash, path, f"{where}.hosts", list(job.hosts),
                  f"host {h} is already in job {clash[0] if clash else ''}; jobs need disjoint "
                  "hosts unless one runs after the other (after_job)")
            used_hosts.setdefault(h, []).append(job.id)
        _need(job.id not in [x.id for x in jobs], path, f"{where}.id", job.id,
              "job ids must be unique")
        jobs.append(job)
    vs = raw.get("variants", [])
    _need(isinstance(vs, list) and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                       and v["name"] and set(v) <= {"name", "set"}
                                       and isinstance(v.get("set", []), list)
                                       and all(isinstance(x, str) for x in v.get("set", []))
                                       for v in vs),
          path, "variants", vs, 'a list of tables {name = "...", set = ["key=value", ...]}')
    names = [v["name"] for v in vs]
    _need(len(set(names)) == len(names), path, "variants", names, "variant names must differ")
    perts_raw = raw.get("perturbations", [])
    _need(isinstance(perts_raw, list), path, "perturbations", perts_raw,
          "must be a list of [[perturbations]] tables")
    perts = tuple(_validate_perturbation(_section(PerturbationSpec, p, f"perturbations[{i}]", path),
                                         p, f"perturbations[{i}]", path, topo, jobs)
                  for i, p in enumerate(perts_raw))
    return Spec(name=name, path=path, description=str(raw.get("description", "")),
                jobs=tuple(jobs), messages=messages, perturbations=perts, run=run, raw=raw,
                **sections)


def _validate_message(m: MessageSpec, where: str, path: str, topo: TopologySpec) -> MessageSpec:
    hosts = topo.host_names
    for key in ("src", "dst"):
        _need(getattr(m, key) in hosts, path, f"{where}.{key}", getattr(m, key),
              f"a host of this topology: {hosts[0]}..{hosts[-1]}")
    _need(m.src != m.dst, path, f"{where}.dst", m.dst, "must differ from src")
    _need(isinstance(m.bytes, int) and 1 <= m.bytes <= 1 << 30, path, f"{where}.bytes", m.bytes,
          "must be in 1..2**30")
    _need(m.start_ms >= 0, path, f"{where}.start_ms", m.start_ms, "must be >= 0")
    _need(1 <= m.job <= 0x7FFF, path, f"{where}.job", m.job, "must be in 1..32767")
    _need(0 <= m.step <= 0xFFFF, path, f"{where}.step", m.step, "must be in 0..65535")
    _need(0 <= m.channel <= 0xFF, path, f"{where}.channel", m.channel, "must be in 0..255")
    return m


def _validate_perturbation(p: PerturbationSpec, raw: dict, where: str, path: str,
                           topo: TopologySpec, jobs: list) -> PerturbationSpec:
    _need(p.kind in PERTURBATIONS, path, f"{where}.kind", p.kind,
          f"allowed: {', '.join(PERTURBATIONS)}")
    extra = set(raw) - PERTURBATION_KEYS[p.kind] - {"kind"}
    _need(not extra, path, f"{where}.{sorted(extra)[0] if extra else ''}", 
          raw.get(sorted(extra)[0]) if extra else None,
          f"not a key of the {p.kind} perturbation; its keys: "
          f"{', '.join(sorted(PERTURBATION_KEYS[p.kind]))}")
    missing = {"imbalance": ("switch", "toward", "ratio"), "background": ("src", "dst", "rate_gbps",
               "duration_ms"), "link_down": ("switch", "toward", "at_ms"),
               "straggler": ("host", "delay_us"), "loss": ("switch", "fraction"),
               "symphony_late_start": ("at_ms",)}[p.kind]
    for k in missing:
        _need(k in raw, path, f"{where}.{k}", None, f"the {p.kind} perturbation needs {k}")
        _need(raw[k] != "", path, f"{where}.{k}", raw[k], "must not be empty")
    hosts = topo.host_names
    if p.switch:
        _need(p.switch in switch_names(topo), path, f"{where}.switch", p.switch,
              f"allowed: {', '.join(switch_names(topo))}")
    if p.toward:
        _need(p.toward in neighbors(topo, p.switch), path, f"{where}.toward", p.toward,
              f"{p.switch}'s neighbours are {', '.join(neighbors(topo, p.switch))}")
    for key in ("src", "dst", "host"):
        v = getattr(p, key)
        if v:
            _need(v in hosts, path, f"{where}.{key}", v,
                  f"unknown host; this topology has {hosts[0]}..{hosts[-1]}")
    if p.kind == "imbalance":
        _need(p.ratio >= 1.0, path, f"{where}.ratio", p.ratio, "must be >= 1 (a slower hop)")
    if p.kind == "background":
        _need(p.src != p.dst, path, f"{where}.dst", p.dst, "must differ from src")
        _need(0 < p.rate_gbps <= topo.link_rate_gbps, path, f"{where}.rate_gbps", p.rate_gbps,
              f"must be in (0, link rate {topo.link_rate_gbps}]")
        _need(p.duration_ms > 0 and p.start_ms >= 0, path, f"{where}.duration_ms",
              p.duration_ms, "need duration_ms > 0 and start_ms >= 0")
    if p.kind == "link_down":
        _need(p.at_ms >= 0, path, f"{where}.at_ms", p.at_ms, "must be >= 0")
        _need(p.up_ms < 0 or p.up_ms > p.at_ms, path, f"{where}.up_ms", p.up_ms,
              "must be after at_ms")
    if p.kind == "straggler":
        _need(p.delay_us > 0, path, f"{where}.delay_us", p.delay_us, "must be > 0")
        _need(any(p.host in _job_hosts(j, topo) for j in jobs), path, f"{where}.host", p.host,
              "is in no job")
    if p.kind == "loss":
        _need(0 < p.fraction < 1, path, f"{where}.fraction", p.fraction, "must be in (0, 1)")
    if p.kind == "symphony_late_start":
        _need(p.at_ms >= 0, path, f"{where}.at_ms", p.at_ms, "must be >= 0")
    return p


def _job_hosts(job: JobSpec, topo: TopologySpec) -> list[str]:
    return topo.host_names if job.hosts == ("all",) else list(job.hosts)


def _validate_job(job: JobSpec, where: str, path: str, topo: TopologySpec,
                  tr: TransportSpec) -> JobSpec:
    _need(isinstance(job.id, int) and 1 <= job.id <= 0x7FFF, path, f"{where}.id", job.id,
          "must be an integer in 1..32767")
    _need(isinstance(job.after_job, int) and not isinstance(job.after_job, bool)
          and job.after_job >= 0 and job.after_job != job.id, path, f"{where}.after_job",
          job.after_job, "0 (none) or the id of another job")
    if isinstance(job.hosts, str):
        job = JobSpec(**{**job.__dict__, "hosts": (job.hosts,)})
    _need(isinstance(job.hosts, tuple) and all(isinstance(h, str) for h in job.hosts), path,
          f"{where}.hosts", job.hosts, '"all" or a list of host names')
    names = topo.host_names
    hosts = _job_hosts(job, topo)
    for h in hosts:
        _need(h in names, path, f"{where}.hosts", list(job.hosts),
              f"unknown host {h!r}; this topology has {names[0]}..{names[-1]}")
    _need(len(set(hosts)) == len(hosts), path, f"{where}.hosts", list(job.hosts),
          "a host is listed twice")
    _need(len(hosts) >= 2, path, f"{where}.hosts", list(job.hosts), "a job needs >= 2 hosts")
    _need(job.algorithm in ALGORITHM_NAMES, path, f"{where}.algorithm", job.algorithm,
          f"allowed: {', '.join(ALGORITHM_NAMES)}")
    _need(job.rings in RING_LAYOUTS, path, f"{where}.rings", job.rings,
          f"allowed: {', '.join(RING_LAYOUTS)}")
    coll = ALGORITHMS[job.algorithm]
    if coll.needs_grid:
        g = job.grid
        err = coll.check(g if isinstance(g, tuple) and len(g) == 2
                         and all(isinstance(x, int) and not isinstance(x, bool) for x in g)
                         else None)
        _need(err is None, path, f"{where}.grid", g, err)
        _need(g[0] * g[1] == len(hosts), path, f"{where}.grid", list(g),
              f"rows x columns must equal the job's {len(hosts)} hosts")
    else:
        _need(job.grid is None, path, f"{where}.grid", job.grid,
              f"only for {', '.join(GRID_ALGORITHMS)}")
        group_size = len(hosts)
        if job.rings == "rail":
            per_leaf = topo.per_leaf
            rails = {}
            for h in hosts:
                rails.setdefault(int(h[1:]) % per_leaf, []).append(h)
            sizes = {len(v) for v in rails.values()}
            _need(len(sizes) == 1 and min(sizes) >= 2, path, f"{where}.rings", job.rings,
                  "rail rings need the same number (>= 2) of the job's hosts on every rail "
                  "(host r of each leaf); use rings = \"single\" otherwise")
            group_size = min(sizes)
        err = coll.check(group_size)
        _need(err is None, path, f"{where}.algorithm", job.algorithm, err)
    if job.workload is not None:
        return _validate_workload(job, where, path)
    _need((job.chunk_bytes is None) != (job.size_bytes is None), path, f"{where}.chunk_bytes",
          job.chunk_bytes, "give exactly one of chunk_bytes and size_bytes (or a workload)")
    size = job.chunk_bytes if job.chunk_bytes is not None else job.size_bytes
    key = "chunk_bytes" if job.chunk_bytes is not None else "size_bytes"
    _need(isinstance(size, int) and not isinstance(size, bool) and size >= 4 and size % 4 == 0,
          path, f"{where}.{key}", size, "must be a positive multiple of 4 bytes")
    _need(size <= 1 << 30, path, f"{where}.{key}", size, "must be <= 1 GiB")
    _need(isinstance(job.passes, int) and 1 <= job.passes <= 10_000, path, f"{where}.passes",
          job.passes, "must be in 1..10000")
    _need(job.compute_gap_us >= 0, path, f"{where}.compute_gap_us", job.compute_gap_us,
          "must be >= 0")
    _need(job.start_ms >= 0, path, f"{where}.start_ms", job.start_ms, "must be >= 0")
    return job


def _validate_workload(job: JobSpec, where: str, path: str) -> JobSpec:
    _need(job.workload in WORKLOAD_NAMES, path, f"{where}.workload", job.workload,
          f"allowed: {', '.join(WORKLOAD_NAMES)}")
    _need(job.algorithm == "ring_allreduce", path, f"{where}.algorithm", job.algorithm,
          "a training workload all-reduces its gradients: ring_allreduce only")
    for key in ("chunk_bytes", "size_bytes"):
        _need(getattr(job, key) is None, path, f"{where}.{key}", getattr(job, key),
              "not with a workload (its bucket sizes come from the model)")
    _need(job.passes == 1 and job.compute_gap_us == 0, path, f"{where}.passes", job.passes,
          "not with a workload: give iterations (compute time comes from the model)")
    _need(isinstance(job.iterations, int) and not isinstance(job.iterations, bool)
          and 1 <= job.iterations <= 1000, path, f"{where}.iterations", job.iterations,
          "must be in 1..1000")
    _need(0 < job.gradient_scale <= 1, path, f"{where}.gradient_scale", job.gradient_scale,
          "must be in (0, 1]")
    _need(job.bucket_mb > 0, path, f"{where}.bucket_mb", job.bucket_mb, "must be > 0")
    _need(job.compute_speedup > 0, path, f"{where}.compute_speedup", job.compute_speedup,
          "must be > 0")
    _need(job.start_ms >= 0, path, f"{where}.start_ms", job.start_ms, "must be >= 0")
    return job
