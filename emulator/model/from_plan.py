"""A run plan (``emulator.plan.RunPlan``) as the model's inputs, so an emulated run and its
fluid twin are the same experiment: the same fabric and rates (slow hops included), the
same jobs and stragglers, the same link events and background traffic, in the plan's
emulated units (so the model's times compare with the emulator's directly, and its
"theoretical" is the report's lockstep bound).

Each rank posts a send a host's processing time after its cue (``HOST_POST_DELAY_S``, an
exponential mean at real scale, dilated like every time): the model's ties broken as real
hosts break them (docs/architecture.md, "The flow-level model").

Each perturbation's class says what the model makes of it (``to_model``). Not modelled,
and said so in :attr:`ModelInputs.not_modelled`: injected packet loss (``loss``: a fluid
flow loses nothing), a lossless fabric's pauses (no buffers) and Symphony's late start (the model has no Symphony; its
``ideal-priority`` bounds what any step-aware switch could do).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from emulator.model.ranks import JobInput
from emulator.plan.messages import Message
from emulator.routing.graph import LinkGraph, of_plan

# A rank's processing time between the receive it applies and the send it posts, real
# scale. What matters is that there is one: without it the fluid model keeps exact ties
# (every flow of a step starting at one instant), and over 12 passes of Table 1 that alone
# made the baseline 1.1-1.8x slower than with any random delay between 0.01 and 2 us,
# which all gave the same spread. 0.1 us, a fifth of the emulated ranks' own median
# (0.53 ms at D = 1000), so the model stays the ideal it is meant to be: it adds ~0.1 %
# to a short run's time, against the 5 % the emulation-error check allows.
HOST_POST_DELAY_S = 1e-7


@dataclass(frozen=True)
class ModelInputs:
    fabric: LinkGraph
    jobs: tuple
    background: tuple
    link_events: tuple
    messages: tuple              # plain messages (a spec's [[messages]])
    mtu_bytes: int
    per_step_sport: bool
    not_modelled: tuple          # descriptions of what the plan has and the model lacks
    post_delay_s: float = 0.0    # a host's processing time, emulated seconds (mean)


def model_inputs(plan) -> ModelInputs:
    fab = of_plan(plan.fabric)
    delays = {h: max(r.step_delay_s for r in c.ranks) for h, c in plan.hosts.items()
              if c.ranks and any(r.step_delay_s for r in c.ranks)}
    jobs = tuple(JobInput.from_layout(lay, delays) for lay in plan.layouts)
    m = _Perturbed()
    for e in plan.perturbations:
        e.what.to_model(e, m)
    if plan.fabric.flow_control == "pfc":   # fluid flows share links max-min, never queue
        m.not_modelled.append("PFC's pauses (topology.flow_control = \"pfc\"): fluid flows "
                              "hold no buffer to pause for")
    per_step = all(c.transport.per_step_sport for c in plan.hosts.values())
    ip_host = {c.ip: h for h, c in plan.hosts.items()}
    messages = tuple(Message(h, ip_host[m.peer], m.bytes, m.start_s, m.job, m.channel, m.step)
                     for h, c in sorted(plan.hosts.items()) for m in c.sends)
    return ModelInputs(fab, jobs, tuple(m.background), tuple(m.link_events), messages,
                       plan.mtu_bytes, per_step, tuple(m.not_modelled),
                       plan.scale.time_s(HOST_POST_DELAY_S))


@dataclass
class _Perturbed:
    """What the plan's perturbations add to the model's inputs (each kind's ``to_model``):
    ``BackgroundStream``s, ``LinkEvent``s, and what the model lacks, in words."""
    background: list = field(default_factory=list)
    link_events: list = field(default_factory=list)
    not_modelled: list = field(default_factory=list)
