"""What crosses the process boundary to a host process: its typed configurations.

The runner compiles a spec into a run plan (``emulator.plan``) holding one
:class:`HostConfig` per host, in emulated units (``runtime.scale`` converted them once).
The launcher writes each as JSON and the process reads it back into the same class,
through the one codec of ``runtime.codec``; each range check lives once, in the type's
``__post_init__`` (docs/architecture.md §9).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.cc import CcConfig
from hosts.collectives.order import DEFAULT_ORDER, ORDERS
from runtime import wire
from runtime.codec import Codec, check, check_group, check_netns_pid, finite


CONGESTION_FLAGS = ("cnp", "ack")
# how a rank verifies its results: on real buffers (hosts.collectives.expected) or by
# the statistics of structured inputs (hosts.collectives.checksums), docs/architecture.md §4
VERIFY_MODES = ("buffers", "checksums")
# by checksums, a message's bytes are generated, and a received one fitted, this many at a
# time (hosts.collectives.checksums): what a message in flight holds
STREAM_BYTES = 1 << 18
MAX_ACK_EVERY = 1024                 # in-order packets per ACK (transport.ack_every)
# A finished host stays (re-ACKing what peers send again) until the launcher says every
# host has finished, or at most this many RTOs: a peer whose last ACK was lost resends
# one RTO after its last send, so a host that left sooner let that peer time out
LINGER_RTOS = 3
MIN_LINGER_S = 0.5


@dataclass(frozen=True)
class TransportParams(Codec):
    """The NIC's transport (docs/architecture.md §3.1), emulated. ``rto_s`` and
    ``nak_timeout_s`` have no default here: the spec's real-scale ``transport.rto_us`` /
    ``nak_timeout_us`` are their one declaration, dilated by the plan."""
    rto_s: float                       # go-back-N timeout, from the last send
    nak_timeout_s: float               # receiver: a further NAK for the same gap after this
    mtu_bytes: int = wire.DEFAULT_MTU_BYTES
    ack_every: int = 8
    max_outstanding: int | None = None
    per_step_sport: bool = True
    sport_seed: int = 0                # salts source ports: each run seed draws new paths
    verify_icrc: bool = True
    rate_sample_s: float = 0.05        # rate/goodput samples per flow, emulated seconds
    # how a receiver tells a sender of CE marks: "cnp", a CNP per flow per cc interval at
    # most (RoCEv2); "ack", the ACK of every CE-marked packet carries BECN, a marked packet
    # is acknowledged at once (HPCC ns-3's notification point, with its ACK per packet)
    congestion_flag: str = "cnp"

    def __post_init__(self):
        check(self.congestion_flag in CONGESTION_FLAGS, "congestion_flag",
              self.congestion_flag, f"allowed: {', '.join(CONGESTION_FLAGS)}")
        check(isinstance(self.mtu_bytes, int) and 256 <= self.mtu_bytes <= 8192
              and self.mtu_bytes % 4 == 0, "mtu_bytes", self.mtu_bytes,
              "must be a multiple of 4 in 256..8192")
        check(isinstance(self.ack_every, int) and 1 <= self.ack_every <= MAX_ACK_EVERY,
              "ack_every", self.ack_every, f"must be >= 1: in 1..{MAX_ACK_EVERY}")
        for name in ("rto_s", "nak_timeout_s", "rate_sample_s"):
            v = getattr(self, name)
            check(finite(v) and v > 0, name, v, "must be > 0")
        check(self.max_outstanding is None or self.max_outstanding >= 1, "max_outstanding",
              self.max_outstanding, "must be >= 1 or None")


@dataclass(frozen=True)
class RankConfig(Codec):
    """One rank of one job on this host (``hosts.rank``). ``group``: the rank's ring (rank
    ids in ring order), or for grid algorithms the grid's rows. Times emulated."""
    job: int
    rank: int
    algorithm: str
    group: tuple
    channel: int                     # channel of the rank's first ring (wire field)
    rank_ips: dict[int, str]
    nbytes: int
    passes: int
    steps_per_collective: int
    seed: int
    compute_gap_s: float = 0.0
    start_s: float = 0.0
    after_job: int = 0               # start once this host's rank of that job finished
    step_delay_s: float = 0.0        # a straggler's compute time before each step's send
    # A training workload: (nbytes, ready_s, begins_iteration) per collective, else None.
    program: tuple | None = None
    order: str = DEFAULT_ORDER       # the dependency rule (hosts.collectives.order)
    verify: str = "buffers"          # VERIFY_MODES: real buffers or checksums
    in_flight: int = 1               # a program's collectives under way at once (0: any)

    def __post_init__(self):
        check(self.order in ORDERS, "order", self.order, f"allowed: {', '.join(ORDERS)}")
        check(self.verify in VERIFY_MODES, "verify", self.verify,
              f"allowed: {', '.join(VERIFY_MODES)}")
        check(1 <= self.job <= wire.MAX_JOB, "job", self.job, f"must be in 1..{wire.MAX_JOB}")
        check(self.nbytes >= 4 and self.nbytes % 4 == 0, "nbytes", self.nbytes,
              "must be a positive multiple of 4")
        check(self.passes >= 1, "passes", self.passes, "must be >= 1")
        check(self.in_flight >= 0, "in_flight", self.in_flight, "must be >= 0 (0: no limit)")
        for name in ("compute_gap_s", "start_s", "step_delay_s"):
            v = getattr(self, name)
            check(finite(v) and v >= 0, name, v, "must be a finite number >= 0")
        check(self.seed >= 0, "seed", self.seed, "must be >= 0")


