"""Max-min fair rates by progressive filling, with rate caps and strict priority levels.

Progressive filling (Bertsekas and Gallager, *Data Networks*, 2nd ed., §6.5.2): every
unfrozen flow's rate rises together; when a link fills, the flows crossing it freeze at
its fair share (the link is their bottleneck); a capped flow freezes at its cap once the
common rate reaches it. The result is the unique max-min fair allocation: no flow can
get more without taking from a flow that has no more than it.

That is what an ideal congestion control converges to when the flows of one link share
it equally: no queues, no losses, no reaction delay (the fluid limit; Kelly, "Charging
and rate control for elastic traffic", 1997, for the max-min member of that family).

**Caps** (``caps_bps``): a flow never gets more than its cap. The model's fixed-rate
background flows are capped demands at the first priority level, so they are fixed
allocations taken off first (``emulator.model.priority``: a UDP stream that never backs
off takes its rate, the collectives share what it leaves); they share max-min among
themselves only where they alone overload a link.

**Strict priority** (``levels``): level 0 is served first, then level 1 on what level 0
left, and so on, max-min within a level.

* One level per flow (ints): exact, one pass per level on the residual capacities.
* One level per flow *and hop* (sequences, a strict-priority port per switch where a flow
  may be high at one switch and low at the next): each (link, level) is a pseudo-link
  whose capacity is the link's minus what the flows of lower levels use there; solved by
  fixed-point iteration (Jacobi) from full capacities, until no rate moves by more than
  ``CONVERGED`` x the largest capacity. Usually that takes 2-3 rounds. A flow that a
  high-priority one starves step by step (they share a NIC equally, the next port serves
  the other first) goes to 0 geometrically, halving per round (~30 rounds). Where
  priorities form a cycle (flows of two jobs, each high where the other is low) there
  may be a continuum of fixed points and the iteration may oscillate: once it stops
  contracting (``STALLS`` rounds) the iterate is averaged with the previous one; after
  ``MAX_ROUNDS`` the last one is taken (``stats["unconverged"]`` counts those). A final
  progressive filling on the physical links, every flow capped at its iterate, makes
  the result feasible in every case (and changes nothing once converged).

Links are any hashable ids; ``capacity_bps[link]`` must give each one's capacity.
Tight pure Python: the simulation solves only the flows that share links with a change,
a handful at a time, where numpy's per-call cost would dominate.
"""

from __future__ import annotations

from typing import Hashable, Sequence

INF = float("inf")
TIE = 1e-12              # relative: bottlenecks this close are one level (lockstep exactness)
CONVERGED = 1e-9        # per-hop levels: rounds stop when no rate moves more (x capacity)
MAX_ROUNDS = 200
STALLS = 3              # rounds without contraction before the iterate is damped


def max_min_rates(paths: Sequence[Sequence[Hashable]], capacity_bps, *,
                  caps_bps: Sequence[float] | None = None,
                  levels: Sequence | None = None, stats: dict | None = None) -> list[float]:
    """Rates in bit/s of flows with the given ``paths`` (each a sequence of link ids).
    ``caps_bps[i]``: flow i's cap (``inf``: none). ``levels[i]``: flow i's priority level
    (0 first), an int or one int per hop of its path. ``stats``: if given, ``rounds``
    (fixed-point rounds) and ``unconverged`` are added to it."""
    links = capacity_bps.items() if hasattr(capacity_bps, "items") else enumerate(capacity_bps)
    bad = next(((ln, c) for ln, c in links if not c >= 0), None)
    if bad is not None:                  # NaN or negative: no rate would mean anything
        raise ValueError(f"capacity of link {bad[0]!r} is {bad[1]!r}: must be a number >= 0")
    if levels is None:
        return _fill(paths, capacity_bps, caps_bps)
    if all(isinstance(v, int) for v in levels):
        return _by_level(paths, capacity_bps, caps_bps, levels)
    return _per_hop(paths, capacity_bps, caps_bps, levels, stats)


