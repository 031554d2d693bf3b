"""A spec's lossless fabric checked (``topology.flow_control = "pfc"``, the ``[pfc]``
section; docs/architecture.md §5.6): thresholds that can work on every switch of the
topology, and routes on which PFC cannot deadlock under any of the spec's link failures.
Each error is one line naming the key, its value and what is allowed."""

from __future__ import annotations

from dataclasses import replace

from emulator.perturbations import KINDS
from emulator.routing import deadlock, graph
from emulator.spec.check import need, reuse
from emulator.spec.schema import PfcSpec, TopologySpec
from runtime import wire
from switch_agent.queue_model import L2_HEADER_BYTES
from topologies.wiring import neighbors, switch_names


def check(pfc: PfcSpec, topo: TopologySpec, mtu_bytes: int, perturbations: tuple,
          path: str) -> None:
    """Refuse [pfc] values that cannot work on ``topo`` (only when it is lossless)."""
    if topo.flow_control != "pfc":
        return
    params = reuse(path, "pfc", pfc, lambda: pfc.params(topo.link_rate_gbps, mtu_bytes))
    frame = mtu_bytes + wire.OVERHEAD_BYTES + L2_HEADER_BYTES
    auto = replace(pfc, headroom_bytes=0).params(topo.link_rate_gbps, mtu_bytes).headroom_bytes
    need(pfc.headroom_bytes == 0 or pfc.headroom_bytes >= frame, path,
         "pfc.headroom_bytes", pfc.headroom_bytes,
         f"must be 0 (auto: {auto} B) or at least one {frame}-byte frame: "
         "a frame that finds its port past the threshold has nowhere else to go")
    widest = max(switch_names(topo), key=lambda sw: len(neighbors(topo, sw)))
    ports = len(neighbors(topo, widest))
    shared = params.shared_bytes(ports)
    per_port = params.headroom_bytes + params.reserve_bytes
    key = "pfc.headroom_bytes" if pfc.headroom_bytes or not pfc.buffer_bytes \
        else "pfc.buffer_bytes"
    need(shared > 0, path, key, getattr(pfc, key.split(".")[1]),
         f"{widest}'s {ports} ports' headroom and reserve ({ports} x {per_port} B) take "
         f"all of the {params.buffer_bytes}-byte buffer: the headroom must be below "
         f"{params.buffer_bytes // ports - params.reserve_bytes} B, or the buffer above "
         f"{ports * per_port} B")
    need(params.resume_offset_bytes < params.alpha * shared, path,
         "pfc.resume_offset_bytes", pfc.resume_offset_bytes,
         f"must be below the XOFF threshold of an empty buffer, alpha x shared = "
         f"{params.alpha:g} x {shared} = {params.alpha * shared:.0f} B ({widest}): a "
         "port past it would never resume")
    _no_deadlock(topo, perturbations, path)


def _no_deadlock(topo: TopologySpec, perturbations: tuple, path: str) -> None:
    """No cyclic buffer dependency with every cable up, each link-down perturbation's
    cable down, or all of them down together."""
    fab = graph.from_topology(topo, topo.link_rate_gbps * 1e9)
    cuts = [(i, c) for i, p in enumerate(perturbations) for c in KINDS[p.kind].cut_cables(p)]
    states = [(None, ())] + [(i, (c,)) for i, c in cuts]
    if len(cuts) > 1:
        states.append((cuts[-1][0], tuple(c for _, c in cuts)))
    for i, down in states:
        loop = deadlock.cycle(deadlock.dependencies(fab, down))
        if loop is None:
            continue
        links = " > ".join(f"{a}-{b}" for a, b in loop)
        if i is None:
            need(False, path, "topology.routing", topo.routing,
                 f"with topology.flow_control = 'pfc', these routes hold a cycle of links "
                 f"that can pause each other ({links}): PFC could deadlock")
        need(False, path, f"perturbations[{i}]", perturbations[i].kind,
             f"with topology.flow_control = 'pfc' and routing {topo.routing!r}, this link "
             f"down leaves a cycle of links that can pause each other ({links}): PFC could "
             "deadlock; drop the perturbation or the lossless fabric")
