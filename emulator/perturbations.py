"""Perturbations as objects, and the one engine that applies them.

Each perturbation knows how to apply itself to a running fabric and how to undo that,
and says what it did in words. The run plan (``emulator.plan``) compiles the spec's
``[[perturbations]]`` into :class:`Timed` entries (emulated seconds after t = 0); the
runner's loop fires them with :meth:`Engine.due`, and the live CLI applies one at once
with :meth:`Engine.apply_now` (and undoes it with :meth:`Engine.undo_last`). The same
objects, the same code, either way.

A load imbalance that holds from the start is not fired: the plan folds it into the
fabric's port rates, so the port is slow from its first packet.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field

from topologies import fabric


class Perturbation:
    """``apply(fab)`` and ``undo(fab)`` return a description of what they did."""

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


@dataclass
class Imbalance(Perturbation):
    """The hop ``switch`` -> ``toward`` (interface ``intf``) runs at ``rate_bps``."""
    switch: str
    toward: str
    intf: str
    rate_bps: float
    _old: float | None = None

    def apply(self, fab) -> str:
        self._old = fab[self.switch].port_rate_bps.get(self.intf, fab[self.switch].rate_bps)
        _set_rate(fab, self.switch, self.intf, self.rate_bps)
        return f"{self.switch}:{self.intf} (toward {self.toward}) at {self.rate_bps / 1e6:g} Mbit/s"

    def undo(self, fab) -> str:
        _set_rate(fab, self.switch, self.intf, self._old)
        return f"{self.switch}:{self.intf} (toward {self.toward}) back at {self._old / 1e6:g} Mbit/s"


def _set_rate(fab, switch: str, intf: str, rate_bps: float) -> None:
    fab[switch].set_port_rate(intf, rate_bps)
    fab.agent(switch, {"cmd": "port_rate", "port": intf, "rate_bps": rate_bps})


@dataclass
class LinkDown(Perturbation):
    switch: str
    toward: str
    intf: str

    def ends(self, fab) -> list[str]:
        return [n for n in (self.switch, self.toward) if not n.startswith("h")]

    def apply(self, fab) -> str:
        if not hasattr(self, "_no_routes"):
            self._no_routes = {n: kernel_no_routes(fab[n]) for n in self.ends(fab)}
        fab[self.switch].set_link(self.intf, False)
        return f"{self.switch}:{self.intf} down"

    def undo(self, fab) -> str:
        fab[self.switch].set_link(self.intf, True)
        return f"{self.switch}:{self.intf} up"

    def effects(self, fab) -> str | None:
        """The packets the kernels at both ends dropped for want of a route since the link
        went down (the agents never see them: they are dropped before the FORWARD hook)."""
        before = getattr(self, "_no_routes", None)
        if before is None:
            return None
        per = {n: kernel_no_routes(fab[n]) - b for n, b in before.items()}
        return (f"link {self.switch}-{self.toward} down: the kernel dropped "
                f"{sum(per.values())} packets for want of a route ("
                + ", ".join(f"{n} {v}" for n, v in per.items()) + ")")


def kernel_no_routes(node) -> int:
    """Packets ``node``'s kernel dropped as unroutable (``IpExt: InNoRoutes``, counted
    per network namespace)."""
    rows = [line.split() for line in node.cmd("cat /proc/net/netstat").splitlines()
            if line.startswith("IpExt:")]
    if len(rows) < 2:
        return 0
    c = dict(zip(rows[0][1:], rows[1][1:]))
    return int(c.get("InNoRoutes", 0))


@dataclass
class Loss(Perturbation):
    switch: str
    fraction: float

    def apply(self, fab) -> str:
        fab.agent(self.switch, {"cmd": "drop_fraction", "value": self.fraction})
        return f"{self.switch} drops {self.fraction:.2%} of RoCE data packets"

    def undo(self, fab) -> str:
        fab.agent(self.switch, {"cmd": "drop_fraction", "value": 0.0})
        return f"{self.switch} drops nothing"


@dataclass
class SymphonyOn(Perturbation):
    """Symphony switched on at every switch (a late start); undo: off."""

    def apply(self, fab) -> str:
        fab.agents({"cmd": "symphony", "enabled": True})
        return "symphony on everywhere"

    def undo(self, fab) -> str:
        fab.agents({"cmd": "symphony", "enabled": False})
        return "symphony off everywhere"


@dataclass
class Background(Perturbation):
    """iperf3 UDP (non-RoCE) traffic ``src`` -> ``dst`` at ``rate_bps``, 1400-byte
    datagrams: ``nbytes`` in all, or until undone (None). ``port``: iperf3's port."""
    src: str
    dst: str
    rate_bps: float
    nbytes: int | None
    port: int
    procs: list = field(default_factory=list)
    _log: object = None
    _server: object = None

    def prepare(self, fab, rundir: str) -> None:
        self._log = open(os.path.join(rundir, f"background{self.port}.log"), "a")
        dst = fab[self.dst]
        self._server = dst.popen(["iperf3", "-s", *(["-1"] if self.nbytes else []),
                                  "-B", dst.IP(), "-p", str(self.port)],
                                 stdout=self._log, stderr=subprocess.STDOUT)
        self.procs.append(self._server)
        time.sleep(0.3)                          # the server listens before a client starts

    def apply(self, fab) -> str:
        src, dst = fab[self.src], fab[self.dst]
        amount = ["-n", str(self.nbytes)] if self.nbytes is not None else ["-t", "86400"]
        self.procs.append(src.popen(["iperf3", "-c", dst.IP(), "-B", src.IP(), "-p",
                                     str(self.port), "-u", "-b", str(int(self.rate_bps)),
                                     "-l", "1400", *amount],
                                    stdout=self._log, stderr=subprocess.STDOUT))
        what = f"background {self.src}->{self.dst} {self.rate_bps / 1e6:g} Mbit/s"
        return what + (f", {self.nbytes} B" if self.nbytes is not None else "")

    def undo(self, fab) -> str:
        self.close()
        return f"background {self.src}->{self.dst} stopped"

    def close(self) -> None:
        for p in self.procs:
            fabric.stop_process(p, 5)
        self.procs.clear()
        if self._log is not None:
            self._log.close()
            self._log = None


@dataclass(frozen=True)
class Timed:
    """``what`` applied (``undo`` False) or undone at ``t_s`` emulated seconds after t = 0."""
    t_s: float
    what: Perturbation
    undo: bool = False


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
