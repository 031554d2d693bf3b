"""What a run measured beyond its records, declared once: ``measurements.json``.

Each backend writes it once, at the run's end, through ``RunFolder.write_measurements``:
the emulated run (``emulator.launch.runner.run_one``), the live CLI's run
(``emulator.cli.live``), the simulator (``emulator.sim.run.simulate_plan``) and the
flow-level model (``emulator.launch.predict.write_run``). The analysis reads it back as
the same type (``RunFolder.measurements``). A field only some backends fill has a default
(None, or empty) and its comment names them. On disk it is the configs' codec
(``runtime.codec``), the hosts' summaries as their records (``runtime.records.encode``);
an unknown key is an error, and a folder of an older format is upgraded by
``emulator.upgrade``, never read through a branch in the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from runtime.codec import Codec
from runtime.records import MessageSummary, RankSummary, decode, encode


@dataclass(frozen=True)
class AgentMeasurements(Codec):
    """A switch at the run's end: its agent's answer to ``stats`` (emulation), or what
    the simulated pipeline counted (sim: ``counters`` only). A dead agent has only
    ``dead``, one whose server no longer answered only ``lost``."""
    counters: dict = field(default_factory=dict)    # the pipeline's totals over its ports
    nfqueue: dict = field(default_factory=dict)     # emulation: NFQUEUE's counters
    fidelity: dict = field(default_factory=dict)    # emulation: port -> switch_agent.fidelity
    dead: int | None = None         # emulation: the agent's process ended, this exit code
    lost: str | None = None         # emulation: why its server did not answer


@dataclass(frozen=True)
class PerturbationFired(Codec):
    """A perturbation of the plan, as the engine applied it (``perturbations.engine``)."""
    t_s: float                      # the plan's time, from t = 0
    # when the engine applied it, from t = 0; None: at set-up, before t = 0 (``loss``,
    # in runs from before it was timed)
    fired_s: float | None
    what: str                       # what it did, in words


@dataclass(frozen=True)
class ClockCheck(Codec):
    """A host process's clock against the coordinator's, from probe round trips before
    t = 0 (``hosts.clock.estimate``); no answer: ``probes`` 0 and no estimate."""
    hosts: list[str]                # the hosts the process serves
    probes: int                     # round trips answered
    offset_s: float | None = None   # the process's clock minus the coordinator's
    rtt_s: float | None = None      # the shortest round trip
    bound_s: float | None = None    # how far apart the two clocks can be at most


@dataclass(frozen=True)
class UnderlayUse(Codec):
    """A server's underlay over the run (:func:`underlay_use`): its counters'
    differences (``cluster.overlay.link_counters``) and mean rates."""
    server: int
    tx_bytes: int
    tx_packets: int
    rx_bytes: int
    rx_packets: int
    tx_dropped: int
    tx_errors: int
    rx_dropped: int
    rx_errors: int
    tx_bps: float
    rx_bps: float
    capacity_bps: float | None      # None: not known
    utilisation: float | None       # the busier way's share of the capacity


def underlay_use(before: list[dict] | None, after: list[dict], wall_s: float,
                 capacity_bps: list) -> list[UnderlayUse]:
    """Each server's underlay over the run: the counters' differences (``before`` at
    t = 0; None: the totals ``after`` as they are), the mean rate each way, and the busier
    way's share of its capacity (``utilisation``; None where the capacity is unknown)."""
    out = []
    for i, a in enumerate(after):
        b = before[i] if before else {}
        d = {k: (v - b.get(k, 0) if k != "server" else v) for k, v in a.items()}
        tx = 8 * d["tx_bytes"] / wall_s if wall_s > 0 else 0.0
        rx = 8 * d["rx_bytes"] / wall_s if wall_s > 0 else 0.0
        cap = capacity_bps[i] if i < len(capacity_bps) else None
        out.append(UnderlayUse(**d, tx_bps=tx, rx_bps=rx, capacity_bps=cap,
                               utilisation=max(tx, rx) / cap if cap else None))
    return out


