"""The switch agent's configuration: what the run plan (``emulator.plan``) gives each agent
and the agent reads back, through the one codec of ``runtime.codec``. Emulated units.

The parameters' range checks live here, once: the agent's control commands, the Symphony
tracker's live reconfiguration and the spec layer (which names the spec key) all build
these types and so run the same checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime.codec import Codec, check, check_group, check_netns_pid, finite
from runtime.scale import DEFAULT as DEFAULT_SCALE, Scale
from switch_agent.schemes import SWITCH_SCHEMES

TRACKING = ("job", "ring")
T_WIN_S = 100e-6            # Symphony's window at real scale (paper §4.1); the spec's default
# Emulated bounds of what one agent can do. The agent handles a packet in microseconds, so
# a shorter window would close on every packet (and 1e-300 s overflows the window index);
# a port's rate below 1 kbit/s never drains a frame in a run, above 1 Tbit/s is ~1000x what
# a Python agent forwards.
MIN_T_WIN_S = 1e-6
MIN_RATE_BPS, MAX_RATE_BPS = 1e3, 1e12
# Scale-free bounds, here for the agent's live commands and the spec alike (the spec's
# keys read them): RED thresholds up to the largest port buffer a spec may give
# (topology.buffer_bytes <= 2**30), Symphony's warm-up and sample counts in windows.
MAX_THRESHOLD_BYTES = 1 << 30
MAX_WINDOWS = 10**6


@dataclass(frozen=True)
class RedParams(Codec):
    """RED/ECN thresholds of the congestion point (docs/architecture.md §5.2)."""
    enabled: bool = True
    kmin_bytes: float = 50_000         # the paper's text (§4.1); HPCC ns-3's run.py scales
    #                                    them with the port rate: 40/160 KB at 10 Gb/s
    #                                    (emulator/spec/profiles.py, profile "hpcc")
    kmax_bytes: float = 100_000
    pmax: float = 0.2
    # > 0: the thresholds are for a port of this rate (b/s, emulated), and a port draining
    # at r uses them times r / rate_ref_bps (HPCC ns-3's run.py sets Kmin/Kmax per port
    # bandwidth); 0: the same thresholds on every port
    rate_ref_bps: float = 0.0
    # a port with two classes (pq): True marks on the backlog of the packet's own class
    # (HPCC's ns-3, SwitchMmu::ShouldSendCN), False on the port's whole queue
    per_class: bool = True

    def __post_init__(self):
        check(isinstance(self.enabled, bool), "enabled", self.enabled, "must be true or false")
        check(isinstance(self.per_class, bool), "per_class", self.per_class,
              "must be true or false")
        check(finite(self.kmin_bytes) and finite(self.kmax_bytes)
              and 0 <= self.kmin_bytes < self.kmax_bytes, "kmin_bytes", self.kmin_bytes,
              f"need 0 <= kmin_bytes < kmax_bytes ({self.kmax_bytes})")
        check(self.kmax_bytes <= MAX_THRESHOLD_BYTES, "kmax_bytes", self.kmax_bytes,
              f"must be at most {MAX_THRESHOLD_BYTES} bytes")
        check(finite(self.pmax) and 0 <= self.pmax <= 1, "pmax", self.pmax, "must be in [0, 1]")
        check(finite(self.rate_ref_bps) and self.rate_ref_bps >= 0, "rate_ref_bps",
              self.rate_ref_bps, "must be >= 0 (0: thresholds not scaled with the port rate)")


K_MAX = 100.0      # Symphony's gain k: P = min(1, k alpha psn / psn_rec) saturates far below


@dataclass(frozen=True)
class SymphonyParams(Codec):
    """Symphony's parameters (the paper's Algorithm 1, §3.4-§3.5): gain ``k``, alpha's
    smoothing ``tau``, the window ``t_win_s`` (emulated), the windows of warm-up and of
    sampling. ``tracking``: the tracker's state per ``job`` (Algorithm 1) or per
    (job, ring) — docs/architecture.md §5.3. ``mark_min_queue_bytes``: Symphony's marks
    only on a port whose backlog (the packet's included) is at least this; 0, the paper's
    rule, marks whatever the queue (§3.3: "even when the network is not physically
    congested"). An option to measure that rule by, never the default."""
    t_win_s: float                     # no default here: T_WIN_S, dilated by the plan
    k: float = 0.01
    tau: float = 0.25
    n_warmup: int = 2
    n_sample: int = 8
    tracking: str = "job"
    mark_min_queue_bytes: int = 0

    def __post_init__(self):
        check(finite(self.k) and 0 <= self.k <= K_MAX, "k", self.k, f"must be in [0, {K_MAX:g}]")
        check(finite(self.tau) and 0 <= self.tau <= 1, "tau", self.tau, "must be in [0, 1]")
        check(finite(self.t_win_s) and self.t_win_s >= MIN_T_WIN_S, "t_win_s", self.t_win_s,
              f"must be a time >= {MIN_T_WIN_S:g} s (emulated)")
        for name in ("n_warmup", "n_sample"):
            v = getattr(self, name)
            check(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_WINDOWS,
                  name, v, f"must be an integer >= 0 and <= {MAX_WINDOWS}")
        check(self.tracking in TRACKING, "tracking", self.tracking,
              f"allowed: {', '.join(TRACKING)}")
        check(isinstance(self.mark_min_queue_bytes, int)
              and not isinstance(self.mark_min_queue_bytes, bool)
              and 0 <= self.mark_min_queue_bytes <= MAX_THRESHOLD_BYTES,
              "mark_min_queue_bytes", self.mark_min_queue_bytes,
              f"must be an integer in 0..{MAX_THRESHOLD_BYTES} (bytes; 0: the paper's rule)")


@dataclass(frozen=True)
class PortParams(Codec):
    rate_bps: float
    buffer_bytes: int
    burst_bytes: float = 0.0      # the port shaper's token bucket (HTB burst)
    # The kernel holds one FIFO of buffer_bytes per class (pq: two), the port one buffer:
    # the agent drops what overflows it (docs/architecture.md §5.4).
    shared_buffer: bool = False

    def __post_init__(self):
        check(finite(self.rate_bps) and MIN_RATE_BPS <= self.rate_bps <= MAX_RATE_BPS,
              "rate_bps", self.rate_bps,
              f"must be a rate in {MIN_RATE_BPS:g}..{MAX_RATE_BPS:g} bit/s (emulated)")


# HPCC ns-3's switch MMU (switch-mmu.cc, third.cc, run.py), as the paper's simulations ran
# it: the defaults of PfcParams and of the spec's [pfc] section.
HPCC_BUFFER_BYTES_PER_BPS = 16 * 2**20 / 50e9   # run.py: 16 MiB per 50 Gb/s of link rate
MAX_PFC_ALPHA = 64.0          # HPCC's alpha is 2**-shift, shift >= 0: at most 1; ours any


@dataclass(frozen=True)
class PfcParams(Codec):
    """A switch's lossless buffer under 802.1Qbb PFC (``switch_agent.pfc``; docs/
    architecture.md §5.6): one shared buffer, per ingress port a reserve of its own and a
    headroom for what is still in flight when it pauses its upstream. An ingress port
    sends XOFF once its bytes beyond the reserve reach ``alpha`` x the free shared buffer
    (a dynamic threshold), or once it uses headroom; XON once it uses no headroom and
    ``resume_offset_bytes`` below that threshold. Bytes: the same at every dilation."""
    buffer_bytes: int                  # no default: HPCC's scales with the link rate
    headroom_bytes: int                # per ingress port; no default: the plan sizes it
    alpha: float = 0.125               # switch-mmu's pfc_a_shift = 3 (third.cc)
    reserve_bytes: int = 4096          # switch-mmu: reserve = 4 KiB per port and queue
    resume_offset_bytes: int = 3072    # switch-mmu: resume_offset = 3 KiB
    quanta: int = 0xFFFF               # per PAUSE, refreshed at half its time (see pfc.py)

    def __post_init__(self):
        for name in ("buffer_bytes", "headroom_bytes", "reserve_bytes", "resume_offset_bytes"):
            v = getattr(self, name)
            check(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 1 << 40,
                  name, v, "must be an integer number of bytes, >= 0")
        check(self.buffer_bytes > 0, "buffer_bytes", self.buffer_bytes, "must be > 0")
        check(finite(self.alpha) and 0 < self.alpha <= MAX_PFC_ALPHA, "alpha", self.alpha,
              f"must be > 0: a finite number in (0, {MAX_PFC_ALPHA:g}]")
        check(isinstance(self.quanta, int) and 1 <= self.quanta <= 0xFFFF, "quanta",
              self.quanta, "must be an integer in 1..65535 (512 bit-times each)")

    def shared_bytes(self, ports: int) -> int:
        """The shared buffer of a switch of ``ports`` ports: the whole less every port's
        headroom and reserve."""
        return self.buffer_bytes - ports * (self.headroom_bytes + self.reserve_bytes)


@dataclass(frozen=True)
class AgentConfig(Codec):
    """One switch agent. ``scheme`` picks the per-packet hook after RED
    (``switch_agent.schemes``): ``baseline`` (RED only), ``symphony`` (Symphony's marks),
    ``pq`` (lagging flows to the high-priority class). ``ports`` and the paths are filled
    in by the fabric when the switch starts (it knows its interfaces)."""
    switch: str
    red: RedParams
    symphony: SymphonyParams
    scheme: str = "baseline"
    seed: int = 1
    ports: dict[str, PortParams] = field(default_factory=dict)
    queue_num: int = 0
    drop_fraction: float = 0.0
    sample_interval_s: float = 0.01
    kernel_sample_interval_s: float = 0.1   # fidelity: kernel qdisc vs model (0: off)
    telemetry_path: str | None = None
    control_name: str | None = None         # abstract socket (switch_agent.control)
    trace_arrivals: bool = False            # every queued packet into telemetry at the end
    pfc: PfcParams | None = None            # lossless ports (802.1Qbb); None: drop-tail
    # pfc: the largest frame (the MTU's, its L2 header included), which sizes what a
    # lossless port lets into its qdisc (switch_agent.lossless); ACK/NAK/CNP never paused
    pfc_frame_bytes: int = 4154
    pfc_control_priority: bool = True

    def __post_init__(self):
        check(self.scheme in SWITCH_SCHEMES, "scheme", self.scheme, f"allowed: {', '.join(SWITCH_SCHEMES)}")
        check(finite(self.drop_fraction) and 0 <= self.drop_fraction <= 1, "drop_fraction",
              self.drop_fraction, "must be in [0, 1]")


@dataclass(frozen=True)
class AgentMember(Codec):
    """One switch of an agent process."""
    config: str                        # its AgentConfig, as JSON (<switch>.agent.json)
    netns_pid: int = 0                 # a process in its network namespace; 0: the process's own

    def __post_init__(self):
        check_netns_pid(self.netns_pid)


@dataclass(frozen=True)
class AgentGroupConfig(Codec):
    """The switches one agent process serves (docs/architecture.md §5.1), written by
    ``topologies.fabric`` as ``<first switch>.agents.json``."""
    members: tuple[AgentMember, ...]
    cpu: int | None = None             # run on this CPU only (runtime.sched); None: anywhere

    def __post_init__(self):
        check_group(self.members, self.cpu, "switch")


def default_agent(switch: str, scale: Scale = DEFAULT_SCALE) -> AgentConfig:
    """An agent with every default, scheme baseline: plain Mininet use of the topologies
    (``mn --custom``), where no spec is compiled."""
    return AgentConfig(switch=switch, red=RedParams(),
                       symphony=SymphonyParams(t_win_s=scale.time_s(T_WIN_S)))
