"""Whether PFC can deadlock on a fabric's routes: a cycle of directed links each of which
may wait for the next one's buffer (a cyclic buffer dependency, Hu et al., "Deadlocks in
Datacenter Networks: Why Do They Form, and How to Avoid Them", HotNets 2016).

Under PFC a link waits for the next one when a frame that came in by it is queued to
leave by the next: the second's ingress pauses the first. With the kernel's routes of
``emulator.routing.graph`` (hosts to their leaf, leaves up to spines, spines down to
leaves, and across pods through cores) every path goes up and then down, so no cycle
forms, whichever cables are down (a switch with no live next hop drops, it does not
send a packet back up). The check exists so that a fabric or routing which could loop
is refused before it runs, not found hung.

Pure: routes in, a cycle (or None) out.
"""

from __future__ import annotations

from typing import Iterable

from emulator.routing.graph import Link, LinkGraph


def dependencies(fab: LinkGraph, down: Iterable[frozenset] = ()) -> dict[Link, set[Link]]:
    """Link -> the links its frames may be queued to leave by next, under the routes of
    ``fab`` with the cables ``down`` (each a frozenset of its two ends) cut."""
    cut = set(down)

    def live(a: str, b: str) -> bool:
        return frozenset((a, b)) not in cut

    out: dict[Link, set[Link]] = {}
    for dst in fab.hosts:
        # who sends toward dst into each switch: its hosts and the switches routing via it
        feeders: dict[str, set[str]] = {sw: set() for sw in fab.switches}
        for h, leaf in fab.host_leaf.items():
            if h != dst and live(h, leaf):
                feeders[leaf].add(h)
        hops = {sw: [n for n in fab.next_hops[sw].get(dst, ()) if live(sw, n)]
                for sw in fab.switches}
        for sw, nxt in hops.items():
            for n in nxt:
                if n in feeders:
                    feeders[n].add(sw)
        for sw, nxt in hops.items():
            for prev in feeders[sw]:
                out.setdefault((prev, sw), set()).update((sw, n) for n in nxt)
    return out


def cycle(deps: dict[Link, set[Link]]) -> list[Link] | None:
    """A cycle of the dependency graph, as its links in order; None if it has none."""
    state: dict[Link, int] = {}            # 1: on the current path, 2: done
    for start in deps:
        if state.get(start):
            continue
        path: list[Link] = [start]
        todo = [iter(sorted(deps.get(start, ())))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
                continue
            seen = state.get(nxt)
            if seen == 1:
                return path[path.index(nxt):]
            if seen is None:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(deps.get(nxt, ()))))
    return None
