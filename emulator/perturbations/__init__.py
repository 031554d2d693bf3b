"""Perturbations, one class per kind behind one registry (as collectives, congestion
controls and schemes are): :data:`KINDS` maps a ``[[perturbations]]`` entry's ``kind`` to
its class, a :class:`~emulator.perturbations.base.Perturbation`, which owns all of that
kind: its spec keys and checks, what the run plan makes of it, how the engine
(:mod:`~emulator.perturbations.engine`) applies and undoes it, the live CLI's form of it,
and what the flow-level model and the simulator do with it.

A new kind: a module here with its class, and its entry below (its keys, if new, are
fields of ``emulator.spec.schema.PerturbationSpec``).

The order of :data:`KINDS` is the order the spec's errors list them in.
"""

from __future__ import annotations

from emulator.perturbations.background import Background
from emulator.perturbations.base import Perturbation
from emulator.perturbations.imbalance import Imbalance
from emulator.perturbations.link_down import LinkDown
from emulator.perturbations.loss import Loss
from emulator.perturbations.straggler import Straggler
from emulator.perturbations.symphony_late_start import SymphonyOn

KINDS: dict[str, type[Perturbation]] = {k.kind: k for k in (
    Imbalance, Background, LinkDown, Straggler, Loss, SymphonyOn)}

__all__ = ["KINDS"]
