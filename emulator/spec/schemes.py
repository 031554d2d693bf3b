"""Schemes, emulator side: what a scheme asks of the fabric. One object per scheme; the
switch side of each (its per-packet hook) is ``switch_agent.schemes`` under the same name.

A scheme gives the switch agents' hook at t = 0, the port qdisc every switch port gets
(``fifo``: one drop-tail FIFO; ``pq``: two strict-priority classes), whether strict
priority may starve the low class past the retransmission timeout (so a timeout is not
an emulation fault: the fidelity verdict reads this), and its colour in plots.
Adding a scheme: an entry here and its hook in ``switch_agent.schemes``
(docs/architecture.md §11).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str
    switch_hook: str              # switch_agent.schemes name, from t = 0
    port_qdisc: str               # "fifo" | "pq"
    may_starve: bool              # strict priority: a real timeout is possible
    color: str
    description: str

    def hook_at_start(self, late_start: bool) -> str:
        """The hook the agents start with: Symphony waits for a late start."""
        return "baseline" if late_start and self.switch_hook == "symphony" else self.switch_hook


SCHEMES: dict[str, Scheme] = {s.name: s for s in (
    Scheme("baseline", "baseline", "fifo", False, "tab:red", "RED/ECN only"),
    Scheme("symphony", "symphony", "fifo", False, "tab:blue",
           "RED/ECN and Symphony's marks on flows that run ahead (paper §3)"),
    Scheme("pq", "pq", "pq", True, "tab:orange",
           "strict priority for the job's lagging flows (paper §2.3, Fig 5)"),
)}


def scheme(name: str) -> Scheme:
    try:
        return SCHEMES[name]
    except KeyError:
        raise ValueError(f"unknown scheme {name!r}; allowed: {', '.join(SCHEMES)}") from None
