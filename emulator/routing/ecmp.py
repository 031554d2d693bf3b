"""The ECMP hash every backend that routes flows itself uses -- the flow-level model and
the simulation (the emulation has the kernel's): per switch, a keyed hash of the flow's
5-tuple salted by the run, so each seed draws the fabric's paths anew, or by a fixed draw
with ``topology.paths = "fixed"`` (``RunPlan.path_seed``; docs/architecture.md
§10; the kernel's multipath hash is another function of the same 5-tuple, so an emulated
run's paths are recorded and a twin is given them, ``--paths``).

Pure: the run's randomness is the caller's (``salt_of(rng)``).
"""

from __future__ import annotations

import hashlib
import random


def ecmp_choice(salt: int, key: str):
    """``pick(switch, hops)``: the equal-cost hop a flow of ``key`` (its 5-tuple as
    "src_ip/dst_ip/sport") takes at ``switch``, a keyed hash salted by the run
    (independent per switch: ``emulator.model.simulate``'s docstring says what that
    assumes)."""
    def pick(switch, hops):
        h = hashlib.blake2b(f"{salt}/{key}/{switch}".encode(), digest_size=8)
        return hops[int.from_bytes(h.digest(), "big") * len(hops) >> 64]
    return pick


def salt_of(rng) -> int:
    """The 64-bit salt of the ECMP hash a run draws from ``rng`` (an int seed, a ``random.Random`` or a numpy
    ``Generator``)."""
    if rng is None or isinstance(rng, int):
        return random.Random(rng or 0).getrandbits(64)
    if hasattr(rng, "getrandbits"):
        return rng.getrandbits(64)
    return int(rng.integers(0, 2**63))           # numpy Generator
