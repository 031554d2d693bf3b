"""The one engine that applies perturbations to a running fabric.

The run plan (``emulator.plan``) compiles the spec's ``[[perturbations]]`` into
:class:`~emulator.perturbations.base.Timed` entries (emulated seconds after t = 0); the
runner's loop fires them with :meth:`Engine.due`, and the live CLI applies one at once
with :meth:`Engine.apply_now` (and undoes it with :meth:`Engine.undo_last`). The same
objects, the same code, either way.
"""

from __future__ import annotations

from emulator.perturbations.base import Perturbation, Timed


class Engine:
    """Fires timed perturbations and applies live ones; keeps the log of both."""

    def __init__(self, fab, rundir: str, timed: tuple[Timed, ...] = ()):
        self.fab, self.rundir = fab, rundir
        self.pending = sorted(timed, key=lambda e: e.t_s)
        self.applied: list[Perturbation] = []           # live ones, for undo_last
        self.log: list[dict] = []
        self._all: list[Perturbation] = []
        for e in self.pending:
            if not e.undo and e.what not in self._all:
                e.what.prepare(fab, rundir)
                self._all.append(e.what)

    def next_time(self) -> float | None:
        return self.pending[0].t_s if self.pending else None

    def due(self, t_rel_s: float) -> None:
        while self.pending and self.pending[0].t_s <= t_rel_s:
            e = self.pending.pop(0)
            what = e.what.undo(self.fab) if e.undo else e.what.apply(self.fab)
            self.log.append({"t_s": e.t_s, "fired_s": t_rel_s, "what": what})

    def apply_now(self, p: Perturbation) -> str:
        p.prepare(self.fab, self.rundir)
        self._all.append(p)
        what = p.apply(self.fab)
        self.applied.append(p)
        self.log.append({"what": what})
        return what

    def undo_last(self, everything: bool = False) -> list[str]:
        done = []
        while self.applied:
            done.append(self.applied.pop().undo(self.fab))
            if not everything:
                break
        self.log += [{"what": w} for w in done]
        return done

    def effects(self) -> list[str]:
        """What the perturbations cost (:meth:`Perturbation.effects`), while the fabric
        is still up."""
        out = []
        for p in self._all:
            try:
                e = p.effects(self.fab)
            except Exception as err:             # a broken fabric: say so, keep going
                e = f"{type(p).__name__}: its effects could not be read ({err!r})"
            if e:
                out.append(e)
        return out

    def close(self) -> None:
        for p in self._all:
            p.close()
