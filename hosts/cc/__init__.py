"""Congestion control for the host NIC: a registry of algorithms and the typed config
that picks one.

    cfg = CcConfig.default("dcqcn_paper", 10e9, Scale(1000))   # emulated-scale params
    json.dumps(cfg.to_dict())     # {"name": "dcqcn_paper", "params": {...}}: runner -> host
    cfg = CcConfig.from_dict(d)   # in the host process
    flow_cc = cfg.controller(now_s)                           # one per send flow

Adding an algorithm: a module in this package with a params dataclass (see
``hosts.cc.base``) and a :class:`~hosts.cc.base.CongestionControl` subclass built as
``Cls(params, now_s)``, and one entry in :data:`ALGORITHMS`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

from hosts.cc.base import CongestionControl, NotificationPoint
from hosts.cc.dcqcn import DcqcnMlx, DcqcnPaper, DcqcnParams
from hosts.cc.none import LineRate, LineRateParams
from runtime.scale import Scale

__all__ = ["ALGORITHMS", "Algorithm", "CcConfig", "CongestionControl", "DcqcnMlx",
           "DcqcnPaper", "DcqcnParams", "LineRate", "LineRateParams", "NotificationPoint",
           "algorithm"]


@dataclass(frozen=True)
class Algorithm:
    params: type                                    # its frozen params dataclass
    build: Callable[[Any, float], CongestionControl]     # (params, now_s) -> one flow's
    defaults: Callable[[float], Any]                # real link rate -> real-scale params


ALGORITHMS: dict[str, Algorithm] = {
    "dcqcn_paper": Algorithm(DcqcnParams, DcqcnPaper, DcqcnPaper.defaults),
    "dcqcn_mlx": Algorithm(DcqcnParams, DcqcnMlx, DcqcnMlx.defaults),
    "none": Algorithm(LineRateParams, LineRate, LineRate.defaults),
}


def algorithm(name: str) -> Algorithm:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown congestion control {name!r}; allowed: "
                         f"{', '.join(ALGORITHMS)}") from None


@dataclass(frozen=True)
class CcConfig:
    """Which algorithm a host's NIC runs, with its parameters at emulation scale."""
    name: str
    params: Any

    def __post_init__(self):
        expected = algorithm(self.name).params
        if not isinstance(self.params, expected):
            raise TypeError(f"congestion control {self.name!r} takes {expected.__name__}, "
                            f"got {type(self.params).__name__}")

    @classmethod
    def default(cls, name: str, real_line_rate_bps: float, scale: Scale) -> "CcConfig":
        """The algorithm's real-scale defaults for a link of ``real_line_rate_bps``,
        converted to emulation scale by ``scale``."""
        return cls(name, algorithm(name).defaults(real_line_rate_bps).scaled(scale))

    def controller(self, now_s: float) -> CongestionControl:
        """A new flow's rate controller, started at ``now_s``."""
        return algorithm(self.name).build(self.params, now_s)

    def to_dict(self) -> dict:
        return {"name": self.name, "params": asdict(self.params)}

    @classmethod
    def from_dict(cls, d: dict) -> "CcConfig":
        params_cls = algorithm(d["name"]).params
        allowed = {f.name for f in fields(params_cls)}
        unknown = sorted(set(d["params"]) - allowed)
        if unknown:        # a runner and host of different versions: say so, not TypeError
            raise ValueError(f"congestion control {d['name']!r}: unknown params "
                             f"{', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        return cls(d["name"], params_cls(**d["params"]))
