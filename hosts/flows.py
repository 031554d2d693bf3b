"""A NIC's flows: one message of one (job, channel, step) between two hosts, one QP with
PSNs from 0 -- the state a sender and a receiver keep (its UDP source port, the ECMP
entropy, is ``runtime.wire.flow_sport``), and the telemetry record each writes when it
ends (``runtime.records.FlowSent``, ``FlowReceived``). Pure: no socket, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final

from hosts.cc import CongestionControl
from hosts.gbn import GbnReceiver, GbnSender
from runtime import wire
from runtime.records import FlowReceived, FlowSent

WIRE_EXTRA_BYTES: Final = wire.IPV4_HEADER_BYTES + wire.UDP_HEADER_BYTES + 14  # IP + UDP + Ethernet


# A flow's rate (sender) and goodput (receiver) samples, one at most every
# TransportParams.rate_sample_s: a long flow would keep one every few packets, so at
# MAX_SAMPLES every other one is dropped and the interval doubles (a flow's samples span
# its life at half to full this count; a run's records grow with its flows, not its packets).
MAX_SAMPLES: Final = 128


def add_sample(samples: list, sample: tuple, every_s: float) -> float:
    """Append ``sample``; the flow's interval from now on (doubled after a thinning)."""
    samples.append(sample)
    if len(samples) >= MAX_SAMPLES:
        del samples[1::2]
        return every_s * 2
    return every_s


@dataclass
class SendFlow:
    key: tuple                  # (peer_ip, pkey, dqpn)
    job: int
    channel: int
    step: int
    peer: str
    sport: int
    data: Any                    # the message, a memoryview (Any: a compiled dataclass
                                 # cannot name memoryview, runtime/compiled.py)
    frames_hdr: tuple            # (pkey, dqpn)
    gbn: GbnSender
    cc: CongestionControl
    port: Any                    # the subclass's handle of the flow's sending port
    start_s: float
    on_complete: Callable | None
    t_next_s: float = 0.0
    end_s: float | None = None
    bytes_sent: int = 0
    rate_samples: list = field(default_factory=list)
    t_sample_s: float = 0.0
    sample_every_s: float = 0.0  # the interval of rate_samples (add_sample)
    addr: tuple = ()             # (peer, 4791): sendto's destination
    icrc_seeds: dict = field(default_factory=dict)   # frame length -> wire.icrc_seed


@dataclass
class RecvFlow:
    key: tuple
    job: int
    channel: int
    step: int
    peer: str
    gbn: GbnReceiver
    start_s: float
    message: bytearray = field(default_factory=bytearray)   # delivered bytes, in order
    sink: Any = None             # or what takes them as they arrive (NicCore.sink_of)
    nbytes: int = 0
    ce: int = 0
    cnps: int = 0
    end_s: float | None = None
    goodput_samples: list = field(default_factory=list)
    t_sample_s: float = 0.0
    sample_every_s: float = 0.0  # the interval of goodput_samples (add_sample)


def send_record(f: SendFlow, ip: str) -> FlowSent:
    """The record of a sender that finished (or is given up)."""
    g = f.gbn
    return FlowSent(job=f.job, channel=f.channel, step=f.step, src=ip, dst=f.peer,
                    sport=f.sport, bytes=len(f.data), packets=g.n_packets,
                    start_s=f.start_s, end_s=f.end_s, retransmits=g.retransmits,
                    timeouts=g.timeouts, naks=g.naks, cnps=f.cc.cnps, cuts=f.cc.cuts,
                    final_rate_bps=f.cc.rate_bps, rate_samples=f.rate_samples)


def recv_record(f: RecvFlow, ip: str) -> FlowReceived:
    """The record of a message delivered."""
    g = f.gbn
    return FlowReceived(job=f.job, channel=f.channel, step=f.step, src=f.peer, dst=ip,
                        bytes=f.nbytes, start_s=f.start_s, end_s=f.end_s, ce=f.ce,
                        cnps_sent=f.cnps, naks_sent=g.naks_sent, duplicates=g.duplicates,
                        out_of_order=g.out_of_order, goodput_samples=f.goodput_samples)
