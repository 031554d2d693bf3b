"""Every record a run's processes write, declared once: the run format.

Hosts, switch agents, the simulator and the flow-level model build these records; the
analysis reads them back as the same types (``emulator.rundir.RunFolder``). On disk a
record is one JSON object a line (``runtime.telemetry``), its fields plus ``"type"``, the
record's tag. A field added here is written by every writer that fills it and read by
every reader at once; an older run folder is upgraded by ``emulator.upgrade``, never read
through a branch in the analysis.

Times are ``time.monotonic()`` seconds in emulation (the clock every process of a run on
one machine shares) and virtual seconds from 0 in the simulator and the model.
``src``/``dst`` are host IPs, as the NIC logs them; ``step`` is the 16-bit wire step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

FORMAT = 3       # the run format: 1 = before typed records (no "format" in the manifest),
                 # 2 = before typed measurements (emulator.measurements)


class RecordError(ValueError):
    """A line that is not a record of this format (unknown type or keys): named, never
    half-read."""


@dataclass(frozen=True, slots=True)
class Record:
    TYPE: ClassVar[str] = ""


# --- hosts ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FlowSent(Record):
    """A sender's flow (one step's message to one peer), written when its last byte is
    acknowledged or it is given up (``end_s`` None). The flow-level model adds what only
    it knows: the frame bytes, host names, the node path and its re-routes."""
    TYPE: ClassVar[str] = "send_flow"
    job: int
    channel: int
    step: int
    src: str
    dst: str
    sport: int
    bytes: int
    packets: int
    start_s: float
    end_s: float | None
    retransmits: int
    timeouts: int
    naks: int
    cnps: int
    cuts: int                       # congestion control's rate cuts
    final_rate_bps: float
    rate_samples: list              # [[t_s, rate_bps], ...] at each change
    wire_bytes: int | None = None   # model: payload plus headers
    src_host: str | None = None     # model: host names
    dst_host: str | None = None
    path: list | None = None        # model: the node path at the flow's start
    reroutes: list | None = None    # model: [[t_s, path or None], ...]


@dataclass(frozen=True, slots=True)
class FlowReceived(Record):
    """A receiver's flow, written when the message is delivered in order."""
    TYPE: ClassVar[str] = "recv_flow"
    job: int
    channel: int
    step: int
    src: str
    dst: str
    bytes: int
    start_s: float
    end_s: float | None
    ce: int                         # packets that arrived CE-marked
    cnps_sent: int
    naks_sent: int
    duplicates: int
    out_of_order: int
    goodput_samples: list           # [[t_s, bytes delivered], ...]


@dataclass(frozen=True, slots=True)
class CollectiveDone(Record):
    """One rank's collective (pass ``pass_index`` of job ``job``), its result checked."""
    TYPE: ClassVar[str] = "collective"
    job: int
    rank: int
    pass_index: int
    algorithm: str
    nbytes: int
    start_s: float
    end_s: float
    verified: bool
    steps: int
    host: str | None = None         # model: the rank's host


@dataclass(frozen=True, slots=True)
class UnexpectedMessage(Record):
    """A message no program of the host was waiting for."""
    TYPE: ClassVar[str] = "unexpected_message"
    job: int
    step: int
    peer: str


@dataclass(frozen=True, slots=True)
class HostEnd(Record):
    """What a host process says of each host when it ends: the program's outcome
    (``RankSummary``, ``MessageSummary``), the NIC's counters and the process's cost."""
    name: str
    ip: str
    timed_out: bool
    ok: bool
    udp: dict                       # the namespace's UDP error counters
    counters: dict                  # the NIC's packet counters
    cnp_suppressed: int
    open_flows: int
    pacing: dict                    # {packets, mean_late_s, max_late_s}
    rx_lag: dict | None = None      # socket NIC: {packets, mean_s, max_s}
    cpu_s: float | None = None      # the process's CPU, split evenly over its hosts
    max_rss_bytes: int | None = None
    process: dict | None = None     # {pid, hosts, cpu_s, sys_s}
    clock: dict | None = None       # the process's clock checks (hosts.group)
    records: int | None = None      # the lines its telemetry file (<name>.jsonl) holds:
                                    # a file cut short is found (emulator.rundir)


@dataclass(frozen=True, slots=True, kw_only=True)
class RankSummary(HostEnd):
    """A host running ranks (``hosts.rank``)."""
    TYPE: ClassVar[str] = "rank_summary"
    collectives: int                # collectives finished
    expected: int                   # collectives its programs run
    verified: int                   # finished with the right result
    steps_applied: int
    steps_total: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageSummary(HostEnd):
    """A host sending and receiving plain messages (``hosts.host``)."""
    TYPE: ClassVar[str] = "host_summary"
    sends: int
    sends_completed: int
    receives: int
    receives_ok: int
    missing: list                   # [job, channel, step, src] of messages never arrived
    bad: dict                       # "job/channel/step/src" -> what was wrong


# --- switch agents -------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Window(Record):
    """Symphony's window of one job closed (paper §3.3): its state after the update."""
    TYPE: ClassVar[str] = "window"
    job: int
    window: int                     # index on the job's grid
    t_s: float                      # the window's start
    step_min: int
    psn_rec: int
    alpha: int
    cnt_total: int
    cnt_op: int
    marks_red: int
    marks_symphony: int
    ring: int | None = None         # the ring, under per-ring tracking (else per job)