@dataclass(frozen=True)
class SimStats(Codec):
    """What the simulator did (``emulator.sim.run``) and what it cost."""
    end_s: float                    # virtual seconds
    events: int
    data_packets: int
    port_drops: int                 # ports' buffers overflowed
    no_route_drops: int             # packets a switch had no route for
    drops_by_port: dict[str, int]   # port -> drops, ports that dropped any
    background_rx: int              # non-RoCE datagrams hosts received
    wall_s: float
    cpu_s: float
    cpu_us_per_data_packet: float | None
    # a lossless fabric (docs/architecture.md §5.6): "drop" for drop-tail ports
    flow_control: str = "drop"
    pfc_drops: int = 0                          # frames a switch's MMU could not take
    pauses: int = 0                             # XOFF frames the switches sent (refreshes too)
    resumes: int = 0                            # XON frames
    paused_s: dict[str, float] = field(default_factory=dict)   # port -> time paused


@dataclass(frozen=True)
class Measurements(Codec):
    """``measurements.json``. Empty (every field its default) for a run not done. A
    comment names the backends that fill a field: emulation (``runner``), live (the live
    CLI), sim, fluid (the model); the others leave its default."""
    backend: str = "emulation"          # "sim", "fluid" (as the manifest's)
    # t = 0 of every job's start_s: the coordinator's monotonic clock (emulation, live),
    # 0.0 (sim, fluid); None: the hosts never started
    t_start: float | None = None
    timed_out: bool = False             # emulation, sim
    timed_out_in: str | None = None     # emulation: "set-up" or "run"
    setup_error: str | None = None      # emulation: why the hosts never started
    broken: list[str] = field(default_factory=list)   # emulation: what died, what failed
    host_exit: dict[str, int | None] = field(default_factory=dict)  # emulation, live
    # each host's summary (emulation, live, sim)
    rank_summaries: dict[str, RankSummary | MessageSummary] = field(default_factory=dict)
    agents: dict[str, AgentMeasurements] = field(default_factory=dict)   # emulation, sim
    perturbations: list[PerturbationFired] = field(default_factory=list)     # emulation
    # emulation: what the perturbations cost (``Perturbation.effects``)
    perturbation_effects: list[str] = field(default_factory=list)
    captures: list[str] = field(default_factory=list)    # emulation: --pcap files
    cpu_busy: float | None = None       # emulation: this machine's CPUs, busy share
    cpu_steal: float | None = None      # emulation: of it, what a hypervisor took
    # emulation on servers reached by ssh: each one's busy share (None: not read)
    cpu_busy_servers: dict[str, float | None] | None = None
    clocks: list[ClockCheck] = field(default_factory=list)     # emulation
    underlay: list[UnderlayUse] | None = None    # emulation over several servers
    underlay_unread: str | None = None  # emulation: why the underlay could not be read
    teardown_leftovers: list[str] = field(default_factory=list)    # emulation
    # the machine's time: the run's from t = 0 (emulation); the computation's (sim, fluid)
    wall_s: float | None = None
    sim: SimStats | None = None         # sim
    host_delay_s: float | None = None   # sim: the hosts' mean delay per datagram
    not_modelled: list[str] = field(default_factory=list)   # sim, fluid
    unfinished_flows: list = field(default_factory=list)    # fluid: their flow keys
    model_stats: dict | None = None     # fluid: the model's own counters, free-form

    def to_dict(self) -> dict:
        return {**super().to_dict(),
                "rank_summaries": {h: encode(s) for h, s in self.rank_summaries.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> Measurements:
        rest = dict(data)
        summaries = rest.pop("rank_summaries", {})
        return replace(super().from_dict(rest),
                       rank_summaries={h: decode(s) for h, s in summaries.items()})
