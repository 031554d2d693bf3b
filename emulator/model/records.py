"""What the model takes besides jobs and a fabric (background streams, link events) and
what it gives back: the run format's records (``runtime.records``), as a run writes them.

``FlowSent`` / ``FlowReceived`` carry the transport's counters at 0 (no losses, no marks in
a fluid model); ``rate_samples`` are the flow's exact rate changes ``[t_s, rate_bps]``;
the model fills the fields only it knows (``wire_bytes``, host names, ``path``,
``reroutes``). ``CollectiveDone`` records come from ``emulator.model.ranks`` (``verified``
always true, ``host`` given).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime import wire
from runtime.records import BackgroundFlow, FlowReceived, FlowSent

INF = float("inf")
FlowKey = tuple        # (job, channel, step (as on the wire), src host, dst host)


@dataclass(frozen=True)
class BackgroundStream:
    """A fixed-rate non-RoCE stream (the ``background`` perturbation, emulated units)."""
    src: str
    dst: str
    rate_bps: float
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class LinkEvent:
    """At ``t_s`` the cable ``a``-``b`` goes down (``up=False``) or comes back
    (``up=True``), and/or the hop a -> b runs at ``rate_bps`` from then on."""
    t_s: float
    a: str
    b: str
    up: bool | None = None
    rate_bps: float | None = None


@dataclass
class ModelResult:
    """The run format's records (src/dst are host IPs, as the NIC logs them), so
    ``emulator.analysis.metrics`` reads them as it reads a run's."""
    send_flows: list
    recv_flows: list
    collectives: list
    background: list
    paths: dict                  # FlowKey -> node path at the flow's start
    end_s: float                 # when the last event happened
    unfinished: list             # FlowKeys of flows never delivered (black-holed)
    stats: dict = field(default_factory=dict)

    def records(self) -> list:
        """Every record, as a run's ``h*.jsonl`` files hold them together."""
        return self.send_flows + self.recv_flows + self.collectives


class Flow:
    """One fluid flow: a step's message, a plain message (no ``receiver``), or a
    background stream (``bits`` = inf)."""
    __slots__ = ("key", "job", "channel", "gstep", "src", "dst", "payload", "bits", "left",
                 "t_ref", "rate", "cap", "path", "links", "level", "version", "start_s",
                 "sport", "receiver", "pass_index", "step_index", "background", "samples",
                 "path0", "reroutes", "ecmp_key", "seq")

    def __init__(self, **kw):
        self.rate, self.version, self.level, self.samples, self.reroutes = 0.0, 0, 0, [], []
        self.cap, self.background, self.receiver = INF, False, None
        self.path = self.links = None
        for k, v in kw.items():
            setattr(self, k, v)


def flow_records(f: Flow, end_s: float, host_ips, mtu_bytes: int) -> tuple[FlowSent, FlowReceived]:
    """The sender's and the receiver's records of a delivered flow."""
    common = dict(job=f.job, channel=f.channel, step=f.gstep & wire.STEP_MASK,
                  src=host_ips[f.src], dst=host_ips[f.dst], bytes=f.payload,
                  start_s=f.start_s, end_s=end_s)
    send = FlowSent(**common, sport=f.sport, packets=max(1, -(-f.payload // mtu_bytes)),
                    retransmits=0, timeouts=0, naks=0, cnps=0, cuts=0, final_rate_bps=f.rate,
                    rate_samples=f.samples, wire_bytes=f.bits // 8, src_host=f.src,
                    dst_host=f.dst, path=list(f.path0) if f.path0 else None,
                    reroutes=[[t, list(p) if p else None] for t, p in f.reroutes])
    recv = FlowReceived(**common, ce=0, cnps_sent=0, naks_sent=0, duplicates=0,
                        out_of_order=0, goodput_samples=[])
    return send, recv


def background_record(f: Flow, bg: BackgroundStream, end_s: float, host_ips) -> BackgroundFlow:
    return BackgroundFlow(src=host_ips[f.src], dst=host_ips[f.dst], rate_bps=bg.rate_bps,
                          start_s=f.start_s, end_s=end_s,
                          path=list(f.path0) if f.path0 else None, rate_samples=f.samples)
