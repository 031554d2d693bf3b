"""``straggler``: the rank on ``host`` waits ``delay_us`` (compute) before each step's
send. Not fired by the engine: the plan puts the delay in the host's rank configs
(``step_delay_s``), which the emulation, the simulator and the model all read."""

from __future__ import annotations

from emulator.perturbations.base import Context, Perturbation


class Straggler(Perturbation):
    kind = "straggler"
    keys = frozenset({"host", "delay_us"})
    required = ("host", "delay_us")

    @classmethod
    def check(cls, p, need, topo, job_hosts) -> None:
        need(p.host in job_hosts, "host", p.host, "is in no job")

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple:
        return ()                                  # in the host configs

    @classmethod
    def step_delays(cls, p, scale) -> dict[str, float]:
        return {p.host: scale.time_s(p.delay_us * 1e-6)}
