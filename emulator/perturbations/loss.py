"""``loss``: the switch drops ``fraction`` of RoCE data packets, from t = 0."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.perturbations.base import Context, Perturbation


@dataclass
class Loss(Perturbation):
    switch: str
    fraction: float

    kind = "loss"
    keys = frozenset({"switch", "fraction"})
    required = ("switch", "fraction")
    live = 3
    simulated = True
    loses_packets = True

    @classmethod
    def check(cls, p, need, topo, job_hosts) -> None:
        need(0 < p.fraction < 1, "fraction", p.fraction, "must be in (0, 1)")

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "Loss":
        return cls(p.switch, p.fraction)

    def apply(self, fab) -> str:
        fab.agent(self.switch, {"cmd": "drop_fraction", "value": self.fraction})
        return f"{self.switch} drops {self.fraction:.2%} of RoCE data packets"

    def undo(self, fab) -> str:
        fab.agent(self.switch, {"cmd": "drop_fraction", "value": 0.0})
        return f"{self.switch} drops nothing"

    def to_model(self, e, m) -> None:
        m.not_modelled.append(f"{self.switch} drops {self.fraction:.2%}: a fluid flow loses nothing")

    def simulate(self, net, e, t: float) -> None:
        net.pipelines[self.switch].set_drop_fraction(0.0 if e.undo else self.fraction)
