"""``link_down``: the link ``switch``-``toward`` goes down at ``at_ms`` (and up again at
``up_ms``: a flap); live, at once until undone."""

from __future__ import annotations

from dataclasses import dataclass

from emulator.perturbations.base import Context, Perturbation, Timed


@dataclass
class LinkDown(Perturbation):
    switch: str
    toward: str
    intf: str

    kind = "link_down"
    keys = frozenset({"switch", "toward", "at_ms", "up_ms"})
    required = ("switch", "toward", "at_ms")
    timing_keys = ("at_ms", "up_ms")
    live = 2
    simulated = True
    loses_packets = True

    @classmethod
    def check(cls, p, need, topo, job_hosts) -> None:
        need(p.up_ms < 0 or p.up_ms > p.at_ms, "up_ms", p.up_ms, "must be after at_ms")

    @classmethod
    def moments(cls, p) -> tuple:
        return ("at_ms", "up_ms") if p.up_ms >= 0 else ("at_ms",)

    @classmethod
    def live_entry(cls, kv: dict) -> tuple[dict, bool]:
        return {"kind": cls.kind, **kv, "at_ms": 0.0}, False

    @classmethod
    def cut_cables(cls, p) -> tuple[frozenset, ...]:
        return (frozenset((p.switch, p.toward)),)

    @classmethod
    def from_spec(cls, p, ctx: Context) -> "LinkDown":
        return cls(p.switch, p.toward, ctx.port_toward(p.switch, p.toward))

    @classmethod
    def timed(cls, p, ctx: Context, scheme) -> tuple:
        obj = cls.from_spec(p, ctx)
        down = Timed(ctx.scale.time_s(p.at_ms * 1e-3), obj)
        if p.up_ms < 0:
            return (down,)
        return (down, Timed(ctx.scale.time_s(p.up_ms * 1e-3), obj, undo=True))

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

    def to_model(self, e, m) -> None:
        from emulator.model.records import LinkEvent
        m.link_events.append(LinkEvent(e.t_s, self.switch, self.toward, up=e.undo))

    def simulate(self, net, e, t: float) -> None:
        net.set_link(self.switch, self.toward, up=e.undo)


def kernel_no_routes(node) -> int:
    """Packets ``node``'s kernel dropped as unroutable (``IpExt: InNoRoutes``, counted
    per network namespace)."""
    rows = [line.split() for line in node.cmd("cat /proc/net/netstat").splitlines()
            if line.startswith("IpExt:")]
    if len(rows) < 2:
        return 0
    c = dict(zip(rows[0][1:], rows[1][1:]))
    return int(c.get("InNoRoutes", 0))
