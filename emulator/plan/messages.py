"""Plain messages between hosts, without any collective (the paper's Fig 9 two-flow
experiment, the transport tests): what each host sends and expects, as host configs."""

from __future__ import annotations

from dataclasses import dataclass

from hosts.cc import CcConfig
from hosts.config import HostConfig, MessageConfig, TransportParams


@dataclass(frozen=True)
class Message:
    """One plain message (a spec's ``[[messages]]``): ``nbytes`` of payload from ``src``
    to ``dst`` host, posted at ``start_s``, carrying (job, channel, step). What a
    ``hosts.host`` process sends and expects, and what the flow-level model moves."""
    src: str            # host name
    dst: str
    nbytes: int
    start_s: float = MessageConfig.start_s   # emulated, after t = 0
    job: int = MessageConfig.job
    channel: int = MessageConfig.channel
    step: int = MessageConfig.step


def host_configs(messages: list[Message], ip_of, line_rate_bps: float, cc: CcConfig,
                 transport: TransportParams, timeout_s: float) -> dict[str, HostConfig]:
    """One ``hosts.host`` configuration per host that sends or receives; ``ip_of(name)``."""
    names = sorted({m.src for m in messages} | {m.dst for m in messages},
                   key=lambda h: int(h[1:]))
    out = {}
    for n in names:
        sends = tuple(MessageConfig(ip_of(m.dst), m.nbytes, m.job, m.channel, m.step, m.start_s)
                      for m in messages if m.src == n)
        receives = tuple(MessageConfig(ip_of(m.src), m.nbytes, m.job, m.channel, m.step)
                         for m in messages if m.dst == n)
        out[n] = HostConfig(name=n, ip=ip_of(n), line_rate_bps=line_rate_bps, cc=cc,
                            transport=transport, timeout_s=timeout_s, sends=sends,
                            receives=receives)
    return out
