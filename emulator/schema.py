"""What an experiment spec is: its sections, keys, defaults and ranges, as frozen
dataclasses (``emulator.spec`` reads a TOML file into them and checks it; docs/spec.md
shows a complete spec with every key and its default).

Quantities are written at **real scale**, as in the paper (link rates in Gb/s, times in
µs/ms); the run converts them with ``runtime.scale`` (``[scale] dilation``). Byte
quantities are the same at both scales. Every number's range is declared with its field
(a :class:`Range`, through :func:`_num`), and so is its default: a parameter that a
process config also has takes that config's default and range (``switch_agent.config``,
``hosts.config``, ``hosts.cc``), converted to real scale where the spec's key is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from emulator.perturbations import KINDS as PERTURBATION_KINDS
from emulator.schemes import SCHEMES as SCHEME_REGISTRY
from hosts.cc import ALGORITHMS as CC_ALGORITHMS
from hosts.collectives import ALGORITHMS
from hosts.collectives.order import DEFAULT_ORDER
from hosts.config import TransportParams
from runtime.codec import finite
from runtime.scale import DEFAULT_DILATION, PAPER_LINK_RATE_BPS
from switch_agent.config import K_MAX, T_WIN_S, RedParams, SymphonyParams
from topologies import wiring

PRIMARY_METRICS = ("auto", "cct", "jct")
SCHEMES = tuple(SCHEME_REGISTRY)          # emulator.schemes: one object each
PERTURBATIONS = tuple(PERTURBATION_KINDS)  # emulator.perturbations: one class each
TOPOLOGY_KINDS = ("leafspine", "dumbbell")
ROUTINGS = ("ecmp", "static")
ALGORITHM_NAMES = tuple(ALGORITHMS)
GRID_ALGORITHMS = tuple(n for n, c in ALGORITHMS.items() if c.needs_grid)
DCQCN_VARIANTS = ("paper", "mlx")
CONGESTION_CONTROLS = ("dcqcn",) + tuple(n for n in CC_ALGORITHMS if not n.startswith("dcqcn"))


MAX_RUN_S = 1e6          # emulated seconds (11.6 days): the longest run, and so the latest
                         # any time of a spec may dilate to (time.sleep overflows at ~9e9)
MAX_SEED = 2**32 - 1     # numpy's legacy seeding takes 32 bits
MAX_BYTES_PER_RANK = 1 << 36   # passes x bytes of a rank over a run: 64 GiB
MAX_PASSES = 10_000


@dataclass(frozen=True)
class Range:
    """The values a number of a spec may take, declared once with its field
    (``field(metadata={"range": Range(...)})``) and checked by
    ``emulator.speccheck.section``: finite, in [lo, hi] (``open_lo``: (lo, hi]).
    ``time_s``: the field is a real-scale time in units of that many seconds (1e-3: ms),
    and its dilated value must also stay <= MAX_RUN_S."""
    lo: float
    hi: float = math.inf
    unit: str = ""
    open_lo: bool = False
    time_s: float = 0.0
    note: str = ""

    def allowed(self, v, dilation: float) -> str | None:
        """None if ``v`` is allowed, else what is allowed, in words."""
        hi = self.hi
        if self.time_s:
            hi = min(hi, MAX_RUN_S / dilation / self.time_s)
        ok = finite(v) and (v > self.lo if self.open_lo else v >= self.lo) and v <= hi
        if ok:
            return None
        lo, top = _fmt(self.lo), _fmt(hi)
        if isinstance(v, int) and not isinstance(v, bool) and not self.time_s:
            return f"must be >= {lo}: an integer in {lo}..{top}{self.note}"
        head = (f"must be >= {lo}: " if self.lo >= 1 or self.lo == 0 and not self.open_lo
                else "must be > 0: " if self.lo >= 0 else "")     # a floor just above 0
        span = f"{'(' if self.open_lo else '['}{lo}, {top}]{self.unit}"
        what = "time" if self.time_s else "number"
        tail = (f" at real scale (at most {_fmt(MAX_RUN_S)} s once dilated by "
                f"D = {_fmt(dilation)})" if self.time_s else "")
        return f"{head}a finite {what} in {span}{tail}{self.note}"


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


def _num(default, lo, hi=math.inf, unit="", **kw):
    """A number field of a spec section with its allowed range (see :class:`Range`)."""
    return field(default=default, metadata={"range": Range(lo, hi, unit, **kw)})


US, MS = 1e-6, 1e-3          # Range.time_s of a field in µs, in ms


@dataclass(frozen=True)
class ScaleSpec:
    dilation: float = _num(DEFAULT_DILATION, 1e-3, 1e7)
    host_processes: int = _num(0, 0, 4096, note=" (0: one per CPU)")
    agent_processes: int = _num(0, 0, 4096, note=" (0: one per CPU)")
    pin_cpus: bool = True


@dataclass(frozen=True)
class TopologySpec:
    kind: str = "leafspine"
    leaves: int = 4
    spines: int = 4
    hosts_per_leaf: int = 4
    hosts: int = 3
    routing: str = "ecmp"
    link_rate_gbps: float = _num(PAPER_LINK_RATE_BPS / 1e9, 1e-3, 1e4, " Gb/s")
    buffer_bytes: int = wiring.DEFAULT_BUFFER_BYTES
    pods: int = 1
    cores: int = 0
    oversubscription: float = _num(1.0, 1e-3, 1e3)
    servers: int = 1                 # how many servers (a list in the file: real ones)
    ssh: bool = False
    ssh_config: str = ""
    underlay_gbps: float = _num(0.0, 0.0, 1e5, " Gb/s")
    server_targets: tuple = ()       # from `servers = [...]`: real servers
    underlay: tuple = ()

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
    kmin_bytes: int = _num(RedParams.kmin_bytes, 0, 1 << 30)
    kmax_bytes: int = _num(RedParams.kmax_bytes, 0, 1 << 30)
    pmax: float = RedParams.pmax
    red_scale_with_rate: bool = False    # kmin/kmax are for a link_rate_gbps port; a port
                                         # at rate r uses them x r/link_rate (HPCC)
    trace_arrivals: bool = False         # agents record every queued packet (a study)


@dataclass(frozen=True)
class SymphonySpec:                  # defaults: the agent's own (switch_agent.config)
    k: float = _num(SymphonyParams.k, 0, K_MAX)   # P = min(1, k alpha psn / psn_rec)
    tau: float = SymphonyParams.tau
    t_win_us: float = _num(T_WIN_S * 1e6, 0.1, unit=" µs", time_s=US)  # real scale
    n_warmup: int = _num(SymphonyParams.n_warmup, 0, 10**6)
    n_sample: int = _num(SymphonyParams.n_sample, 0, 10**6)
    tracking: str = SymphonyParams.tracking   # job (Algorithm 1) | ring: per (job, ring)


@dataclass(frozen=True)
class DcqcnSpec:
    variant: str = "paper"
    min_rate_gbps: float = _num(0.1, 1e-4, 1e4, " Gb/s")     # Rmin (HPCC's run.py: 1)
    clamp_target_rate: bool = True        # mlx: false = HPCC's rule (hosts.cc.dcqcn)
    first_cut_at_once: bool = True        # mlx: false = HPCC's rule (hosts.cc.dcqcn)


@dataclass(frozen=True)
class TransportSpec:
    mtu_bytes: int = TransportParams.mtu_bytes       # scale-free: declared on the
    ack_every: int = _num(TransportParams.ack_every, 1, 1024)   # NIC's own type
    per_step_sport: bool = TransportParams.per_step_sport
    # real scale; above a full 512 KB queue at 10 Gb/s (420 us)
    rto_us: float = _num(1000.0, 0, unit=" µs", open_lo=True, time_s=US)
    nak_timeout_us: float = _num(200.0, 0, unit=" µs", open_lo=True, time_s=US)
    congestion_control: str = "dcqcn"   # dcqcn ([dcqcn] variant) | none | a hosts.cc name
    congestion_flag: str = TransportParams.congestion_flag      # cnp | ack (HPCC's)


@dataclass(frozen=True)
class SimSpec:
    # emulated ms, not dilated: it stands for the emulator's own delay (emulator.sim.run)
    host_delay_ms: float = _num(0.113, 0, 1e4, " ms (emulated)")


@dataclass(frozen=True)
class CollectiveSpec:
    order: str = DEFAULT_ORDER       # on_arrival (paper §2.1) | in_order


@dataclass(frozen=True)
class JobSpec:
    id: int = 1
    hosts: tuple = ("all",)
    algorithm: str = "ring_allreduce"
    rings: str = "rail"
    ring_size: int | None = None
    grid: tuple | None = None
    chunk_bytes: int | None = None
    size_bytes: int | None = None
    passes: int = 1
    compute_gap_us: float = _num(0.0, 0, unit=" µs", time_s=US)
    start_ms: float = _num(0.0, 0, unit=" ms", time_s=MS)
    after_job: int = 0
    workload: str | None = None
    iterations: int = 1
    gradient_scale: float = _num(1 / 256, 0, 1, open_lo=True)
    bucket_mb: float = _num(25.0, 1e-3, 1e4, " MiB")
    compute_speedup: float = _num(1.0, 1e-3, 1e6)


@dataclass(frozen=True)
class PerturbationSpec:
    """One perturbation (``[[perturbations]]``); which keys apply depends on ``kind``
    (its class in ``emulator.perturbations``: its keys, those it needs, their checks):

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
    ratio: float = _num(1.0, 1, 1e3, note=" (a slower hop)")
    src: str = ""
    dst: str = ""
    rate_gbps: float = 0.0
    start_ms: float = _num(0.0, 0, unit=" ms", time_s=MS)
    duration_ms: float = _num(0.0, 0, unit=" ms", open_lo=True, time_s=MS)
    at_ms: float = _num(0.0, 0, unit=" ms", time_s=MS)
    up_ms: float = _num(-1.0, -1, unit=" ms", time_s=MS, note=" (-1: never up again)")
    host: str = ""
    delay_us: float = _num(0.0, 0, unit=" µs", open_lo=True, time_s=US)
    fraction: float = 0.0


