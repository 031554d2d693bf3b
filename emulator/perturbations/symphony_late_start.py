"""``symphony_late_start``: Symphony switched on at every switch at ``at_ms`` (the agents
start with the baseline hook); in a run of the symphony scheme only."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.perturbations.base import Context, Perturbation, Timed


@dataclass
class SymphonyOn(Perturbation):
    """Symphony switched on at every switch (a late start); undo: off."""

    kind = "symphony_late_start"
    keys = frozenset({"at_ms"})
    required = ("at_ms",)
    timing_keys = ("at_ms",)
    simulated = True
    late_symphony = True

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "SymphonyOn":
        return cls()

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple:
        if scheme.switch_hook != "symphony":
            return ()
        return (Timed(ctx.scale.time_s(p.at_ms * 1e-3), cls.from_spec(p, ctx)),)

    def apply(self, fab) -> str:
        fab.agents({"cmd": "symphony", "enabled": True})
        return "symphony on everywhere"

    def undo(self, fab) -> str:
        fab.agents({"cmd": "symphony", "enabled": False})
        return "symphony off everywhere"

    def to_model(self, e, m) -> None:
        m.not_modelled.append("Symphony's late start: the model has no Symphony")

    def simulate(self, net, e, t: float) -> None:
        for pipe in net.pipelines.values():
            pipe.set_symphony(not e.undo)
