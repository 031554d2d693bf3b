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
from emulator.spec.schemes import SCHEMES as SCHEME_REGISTRY
from hosts.cc import ALGORITHMS as CC_ALGORITHMS, DcqcnParams
from hosts.collectives import ALGORITHMS
from hosts.collectives.order import DEFAULT_ORDER
from hosts.config import MAX_ACK_EVERY, VERIFY_MODES, MessageConfig, TransportParams
from runtime import wire
from runtime.codec import finite
from runtime.scale import (DEFAULT_DILATION, MAX_DILATION, MIN_DILATION, PAPER_LINK_RATE_BPS,
                           Scale)
from switch_agent.config import (HPCC_BUFFER_BYTES_PER_BPS, K_MAX, MAX_PFC_ALPHA,
                                 MAX_RATE_BPS, MAX_THRESHOLD_BYTES, MAX_WINDOWS, MIN_RATE_BPS,
                                 MIN_T_WIN_S, T_WIN_S, AgentConfig, PfcParams, RedParams,
                                 SymphonyParams)
from switch_agent.queue_model import L2_HEADER_BYTES
from topologies import wiring

PRIMARY_METRICS = ("auto", "cct", "jct")
VERIFICATIONS = ("auto",) + VERIFY_MODES   # auto: buffers unless over run.verify_budget_gb
SCHEME_NAMES = tuple(SCHEME_REGISTRY)          # emulator.spec.schemes: one object each
PERTURBATIONS = tuple(PERTURBATION_KINDS)  # emulator.perturbations: one class each
TOPOLOGY_KINDS = ("leafspine", "dumbbell")
FLOW_CONTROLS = ("drop", "pfc")    # drop-tail ports | lossless, 802.1Qbb ([pfc])
PATH_DRAWS = ("per_seed", "fixed")  # ECMP paths: new every run seed | one set for every seed
MAX_PATH_SEED = 2**31 - 1
ALGORITHM_NAMES = tuple(ALGORITHMS)
GRID_ALGORITHMS = tuple(n for n, c in ALGORITHMS.items() if c.needs_grid)
# hosts.cc's algorithms: "dcqcn" (its [dcqcn] variant: dcqcn_<variant>) or another by name
DCQCN_VARIANTS = tuple(n[len("dcqcn_"):] for n in CC_ALGORITHMS if n.startswith("dcqcn_"))
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
    ``emulator.spec.check.section``: finite, in [lo, hi] (``open_lo``: (lo, hi]).
    ``time_s``: the field is a real-scale time in units of that many seconds (1e-3: ms);
    ``rate_bps``: a real-scale rate in units of that many bit/s (1e9: Gb/s). Its value
    once scaled by the run's dilation must then also be in ``emulated`` (seconds or
    bit/s, inclusive): what a process can do, declared with its config and read from
    there (a time's default: at most MAX_RUN_S)."""
    lo: float
    hi: float = math.inf
    unit: str = ""
    open_lo: bool = False
    time_s: float = 0.0
    note: str = ""
    rate_bps: float = 0.0
    emulated: tuple = ()

    def bounds(self, dilation: float) -> tuple[float, bool, float]:
        """(lo, open_lo, hi) at this dilation, in the field's own unit."""
        if self.time_s:
            elo, ehi = self.emulated or (-math.inf, MAX_RUN_S)
            per = dilation * self.time_s          # emulated seconds per unit
        elif self.rate_bps:
            elo, ehi = self.emulated
            per = self.rate_bps / dilation        # emulated bit/s per unit
        else:
            return self.lo, self.open_lo, self.hi
        lo, open_lo = (self.lo, self.open_lo) if elo / per <= self.lo else (elo / per, False)
        return lo, open_lo, min(self.hi, ehi / per)

    def allowed(self, v, dilation: float) -> str | None:
        """None if ``v`` is allowed, else what is allowed, in words."""
        lo, open_lo, hi = self.bounds(dilation)
        ok = finite(v) and (v > lo if open_lo else v >= lo) and v <= hi
        if ok:
            return None
        low, top = _fmt(lo), _fmt(hi)
        if isinstance(v, int) and not isinstance(v, bool) and not self.time_s:
            return f"must be >= {low}: an integer in {low}..{top}{self.note}"
        head = (f"must be >= {low}: " if lo >= 1 or lo == 0 and not open_lo
                else "must be > 0: " if lo >= 0 else "")     # a floor just above 0
        span = f"{'(' if open_lo else '['}{low}, {top}]{self.unit}"
        what = "time" if self.time_s else "number"
        return f"{head}a finite {what} in {span}{self._scaled(dilation)}{self.note}"

    def _scaled(self, dilation: float) -> str:
        """What the emulated bounds say, for a real-scale quantity."""
        d = f"D = {_fmt(dilation)}"
        if self.time_s and self.emulated:
            elo, ehi = self.emulated
            return (f" at real scale (at least {_fmt(elo)} s and at most {_fmt(ehi)} s "
                    f"once dilated by {d})")
        if self.time_s:
            return f" at real scale (at most {_fmt(MAX_RUN_S)} s once dilated by {d})"
        if self.rate_bps:
            elo, ehi = self.emulated
            return f" at real scale ({_fmt(elo)}..{_fmt(ehi)} bit/s once divided by {d})"
        return ""


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
    dilation: float = _num(DEFAULT_DILATION, MIN_DILATION, MAX_DILATION)
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
    link_rate_gbps: float = _num(PAPER_LINK_RATE_BPS / 1e9, 1e-3, 1e4, " Gb/s", rate_bps=1e9,
                                 emulated=(MIN_RATE_BPS, MAX_RATE_BPS))   # an agent's port
    buffer_bytes: int = wiring.DEFAULT_BUFFER_BYTES
    pods: int = 1
    cores: int = 0
    oversubscription: float = _num(1.0, wiring.MIN_OVERSUBSCRIPTION,
                                   wiring.MAX_OVERSUBSCRIPTION)
    servers: int = 1                 # how many servers (a list in the file: real ones)
    ssh: bool = False
    ssh_config: str = ""
    underlay_gbps: float = _num(0.0, 0.0, 1e5, " Gb/s")
    flow_control: str = "drop"       # drop | pfc (the paper's lossless fabric: 802.1Qbb PFC)
    paths: str = "per_seed"          # PATH_DRAWS: each seed draws the flows' ECMP paths anew,
                                     # or "fixed": every seed takes path_seed's (HPCC's ns-3)
    path_seed: int = 0               # the fixed draw (paths = "fixed"); 0: unsalted ports
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
class SwitchSpec:                    # defaults, bounds: the agent's (switch_agent.config)
    red: bool = RedParams.enabled
    kmin_bytes: int = _num(RedParams.kmin_bytes, 0, MAX_THRESHOLD_BYTES)
    kmax_bytes: int = _num(RedParams.kmax_bytes, 0, MAX_THRESHOLD_BYTES)
    pmax: float = RedParams.pmax
    red_scale_with_rate: bool = False    # kmin/kmax are for a link_rate_gbps port; a port
                                         # at rate r uses them x r/link_rate (HPCC)
    trace_arrivals: bool = AgentConfig.trace_arrivals   # every queued packet (a study)
    red_per_class: bool = RedParams.per_class   # pq's ports: RED on the packet's class's
                                                # backlog (HPCC's ns-3) | the port's


@dataclass(frozen=True)
class SymphonySpec:                  # defaults, bounds: the agent's (switch_agent.config)
    k: float = _num(SymphonyParams.k, 0, K_MAX)   # P = min(1, k alpha psn / psn_rec)
    tau: float = SymphonyParams.tau
    t_win_us: float = _num(T_WIN_S * 1e6, 0.1, unit=" µs", time_s=US,   # real scale
                           emulated=(MIN_T_WIN_S, MAX_RUN_S))           # and the agent's
    n_warmup: int = _num(SymphonyParams.n_warmup, 0, MAX_WINDOWS)
    n_sample: int = _num(SymphonyParams.n_sample, 0, MAX_WINDOWS)
    tracking: str = SymphonyParams.tracking   # job (Algorithm 1) | ring: per (job, ring)
    mark_min_queue_bytes: int = SymphonyParams.mark_min_queue_bytes   # 0: Algorithm 1's

    def t_win_s(self, scale: Scale) -> float:
        """The window as an agent takes it (``SymphonyParams.t_win_s``): emulated seconds.
        (µs / 1e6, not x 1e-6: the default then is the agent's own T_WIN_S to the bit.)"""
        return scale.time_s(self.t_win_us / 1e6)


_PFC = PfcParams(buffer_bytes=1, headroom_bytes=0)   # the MMU's defaults (an instance)
PAUSE_FRAME_BYTES = 60               # runtime.pause.FRAME_BYTES


@dataclass(frozen=True)
class PfcSpec:
    """[pfc]: each switch's lossless buffer when ``topology.flow_control = "pfc"``
    (``switch_agent.pfc``: HPCC ns-3's switch MMU, which the paper's simulations ran).
    Bytes are the same at every dilation; ``reaction_us`` is real scale, dilated."""
    # 0: HPCC's run.py, 16 MiB per 50 Gb/s of link rate (3.2 MiB at 10 Gb/s)
    buffer_bytes: int = _num(0, 0, 1 << 34, " B", note=" (0: 16 MiB x link rate / 50 Gb/s)")
    alpha: float = _num(_PFC.alpha, 0, MAX_PFC_ALPHA, open_lo=True)   # HPCC: 1/8
    reserve_bytes: int = _num(_PFC.reserve_bytes, 0, 1 << 30, " B")   # HPCC: 4 KiB
    resume_offset_bytes: int = _num(_PFC.resume_offset_bytes, 0, 1 << 30, " B")  # 3 KiB
    # per ingress port; 0: what can still arrive once a port decides XOFF: a frame in
    # service ahead of the PAUSE, one its upstream starts meanwhile, the PAUSE itself,
    # and the link rate x reaction_us (HPCC: 3 x rate x its links' 1 us delay)
    headroom_bytes: int = _num(0, 0, 1 << 30, " B", note=" (0: two frames, a PAUSE and "
                                                         "link rate x reaction_us)")
    # cable delay both ways + the switch's processing, real scale: the simulator's
    # links and switches have neither (0)
    reaction_us: float = _num(0.0, 0, unit=" µs", time_s=US)
    quanta: int = _num(_PFC.quanta, 1, 0xFFFF, note=" (512 bit-times each)")
    # ACK, NAK, CNP in a priority of their own, served first and never paused (HPCC's
    # DCQCN runs: ACK_HIGH_PRIO 1); false: in RoCE's lossless one, behind data
    control_priority: bool = True

    def params(self, link_rate_gbps: float, mtu_bytes: int) -> PfcParams:
        """The MMU's parameters on links of ``link_rate_gbps`` carrying ``mtu_bytes``."""
        rate_Bps = link_rate_gbps * 1e9 / 8
        frame = mtu_bytes + wire.OVERHEAD_BYTES + L2_HEADER_BYTES    # 4154 B at 4096
        return PfcParams(
            buffer_bytes=self.buffer_bytes
            or round(HPCC_BUFFER_BYTES_PER_BPS * link_rate_gbps * 1e9),
            headroom_bytes=self.headroom_bytes or math.ceil(
                2 * frame + PAUSE_FRAME_BYTES + rate_Bps * self.reaction_us * 1e-6),
            alpha=self.alpha, reserve_bytes=self.reserve_bytes,
            resume_offset_bytes=self.resume_offset_bytes, quanta=self.quanta)


_NIC_DCQCN = DcqcnParams()           # the NIC's defaults (an instance: a compiled dataclass's
                                     # class holds no field defaults, runtime/compiled.py)


@dataclass(frozen=True)
class DcqcnSpec:                     # defaults: the NIC's own (hosts.cc.dcqcn)
    variant: str = "paper"
    min_rate_gbps: float = _num(_NIC_DCQCN.min_rate_bps / 1e9, 1e-4, 1e4,   # Rmin (HPCC's
                                " Gb/s")                                     # run.py: 1)
    clamp_target_rate: bool = _NIC_DCQCN.clamp_target_rate   # mlx: false = HPCC's rule
    first_cut_at_once: bool = _NIC_DCQCN.first_cut_at_once   # mlx: false = HPCC's rule


@dataclass(frozen=True)
class TransportSpec:
    mtu_bytes: int = TransportParams.mtu_bytes       # scale-free: declared on the
    ack_every: int = _num(TransportParams.ack_every, 1, MAX_ACK_EVERY)   # NIC's own type
    per_step_sport: bool = TransportParams.per_step_sport
    # real scale; above a full 512 KB queue at 10 Gb/s (420 us)
    rto_us: float = _num(1000.0, 0, unit=" µs", open_lo=True, time_s=US)
    nak_timeout_us: float = _num(200.0, 0, unit=" µs", open_lo=True, time_s=US)
    congestion_control: str = "dcqcn"   # dcqcn ([dcqcn] variant) | none | a hosts.cc name
    congestion_flag: str = TransportParams.congestion_flag      # cnp | ack (HPCC's)

    def rto_s(self, scale: Scale) -> float:
        """``TransportParams.rto_s``: emulated seconds."""
        return scale.time_s(self.rto_us / 1e6)

    def nak_timeout_s(self, scale: Scale) -> float:
        """``TransportParams.nak_timeout_s``: emulated seconds."""
        return scale.time_s(self.nak_timeout_us / 1e6)


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
    in_flight: int = 1               # a workload's all-reduces under way at once; 0: any
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
    job: int = MessageConfig.job
    step: int = MessageConfig.step
    channel: int = MessageConfig.channel


@dataclass(frozen=True)
class RunSpec:
    schemes: tuple = ("baseline", "symphony")
    seeds: tuple = (1,)
    primary: str = "auto"
    timeout_s: float = _num(600.0, 0, MAX_RUN_S, " s (wall clock, emulated)", open_lo=True)
    verify: str = "auto"             # buffers | checksums | auto (emulator.plan.memory)
    verify_budget_gb: float = _num(4.0, 0, 1e6, " GB", open_lo=True)


@dataclass(frozen=True)
class Spec:
    name: str
    path: str
    description: str = ""
    profile: str | None = None          # a transport profile applied (emulator.spec.profiles)
    scale: ScaleSpec = field(default_factory=ScaleSpec)
    topology: TopologySpec = field(default_factory=TopologySpec)
    switch: SwitchSpec = field(default_factory=SwitchSpec)
    symphony: SymphonySpec = field(default_factory=SymphonySpec)
    dcqcn: DcqcnSpec = field(default_factory=DcqcnSpec)
    transport: TransportSpec = field(default_factory=TransportSpec)
    collective: CollectiveSpec = field(default_factory=CollectiveSpec)
    sim: SimSpec = field(default_factory=SimSpec)
    pfc: PfcSpec = field(default_factory=PfcSpec)
    jobs: tuple = ()
    messages: tuple = ()
    perturbations: tuple = ()
    run: RunSpec = field(default_factory=RunSpec)
    paper: tuple = ()                   # what the paper reports here (emulator.spec.paper)
    raw: dict = field(default_factory=dict, compare=False, repr=False)


SECTIONS = {"scale": ScaleSpec, "topology": TopologySpec, "switch": SwitchSpec,
            "symphony": SymphonySpec, "dcqcn": DcqcnSpec, "transport": TransportSpec,
            "collective": CollectiveSpec, "sim": SimSpec, "pfc": PfcSpec, "run": RunSpec}
TOP_KEYS = ("name", "description", "profile", "jobs", "job_stream", "messages",
            "perturbations", "variants", "paper") + tuple(SECTIONS)

