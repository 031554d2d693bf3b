"""A flow-level (fluid) reference model of an emulated run: the same experiment as fluid
flows sharing bandwidth max-min fairly (ideal congestion control), in the spirit of
ASTRA-sim's analytical network backend. It separates what routing (ECMP collisions), what
congestion control and what a perfect step-aware scheme account for in a slowdown.

    from emulator.model import JobInput, leaf_spine, simulate
    fab = leaf_spine(4, 4, 4, rate_bps=10e9, routing="ecmp")
    res = simulate(fab, [JobInput.from_layout(lay)], scheme="baseline", rng=1)
    metrics.collective_times(res.collectives)

Modules: ``topology`` (the link graph and the kernel's routes), ``maxmin`` (progressive
filling with caps and strict priority), ``ranks`` (``hosts.rank``'s programs),
``priority`` (the schemes' levels), ``simulate`` (the event loop and its records).
"""

from emulator.model.maxmin import max_min_rates
from emulator.model.ranks import JobInput
from emulator.model.records import BackgroundStream, LinkEvent, ModelResult
from emulator.model.simulate import MODEL_SCHEMES, TRACKING, simulate
from emulator.routing.graph import LinkGraph, dumbbell, from_topology, leaf_spine

__all__ = ["BackgroundStream", "JobInput", "LinkEvent", "LinkGraph", "ModelResult",
           "MODEL_SCHEMES", "TRACKING", "dumbbell", "from_topology", "leaf_spine", "max_min_rates", "simulate"]
