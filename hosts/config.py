"""What crosses the process boundary: typed configurations of host processes, and the one
codec that writes and reads every process configuration (hosts and switch agents).

The runner compiles a spec into a run plan (``emulator.plan``) holding one
:class:`HostConfig` per host and one ``switch_agent.config.AgentConfig`` per switch, all
in emulated units (``runtime.scale`` converted them once). The launcher writes each as JSON
with :func:`to_dict`; the process reads it back with :func:`from_dict` into the same
class. Neither side reads a dict by string key. Each range check lives once, in the
type's ``__post_init__`` (raising :class:`ConfigError`, which names the field), and the
spec layer reuses them (docs/architecture.md §9).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass

from hosts.cc import CcConfig
from hosts.collectives.order import DEFAULT_ORDER, ORDERS
from runtime import wire


class ConfigError(ValueError):
    """A configuration value out of range: ``field`` (the attribute), ``value``, and
    ``allowed`` (what is allowed, in words)."""

    def __init__(self, field: str, value, allowed: str):
        super().__init__(f"{field} {allowed}, got {value!r}")
        self.field, self.value, self.allowed = field, value, allowed


def check(ok: bool, field: str, value, allowed: str) -> None:
    if not ok:
        raise ConfigError(field, value, allowed)


def finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# --- the codec --------------------------------------------------------------------------

def to_dict(obj):
    """A (nested) config dataclass as JSON-ready data (tuples become lists)."""
    if dataclasses.is_dataclass(obj):
        own = getattr(type(obj), "to_dict", None)
        if own is not None and own is not Codec.to_dict:
            return obj.to_dict()                 # a type with its own shape (CcConfig)
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def from_dict(cls, data, where: str | None = None):
    """The inverse of :func:`to_dict` for ``cls``, driven by its type hints. An unknown
    key is an error: a config written by another version must not be half-read."""
    own = getattr(cls, "from_dict", None)
    if own is not None and getattr(own, "__func__", None) is not Codec.from_dict.__func__:
        return own(data)                         # a type with its own shape (CcConfig)
    return _fields(cls, data, where or cls.__name__)


def _fields(cls, data, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = set(data) - set(names)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; allowed: {', '.join(names)}")
    return cls(**{k: _decode(hints[k], v, f"{where}.{k}") for k, v in data.items()})


def _decode(tp, data, where: str):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        return _decode(next(a for a in args if a is not type(None)), data, where)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, data, where)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return tuple(_decode(args[0], x, where) for x in data)
    if tp is tuple or origin is tuple:
        return _freeze(data)
    if origin is dict:
        kt, vt = args
        return {_decode(kt, k, where): _decode(vt, v, f"{where}[{k}]") for k, v in data.items()}
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if tp is int and isinstance(data, str):
        return int(data)                     # dict keys come back from JSON as strings
    return data


def _freeze(x):
    return tuple(_freeze(y) for y in x) if isinstance(x, (list, tuple)) else x


class Codec:
    """Mixin: ``cfg.to_dict()`` and ``Cls.from_dict(d)`` through the one codec."""

    def to_dict(self) -> dict:
        return {f.name: to_dict(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict):
        return _fields(cls, data, cls.__name__)


# --- host processes ---------------------------------------------------------------------

CONGESTION_FLAGS = ("cnp", "ack")


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
        check(isinstance(self.ack_every, int) and self.ack_every >= 1, "ack_every",
              self.ack_every, "must be >= 1")
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

    def __post_init__(self):
        check(self.order in ORDERS, "order", self.order, f"allowed: {', '.join(ORDERS)}")
        check(1 <= self.job <= wire.MAX_JOB, "job", self.job, f"must be in 1..{wire.MAX_JOB}")
        check(self.nbytes >= 4 and self.nbytes % 4 == 0, "nbytes", self.nbytes,
              "must be a positive multiple of 4")
        check(self.passes >= 1, "passes", self.passes, "must be >= 1")
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
    linger_s: float = 0.5

    def __post_init__(self):
        check(finite(self.line_rate_bps) and self.line_rate_bps > 0, "line_rate_bps",
              self.line_rate_bps, "must be a finite rate > 0")
        check(finite(self.timeout_s) and self.timeout_s > 0, "timeout_s", self.timeout_s,
              "must be a finite time > 0")
        check(not (self.ranks and (self.sends or self.receives)), "ranks", len(self.ranks),
              "a host process runs either collective ranks or messages, not both")

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


def check_netns_pid(pid) -> None:
    """A process group member's namespace: a process id, or 0 for the process's own."""
    check(isinstance(pid, int) and pid >= 0, "netns_pid", pid,
          "must be a process id, or 0 for the process's own namespace")


def check_group(members, cpu, what: str) -> None:
    """A process group (hosts or switches): at least one member, a CPU number or None."""
    check(len(members) > 0, "members", len(members), f"at least one {what}")
    check(cpu is None or isinstance(cpu, int) and cpu >= 0, "cpu", cpu,
          "must be a CPU number, or null")


@dataclass(frozen=True)
class GroupConfig(Codec):
    """The hosts one process serves (docs/architecture.md §3.4), written by the launcher
    as ``<first host>.group.json``."""
    members: tuple[MemberConfig, ...]
    cpu: int | None = None            # run on this CPU only (runtime.sched); None: anywhere

    def __post_init__(self):
        check_group(self.members, self.cpu, "host")
