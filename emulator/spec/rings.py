"""Which of a job's hosts form which ring (a job spec's ``rings`` and ``ring_size``).

* ``rail``: ring r is host r of every leaf, in leaf order (the paper's Fig 1a): a ring
  crosses the spine layer at every hop.
* ``single``: one ring over the job's hosts in order.
* ``blocks``: each ring takes ``ring_size / leaves`` consecutive hosts of every leaf, in
  leaf order. With 4 leaves x 8 hosts and ``ring_size = 8``: ring r is (leaf0 h2r,
  leaf0 h2r+1, leaf1 h2r, leaf1 h2r+1, ...), so half of its hops stay under one leaf and
  half cross the spines -- our reading of the paper's Table 1 "8 x 4 (32 nodes)"
  (docs/architecture.md §4). ``blocks`` with one host per leaf is ``rail``.

Pure: host names ``h<i>`` with host i on leaf ``i // per_leaf`` (topologies.fabric).
"""

from __future__ import annotations

LAYOUTS = ("rail", "single", "blocks")


def leaf_of(host: str, per_leaf: int) -> int:
    return int(host[1:]) // per_leaf


def rings(hosts: list[str], per_leaf: int, kind: str, ring_size: int | None = None
          ) -> tuple[tuple[int, ...], ...]:
    """The rings as tuples of ranks (indexes into ``hosts``, which are in rank order).
    ValueError saying what does not fit."""
    if kind not in LAYOUTS:
        raise ValueError(f"allowed: {', '.join(LAYOUTS)}")
    if kind != "blocks" and ring_size is not None:
        raise ValueError(f"ring_size is for rings = \"blocks\" only (this job's rings: {kind})")
    if kind == "single":
        return (tuple(range(len(hosts))),)
    by_leaf: dict[int, list[int]] = {}
    for rank, h in enumerate(hosts):
        by_leaf.setdefault(leaf_of(h, per_leaf), []).append(rank)
    if kind == "rail":
        rails: dict[int, list[int]] = {}
        for rank, h in enumerate(hosts):
            rails.setdefault(int(h[1:]) % per_leaf, []).append(rank)
        sizes = {len(v) for v in rails.values()}
        if len(sizes) != 1 or min(sizes) < 2:
            raise ValueError("rail rings need the same number (>= 2) of the job's hosts on "
                             "every rail (host r of each leaf); use rings = \"single\" otherwise")
        return tuple(tuple(v) for _, v in sorted(rails.items()))
    leaves = len(by_leaf)
    counts = {len(v) for v in by_leaf.values()}
    if ring_size is None or isinstance(ring_size, bool) or not isinstance(ring_size, int) \
            or ring_size < 2 or ring_size % leaves:
        raise ValueError(f"rings = \"blocks\" needs ring_size, an integer >= 2 and a multiple "
                         f"of the job's {leaves} leaves (got {ring_size!r})")
    per_ring = ring_size // leaves
    if len(counts) != 1 or min(counts) % per_ring:
        raise ValueError(f"rings = \"blocks\" of {ring_size} take {per_ring} host(s) of each of "
                         f"the {leaves} leaves: every leaf needs the same number of the job's "
                         f"hosts, a multiple of {per_ring} (has {sorted(counts)})")
    order = [ranks for _, ranks in sorted(by_leaf.items())]
    return tuple(tuple(r for leaf in order for r in leaf[i * per_ring:(i + 1) * per_ring])
                 for i in range(min(counts) // per_ring))