@dataclass(frozen=True, slots=True)
class PortSample(Record):
    """A port's modelled queue and cumulative counters (only if it had traffic)."""
    TYPE: ClassVar[str] = "port"
    t_s: float
    port: str
    q_bytes: float
    max_q_bytes: float              # since the previous sample
    pkts: int
    bytes: int
    marks: int
    marks_red: int
    marks_symphony: int | None      # None: a run from before marks were counted by cause
    marks_both: int | None          # (its ``marks`` all counted as RED's)
    model_drops: int
    fault_drops: int


@dataclass(frozen=True, slots=True)
class KernelQueue(Record):
    """The kernel's qdisc beside the model at one instant (the fidelity monitor); on a
    lossless port ``model_bytes`` is the model's backlog less what the agent holds."""
    TYPE: ClassVar[str] = "kernel_q"
    t_s: float
    port: str
    model_bytes: float
    kernel_bytes: int
    sent_bytes: int
    drops: int


@dataclass(frozen=True, slots=True)
class AgentStart(Record):
    TYPE: ClassVar[str] = "start"
    t_s: float
    pid: int
    config: dict                    # the agent's configuration (switch_agent.config)


@dataclass(frozen=True, slots=True)
class Control(Record):
    """A command the agent answered (all but successful ``stats``)."""
    TYPE: ClassVar[str] = "control"
    t_s: float
    command: object
    reply: dict


@dataclass(frozen=True, slots=True)
class ControlError(Record):
    """A command that hit a bug, or a failed receive on the control socket."""
    TYPE: ClassVar[str] = "control_error"
    t_s: float
    error: str
    command: object = None
    traceback: str | None = None


@dataclass(frozen=True, slots=True)
class AgentFinal(Record):
    """An agent's state and counters at its end."""
    TYPE: ClassVar[str] = "final"
    switch: str
    t_s: float
    scheme: str
    symphony: dict                  # enabled and the tracker's parameters
    red: dict
    drop_fraction: float
    jobs: dict                      # job -> Symphony's state block
    queues: dict                    # port -> modelled backlog
    counters: dict                  # the pipeline's totals
    fidelity: dict                  # port -> switch_agent.fidelity summary
    nfqueue: dict
    control_errors: int
    max_rss_bytes: int
    cpu_s: float                    # the process's CPU, split evenly over its switches
    process: dict                   # {pid, switches, cpu_s, sys_s}


@dataclass(frozen=True, slots=True)
class FlowPorts(Record):
    """Where each flow left a switch: ``[job, channel, step, src, dst, port]`` each."""
    TYPE: ClassVar[str] = "flow_ports"
    switch: str
    flows: list


@dataclass(frozen=True, slots=True)
class PortPause(Record):
    """802.1Qbb on one port of the node whose file it is in, over the run (a lossless
    fabric, docs/architecture.md §5.6): the PAUSE frames it received for ``priority``
    and the time that stopped its sending (emulated s), the PAUSE frames it sent about
    what its link brings in, the most its switch held of that (headroom included) and
    the frames the switch could not take; ``intervals``: [start, end] of each pause, the
    first 10000 (``runtime.pause.PauseTimer``)."""
    TYPE: ClassVar[str] = "port_pause"
    port: str
    priority: int
    pauses_rx: int                  # XOFFs, refreshes included
    resumes_rx: int                 # XONs (quanta 0)
    paused_s: float
    pauses_tx: int
    resumes_tx: int
    max_ingress_bytes: int
    drops: int
    intervals: list


@dataclass(frozen=True, slots=True)
class Arrivals(Record):
    """A port's arrival trace (``[switch] trace_arrivals``), as columns."""
    TYPE: ClassVar[str] = "arrivals"
    switch: str
    port: str
    rate_bps: float
    final_rate_bps: float
    buffer_bytes: int
    burst_bytes: int
    red: dict
    t_s: list
    bytes: list
    q_bytes: list
    roce: list


# --- the flow-level model ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BackgroundFlow(Record):
    """A background stream the model carried: its path and rate changes."""
    TYPE: ClassVar[str] = "background"
    src: str
    dst: str
    rate_bps: float
    start_s: float
    end_s: float
    path: list | None
    rate_samples: list


# --- the codec -----------------------------------------------------------------------------

RECORDS: dict[str, type] = {c.TYPE: c for c in (
    FlowSent, FlowReceived, CollectiveDone, UnexpectedMessage, RankSummary, MessageSummary,
    Window, PortSample, KernelQueue, AgentStart, Control, ControlError, AgentFinal, FlowPorts,
    Arrivals, BackgroundFlow, PortPause)}
_NAMES = {c: tuple(f.name for f in dataclasses.fields(c)) for c in RECORDS.values()}
_FIELDS = {c: frozenset(names) for c, names in _NAMES.items()}


def encode(rec: Record) -> dict:
    """A record as its JSON object (fields, then its ``type``)."""
    out = {f: getattr(rec, f) for f in _NAMES[type(rec)]}
    out["type"] = rec.TYPE
    return out


def decode(data: dict) -> Record:
    """The record a JSON object holds. An unknown type or key is a :class:`RecordError`:
    a file of another format is upgraded first (``symphony-emu upgrade``)."""
    data = dict(data)
    tag = data.pop("type", None)
    cls = RECORDS.get(tag)
    if cls is None:
        raise RecordError(f"unknown record type {tag!r}; known: {', '.join(RECORDS)}")
    unknown = data.keys() - _FIELDS[cls]
    if unknown:
        raise RecordError(f"{tag}: unknown keys {sorted(unknown)}")
    try:
        return cls(**data)
    except TypeError as e:             # a missing field
        raise RecordError(f"{tag}: {e}") from None