def _fill(paths, capacity, caps) -> list[float]:
    """Progressive filling of one level."""
    n = len(paths)
    rates = [0.0] * n
    users: dict = {}
    for i, p in enumerate(paths):
        for ln in p:
            u = users.get(ln)
            if u is None:
                users[ln] = [i]
            else:
                u.append(i)
    rem = {ln: capacity[ln] for ln in users}
    cnt = {ln: len(u) for ln, u in users.items()}
    done = [False] * n
    left = n
    capped = sorted((c, i) for i, c in enumerate(caps) if c < INF) if caps else []
    k = 0

    def freeze(i: int, rate: float) -> None:
        done[i] = True
        rates[i] = rate
        for ln in paths[i]:
            rem[ln] -= rate
            c = cnt[ln] - 1
            if c:
                cnt[ln] = c
            else:
                del cnt[ln]

    while left:
        share = INF
        for ln, c in cnt.items():
            s = rem[ln] / c
            if s < share:
                share = s
        if share < 0.0:
            share = 0.0                          # rounding left a link a hair over
        while k < len(capped) and done[capped[k][1]]:
            k += 1
        if k < len(capped) and capped[k][0] <= share:
            freeze(capped[k][1], capped[k][0])
            left -= 1
            k += 1
            continue
        if share == INF:                         # no link and no cap left: unbounded
            for i in range(n):
                if not done[i]:
                    rates[i] = INF
            break
        limit = share * (1.0 + TIE)
        fix = []
        for ln, c in cnt.items():
            if rem[ln] / c <= limit:
                fix.extend(i for i in users[ln] if not done[i])
        before = left
        for i in fix:
            if not done[i]:
                freeze(i, share)
                left -= 1
        if left == before:       # every round fixes a flow; else it would loop for ever
            raise ArithmeticError(
                f"max-min filling stuck: share {share!r} fixes none of {left} flows (links "
                f"left {len(cnt)}, the least remaining share "
                f"{min((rem[ln] / c for ln, c in cnt.items()), default=INF)!r})")
    return rates


def _by_level(paths, capacity, caps, levels) -> list[float]:
    """Strict priority with one level per flow: each level on what the lower ones left."""
    residual = {ln: capacity[ln] for p in paths for ln in p}
    rates = [0.0] * len(paths)
    for lv in sorted(set(levels)):
        idx = [i for i, v in enumerate(levels) if v == lv]
        sub = [paths[i] for i in idx]
        got = _fill(sub, residual, [caps[i] for i in idx] if caps else None)
        for i, r, p in zip(idx, got, sub):
            rates[i] = r
            for ln in p:
                residual[ln] = max(0.0, residual[ln] - r)
    return rates


def _per_hop(paths, capacity, caps, levels, stats) -> list[float]:
    """Strict priority with a level per flow and hop: fixed point over pseudo-links."""
    if any(len(p) != len(lvs) for p, lvs in zip(paths, levels)):
        raise ValueError("levels must give one level per hop of each path")
    n = len(paths)
    pseudo = [list(zip(p, lvs)) for p, lvs in zip(paths, levels)]
    by_link: dict = {}                    # link -> its levels, first served first
    for p in pseudo:
        for ln, lv in p:
            by_link.setdefault(ln, set()).add(lv)
    order = [(ln, sorted(lvs)) for ln, lvs in by_link.items()]
    x = [0.0] * n
    tol = CONVERGED * max((capacity[ln] for ln in by_link), default=1.0)
    rounds, converged, damp, stalls, last = 0, False, False, 0, INF
    while rounds < MAX_ROUNDS:
        rounds += 1
        use: dict = {}
        for xi, p in zip(x, pseudo):
            for key in p:
                use[key] = use.get(key, 0.0) + xi
        pcap = {}
        for ln, lvs in order:
            below = 0.0
            for lv in lvs:
                pcap[(ln, lv)] = max(0.0, capacity[ln] - below)
                below += use[(ln, lv)]
        new = _fill(pseudo, pcap, caps)
        delta = max(abs(a - b) for a, b in zip(new, x))
        stalls = stalls + 1 if delta >= last else 0
        damp = damp or stalls >= STALLS          # not contracting: oscillating
        last = delta
        x = [(a + b) / 2 for a, b in zip(new, x)] if damp else new
        if delta <= tol:
            converged = True
            break
    if stats is not None:
        stats["rounds"] = stats.get("rounds", 0) + rounds
        stats["unconverged"] = stats.get("unconverged", 0) + (not converged)
    bound = [min(a, c) for a, c in zip(x, caps)] if caps else x
    return _fill(paths, capacity, bound)