@dataclass(frozen=True)
class MessageConfig(Codec):
    """One message of a ``hosts.host`` process: to ``peer`` (a send) or from it."""
    peer: str
    bytes: int
    job: int = 1
    channel: int = 0
    step: int = 0
    start_s: float = 0.0             # sends: when, after t = 0
    sport: int | None = None


@dataclass(frozen=True)
class HostConfig(Codec):
    """Everything one host process needs. A host runs collective ranks (``ranks``,
    ``python -m hosts.rank``) or plain messages (``sends``/``receives``,
    ``python -m hosts.host``). ``t = 0`` comes through the launcher's ready barrier."""
    name: str
    ip: str
    line_rate_bps: float
    cc: CcConfig
    transport: TransportParams
    timeout_s: float
    telemetry_path: str | None = None
    ranks: tuple[RankConfig, ...] = ()
    sends: tuple[MessageConfig, ...] = ()
    receives: tuple[MessageConfig, ...] = ()
    linger_s: float | None = None    # the longest a finished host waits for the run's end
                                     # (None: LINGER_RTOS RTOs, at least MIN_LINGER_S)
    pfc: bool = False                # a lossless fabric: the NIC honours PAUSE frames

    def __post_init__(self):
        check(finite(self.line_rate_bps) and self.line_rate_bps > 0, "line_rate_bps",
              self.line_rate_bps, "must be a finite rate > 0")
        check(finite(self.timeout_s) and self.timeout_s > 0, "timeout_s", self.timeout_s,
              "must be a finite time > 0")
        check(not (self.ranks and (self.sends or self.receives)), "ranks", len(self.ranks),
              "a host process runs either collective ranks or messages, not both")
        check(self.linger_s is None or (finite(self.linger_s) and self.linger_s >= 0),
              "linger_s", self.linger_s, "must be a time >= 0, or None")

    @property
    def linger_limit_s(self) -> float:
        """How long a finished host serves its NIC at most, if the launcher's end does
        not come first (``hosts.group``)."""
        if self.linger_s is not None:
            return self.linger_s
        return max(MIN_LINGER_S, LINGER_RTOS * self.transport.rto_s)

    @property
    def module(self) -> str:
        """The host program this configuration is for."""
        return "hosts.rank" if self.ranks else "hosts.host"

    @property
    def total_steps(self) -> int:
        """Progress units: steps of every collective of every rank (messages: 1 each)."""
        if not self.ranks:
            return len(self.sends) + len(self.receives)
        return sum((len(r.program) if r.program else r.passes) * r.steps_per_collective
                   for r in self.ranks)


STDOUT = "-"      # MemberConfig.out: protocol lines on stdout (a process reached over ssh)


@dataclass(frozen=True)
class MemberConfig(Codec):
    """One host of a host process (``hosts.group``)."""
    config: str                       # its HostConfig, as JSON (<host>.host.json)
    out: str                          # its protocol lines (<host>.host.out); STDOUT:
                                      # on the process's stdout as "@<host> <line>"
    netns_pid: int = 0                # a process in its network namespace; 0: the process's own

    def __post_init__(self):
        check_netns_pid(self.netns_pid)


@dataclass(frozen=True)
class GroupConfig(Codec):
    """The hosts one process serves (docs/architecture.md §3.4), written by the launcher
    as ``<first host>.group.json``."""
    members: tuple[MemberConfig, ...]
    cpu: int | None = None            # run on this CPU only (runtime.sched); None: anywhere

    def __post_init__(self):
        check_group(self.members, self.cpu, "host")