PERTURBATION_KEYS = {name: set(k.keys) for name, k in PERTURBATION_KINDS.items()}


@dataclass(frozen=True)
class MessageSpec:
    """One message (``[[messages]]``): a single flow without any collective, e.g. the
    paper's Fig 9 (two flows of one job, different steps, through one port)."""
    src: str = ""
    dst: str = ""
    bytes: int = 0
    start_ms: float = _num(0.0, 0, unit=" ms", time_s=MS)
    job: int = 1
    step: int = 0
    channel: int = 0


@dataclass(frozen=True)
class RunSpec:
    schemes: tuple = ("baseline", "symphony")
    seeds: tuple = (1,)
    primary: str = "auto"
    timeout_s: float = _num(600.0, 0, MAX_RUN_S, " s (wall clock, emulated)", open_lo=True)


@dataclass(frozen=True)
class Spec:
    name: str
    path: str
    description: str = ""
    profile: str | None = None          # a transport profile applied (emulator.profiles)
    scale: ScaleSpec = field(default_factory=ScaleSpec)
    topology: TopologySpec = field(default_factory=TopologySpec)
    switch: SwitchSpec = field(default_factory=SwitchSpec)
    symphony: SymphonySpec = field(default_factory=SymphonySpec)
    dcqcn: DcqcnSpec = field(default_factory=DcqcnSpec)
    transport: TransportSpec = field(default_factory=TransportSpec)
    collective: CollectiveSpec = field(default_factory=CollectiveSpec)
    sim: SimSpec = field(default_factory=SimSpec)
    jobs: tuple = ()
    messages: tuple = ()
    perturbations: tuple = ()
    run: RunSpec = field(default_factory=RunSpec)
    paper: tuple = ()                   # what the paper reports here (emulator.paper)
    raw: dict = field(default_factory=dict, compare=False, repr=False)


SECTIONS = {"scale": ScaleSpec, "topology": TopologySpec, "switch": SwitchSpec,
            "symphony": SymphonySpec, "dcqcn": DcqcnSpec, "transport": TransportSpec,
            "collective": CollectiveSpec, "sim": SimSpec, "run": RunSpec}
TOP_KEYS = ("name", "description", "profile", "jobs", "job_stream", "messages",
            "perturbations", "variants", "paper") + tuple(SECTIONS)

