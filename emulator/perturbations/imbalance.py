"""``imbalance``: the hop ``switch`` -> ``toward`` at the link rate / ``ratio``, from t = 0
(the plan folds it into the fabric's port rates, so the port is slow from its first
packet), or at once from the live CLI until undone."""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.perturbations.base import Context, Perturbation


@dataclass
class Imbalance(Perturbation):
    """The hop ``switch`` -> ``toward`` (interface ``intf``) runs at ``rate_bps``."""
    switch: str
    toward: str
    intf: str
    rate_bps: float
    _old: float | None = field(default=None, init=False)

    kind = "imbalance"
    keys = frozenset({"switch", "toward", "ratio"})
    required = ("switch", "toward", "ratio")
    live = 1
    simulated = True

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "Imbalance":
        return cls(p.switch, p.toward, ctx.port_toward(p.switch, p.toward),
                   ctx.rate_bps / p.ratio)

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple:
        return ()                                  # in the port rates from t = 0

    @classmethod
    def slow_hops(cls, p, rate_bps: float) -> tuple:
        return ((p.switch, p.toward, rate_bps / p.ratio),)

    def apply(self, fab) -> str:
        self._old = fab[self.switch].port_rate_bps.get(self.intf, fab[self.switch].rate_bps)
        _set_rate(fab, self.switch, self.intf, self.rate_bps)
        return f"{self.switch}:{self.intf} (toward {self.toward}) at {self.rate_bps / 1e6:g} Mbit/s"

    def undo(self, fab) -> str:
        _set_rate(fab, self.switch, self.intf, self._old)
        return f"{self.switch}:{self.intf} (toward {self.toward}) back at {self._old / 1e6:g} Mbit/s"

    def to_model(self, e, m) -> None:
        from emulator.model.records import LinkEvent
        m.link_events.append(LinkEvent(e.t_s, self.switch, self.toward, rate_bps=self.rate_bps))

    def simulate(self, net, e, t: float) -> None:
        port = net.ports[(self.switch, self.toward)]
        nominal = net.nominal_bps.setdefault((self.switch, self.toward), port.rate_bps)
        port.set_rate(nominal if e.undo else self.rate_bps)
        pipe = net.pipelines.get(self.switch)
        if pipe is not None:
            pipe.ports[net.port_index[(self.switch, self.toward)]].queue.set_rate(port.rate_bps, t)


def _set_rate(fab, switch: str, intf: str, rate_bps: float) -> None:
    fab[switch].set_port_rate(intf, rate_bps)
    fab.agent(switch, {"cmd": "port_rate", "port": intf, "rate_bps": rate_bps})
