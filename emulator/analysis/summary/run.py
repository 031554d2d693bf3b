"""One run's result in ``summary.json`` (``report.analyze_run``): its jobs and their
collectives, its transport's counts, its fidelity verdict, its plain messages and, for
an emulated run, the split of its time (``emulator.analysis.split``).

Times are emulated seconds from the run's t = 0; rates bit/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.analysis.summary.codec import Part, flag, key


@dataclass(frozen=True, kw_only=True)
class CollectiveResult(Part):
    """One pass of a job's collective; ``failed``: not finished by every rank (no CCT,
    never a slow result)."""
    pass_index: int = key("pass")
    nbytes: int                     # each rank's buffer
    start_s: float | None = key(absent=None)    # its earliest rank's; None when failed
    cct_s: float | None
    theoretical_cct_s: float        # the lockstep bound at link rate
    cct_ratio: float | None         # cct_s / theoretical_cct_s
    failed: bool
    verified: bool                  # every rank's result right
    algbw_bps: float | None         # nccl-tests' conventions (metrics.bandwidths)
    busbw_bps: float | None


@dataclass(frozen=True, kw_only=True)
class JobResult(Part):
    job: int
    algorithm: str
    ranks: int
    nbytes: int
    collectives: list[CollectiveResult]
    jct_s: float | None             # from the job's start to its last collective's end
    max_step_overlap: int
    last_step_span_s: float


COUNTED = ("packets", "retransmits", "timeouts", "naks", "cnps")   # FlowSent's, summed


@dataclass(frozen=True, kw_only=True)
class Transport(Part):
    """The run's senders' counts, summed over its flows (:data:`COUNTED`), and what the
    switches dropped or never saw (``verdict.switch_losses``)."""
    packets: int
    retransmits: int
    timeouts: int
    naks: int
    cnps: int
    switch_drops: int | None        # None: reported before they were counted (upgraded)


@dataclass(frozen=True, kw_only=True)
class Lossless(Part):
    """A lossless fabric's run (``topology.flow_control = "pfc"``, simulated; docs/
    architecture.md §5.6): the PAUSE frames its switches sent, the ports they paused and
    for how long (emulated port-seconds, every paused port's time added), and the frames
    a switch's buffer could not take (which must be 0: else the run is not faithful)."""
    pauses: int                     # XOFFs sent, refreshes included
    resumes: int                    # XONs
    ports_paused: int
    paused_s: float
    max_paused_s: float             # the most one port was paused
    drops: int


@dataclass(frozen=True, kw_only=True)
class Fidelity(Part):
    """The run's verdict (``emulator.analysis.verdict``): ``faithful`` unless it has a
    reason or an error, and the measures judged."""
    faithful: bool
    reasons: list[str]              # why it is not faithful, one line each
    errors: list[str]               # wrong results, collectives never completed
    cpu_busy: float | None
    cpu_steal: float | None
    cpu_busy_servers: dict[str, float | None] | None     # server -> busy share
    nfqueue_drops: dict[str, int]   # switch -> packets its agent never saw
    pacing_mean_late_s: float | None
    start_offset_max_s: float | None
    clock_bound_max_s: float | None
    agent_hold_mean_s: float | None
    agent_hold_frames: float | None
    host_rx_lag_mean_s: float | None
    host_rx_lag_frames: float | None
    cct_ratio_min: float | None
    cct_ratio_max: float | None
    queue_err_mean_bytes_max: float | None
    busy_util_min: float | None
    busy_util_max: float | None
    perturbations: list[str]        # what each did, in words
    perturbation_effects: list[str]
    # an emulated run replayed in the model (verdict.judge_emulation_error): the emulated
    # over the fluid time where the model saw no congestion (None: it saw some)
    judged_emulation: bool = flag()
    emulation_error_x: float | None = key(present="judged_emulation")


@dataclass(frozen=True, kw_only=True)
class Message(Part):
    """A plain message (a spec's ``[[messages]]``) as both ends logged it."""
    src: str                        # host IPs
    dst: str
    job: int
    step: int
    bytes: int
    start_s: float
    end_s: float
    fct_s: float


@dataclass(frozen=True, kw_only=True)
class CollectiveSplit(Part):
    """One collective's times on the run's own paths (``split``'s module docstring)."""
    pass_index: int = key("pass")
    bound_s: float
    fluid_s: float | None
    ideal_s: float | None
    emulated_s: float | None
    routing_x: float | None         # fluid / bound
    transport_x: float | None       # emulated / fluid
    ideal_gain: float | None        # 1 - ideal / fluid
    # with the run's twin simulated (Split.twin): its CCT, and emulated / it
    twinned: bool = flag()
    sim_s: float | None = key(present="twinned")
    emulation_x: float | None = key(present="twinned")


@dataclass(frozen=True, kw_only=True)
class JobSplit(Part):
    """A job's span (first collective's start to the last's end) each way."""
    job: int
    collectives: list[CollectiveSplit]
    fluid_jct_s: float | None
    fluid_jct_range_s: list[float] | None     # [min, max] under other timing draws
    ideal_jct_s: float | None
    emulated_jct_s: float | None
    sim_jct_s: float | None


@dataclass(frozen=True, kw_only=True)
class MessageSplit(Part):
    """A plain message alone at line rate, in the model on its recorded path, emulated."""
    src: str                        # host names
    dst: str
    src_ip: str
    dst_ip: str
    job: int
    step: int
    bound_s: float
    fluid_s: float | None
    ideal_s: float | None
    emulated_s: float | None
    routing_x: float | None
    transport_x: float | None
    ideal_gain: float | None


SIMULATED = "simulated"             # Split.twin when the run's twin was simulated


@dataclass(frozen=True, kw_only=True)
class Split(Part):
    """An emulated run replayed on the paths its packets took (``split.replay``)."""
    paths_recorded: int
    flows: int
    jobs: list[JobSplit]
    not_modelled: list[str]         # what the model leaves out of the plan
    twin: str                       # SIMULATED, or why there is no twin
    messages: list[MessageSplit] = key(absent=())
    emulation_error_x: float | None  # split.static_error_x; None: not static routing


@dataclass(frozen=True, kw_only=True)
class RunResult(Part):
    """One (scheme, seed, repeat) run folder's analysis."""
    scheme: str
    seed: int
    repeat: int                     # 1, or the how-manieth run of this seed (--repeat)
    rundir: str                     # in memory a full path; in the file, relative to it
    backend: str                    # emulation, sim, fluid
    twin_of: str | None             # the emulated run this one is the simulated twin of
    order: list[str]                # its jobs' dependency rules
    jobs: list[JobResult]
    together_throughput_bps: float | None     # several jobs: while all of them run
    transport: Transport
    fidelity: Fidelity
    # an emulated run done, with jobs or messages, is replayed (split.replay): its split,
    # None when its agents recorded no paths
    replayed: bool = flag()
    split: Split | None = key(present="replayed")
    messages: list[Message] = key(absent=())
    overlap_s: float | None = key(absent=None)    # two messages: how long both ran
    lossless: Lossless | None = key(absent=None)  # a lossless fabric's pauses
