"""What every perturbation kind is: :class:`Perturbation`, one class per kind.

A kind's class says everything about it in one place:

* the spec (``[[perturbations]]``, ``emulator.spec``): ``keys`` (its keys, fields of
  ``emulator.spec.schema.PerturbationSpec``), ``required`` (those it cannot do without),
  :meth:`Perturbation.check` (what its values must be, beyond each key's own range);
* its times: ``timing_keys`` (the keys saying when: a live perturbation has none) and
  :meth:`Perturbation.moments` (those a spec's timing warnings judge,
  ``emulator.plan.timing``);
* the run plan (``emulator.plan``): :meth:`Perturbation.from_spec` (the object that
  applies it, emulated units), :meth:`Perturbation.timed` (when the engine fires it),
  or, for a kind folded into the plan from t = 0, :meth:`Perturbation.slow_hops` (port
  rates) or :meth:`Perturbation.step_delays` (host configs); ``late_symphony``;
* the emulation (:class:`~emulator.perturbations.engine.Engine`): an instance's
  ``prepare``/``apply``/``undo``/``effects``/``close``, and ``processes`` (the ones it
  starts, for the capacity check);
* the live CLI: ``live`` (whether ``perturb`` applies it, and where it lists it) and :meth:`Perturbation.live_entry`;
* the flow-level model (``emulator.model.from_plan``): :meth:`Perturbation.to_model`;
* the simulation backend (``emulator.sim.run``): ``simulated`` and
  :meth:`Perturbation.simulate`;
* the report: ``loses_packets`` (a drop-tail fabric's timeouts are then expected).

The registry, ``KINDS``, is ``emulator/perturbations/__init__.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from runtime.codec import from_dict, to_dict


@dataclass(frozen=True)
class Context:
    """What compiling one perturbation needs of the plan (``emulator.plan.perturbation``):
    the run's scale, its link rate (emulated bit/s), the perturbation's index in the
    spec, and the interface of a switch toward a neighbour in this fabric."""
    scale: object
    rate_bps: float
    index: int
    port_toward: Callable[[str, str], str]


@dataclass(frozen=True)
class Timed:
    """``what`` applied (``undo`` False) or undone at ``t_s`` emulated seconds after t = 0."""
    t_s: float
    what: "Perturbation"
    undo: bool = False

    def to_dict(self) -> dict:
        """As the manifest's plan stores it: ``what`` as its kind and its fields."""
        return {"t_s": self.t_s, "what": self.what.to_dict(), "undo": self.undo}

    @classmethod
    def from_dict(cls, data: dict) -> "Timed":
        from emulator.perturbations import KINDS          # the registry imports this module
        what = dict(data["what"])
        kind = KINDS[what.pop("kind")]
        return cls(float(data["t_s"]), from_dict(kind, what, f"perturbation {kind.kind}"),
                   bool(data.get("undo", False)))


class Perturbation:
    """One kind. An instance, compiled from a spec's entry, applies it to a running fabric:
    ``apply(fab)`` and ``undo(fab)`` return a description of what they did."""

    kind: str = ""                       # the spec's name of it
    keys: frozenset = frozenset()        # its [[perturbations]] keys
    required: tuple = ()                 # keys it needs
    timing_keys: tuple = ()              # keys saying when it applies (not live)
    live: int = 0                        # the live CLI's `perturb` applies it: its place
                                         # in that command's list of kinds (0: not live)
    simulated: bool = False              # the simulation backend does it
    loses_packets: bool = False          # it drops packets (timeouts then expected)
    late_symphony: bool = False          # Symphony starts off, waiting for it
    processes: int = 0                   # processes it starts in the fabric

    def to_dict(self) -> dict:
        """Its kind and what it applies (not its state in a running fabric: fields with
        ``init=False``)."""
        return {"kind": self.kind, **{f.name: to_dict(getattr(self, f.name))
                                      for f in dataclasses.fields(self) if f.init}}

    # --- the spec ---------------------------------------------------------------------

    @classmethod
    def check(cls, p, need: Callable, topo, job_hosts: set) -> None:
        """Beyond each key's range: ``need(ok, key, value, allowed)`` for what its values
        must be (``p``: the ``PerturbationSpec``; ``job_hosts``: the jobs' hosts)."""

    @classmethod
    def moments(cls, p) -> tuple:
        """The keys of ``p`` that say when something happens (ms after t = 0)."""
        return cls.timing_keys

    @classmethod
    def live_entry(cls, kv: dict) -> tuple[dict, bool]:
        """The live CLI's ``perturb`` words as a ``[[perturbations]]`` table applied now,
        and whether it runs until undone."""
        return {"kind": cls.kind, **kv}, False

    # --- the plan ---------------------------------------------------------------------

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "Perturbation":
        """A validated ``PerturbationSpec`` as the object that applies it (emulated units)."""
        raise ValueError(f"{p.kind} is not applied by the engine")

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple[Timed, ...]:
        """When the engine applies (and undoes) it in a run of ``scheme``: from t = 0 by
        default; () when the plan holds it from t = 0 instead."""
        return (Timed(0.0, cls.from_spec(p, ctx)),)

    @classmethod
    def slow_hops(cls, p, rate_bps: float) -> tuple:
        """Hops slower from t = 0: ((switch, toward, rate_bps), ...)."""
        return ()

    @classmethod
    def step_delays(cls, p, scale) -> dict[str, float]:
        """Host -> the delay its ranks wait before each step's send (emulated s)."""
        return {}

    @classmethod
    def cut_cables(cls, p) -> tuple[frozenset, ...]:
        """Cables it takes down at some time, each the frozenset of its two ends (the
        lossless fabric's deadlock check routes around them: ``emulator.spec.pfc``)."""
        return ()

    # --- the emulation ----------------------------------------------------------------

    def prepare(self, fab, rundir: str) -> None:
        """Set-up before t = 0 (e.g. a traffic sink); nothing by default."""

    def effects(self, fab) -> str | None:
        """What it cost, in words, at the end of the run (e.g. the packets the kernel
        dropped because of it); None if nothing to say."""
        return None

    def apply(self, fab) -> str:
        raise NotImplementedError

    def undo(self, fab) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """Release what ``prepare``/``apply`` started (processes); idempotent."""

    # --- the flow-level model and the simulator ---------------------------------------

    def to_model(self, e: Timed, m) -> None:
        """Add ``e`` (a firing of this) to the model's inputs ``m`` (lists ``background``,
        ``link_events``, ``not_modelled``: what the model lacks, in words)."""
        m.not_modelled.append(f"the {self.kind} perturbation: not modelled")

    def simulate(self, net, e: Timed, t: float) -> None:
        """Apply (``e.undo``: undo) it at ``t`` on the simulator's network
        (``emulator.sim.network.Network``); only if ``simulated``."""
        raise NotImplementedError
