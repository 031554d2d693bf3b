"""What a run holds at its peak, from its shape, and so how its ranks verify their results:
on real buffers (``hosts.collectives.expected``) or by checksums
(``hosts.collectives.checksums``), the spec's ``run.verify``; ``auto`` takes real buffers
while their peak is within ``run.verify_budget_gb`` (docs/architecture.md §4,
"Verification at scale"). Pure: from the plan's job layouts.

Peaks measured on one simulated baseline run of the paper's Table 1 layout at 8 MB steps
(32 ranks x 64 MiB, 8 MiB a message; ``benchmarks/sim_memory.py``, the run's process's
peak resident memory). Real buffers: 7.0 GB (/usr/bin/time -v), 7.19 GB (the
benchmark; both 2026-12-06): the run's own (~250 MB for the main job, ~140 MB here)
and about 3.5 float32 copies of every rank's buffer -- its input, its working buffer, what
it checks them against, and the messages in flight. Checksums: 0.24 GB (2026-12-06): the
run's own, one byte per element of the largest buffer (the elements' codes, shared by
every rank of the process), and per message in flight a block of its bytes
(``hosts.config.STREAM_BYTES``: generated as the NIC reads them, fitted as they arrive),
taken as STREAMS blocks a rank (a send, a receive, a faster peer's next one, a head).
Before messages streamed (they were held whole, 2.2 of each rank's largest in flight)
the same run took 0.76 GB, Table 2's ResNet-50 at 128 nodes 3.3 GB and its VGG16 would
have taken ~40 GB (a 411 MB layer, 103 MB messages).
"""

from __future__ import annotations

from dataclasses import dataclass

from hosts.config import STREAM_BYTES

RUN_OWN_BYTES = 300 * 2**20
BUFFER_COPIES = 3.5
STREAMS = 4
GB = 1e9


def rank_bytes(lay) -> int:
    """What one rank of the job holds verifying by checksums: a block of each message in
    flight and, at most (a process of its own), the elements' codes, one byte per element."""
    return STREAMS * STREAM_BYTES + lay.nbytes // 4


def buffer_bytes(lay) -> int:
    """The bytes of one rank's buffers on real buffers: its collective's, or a training
    workload's (``lay.program``) every bucket size's -- a rank keeps each size's input
    and result (``hosts.rank``, per size), not only the largest's (``lay.nbytes``). Taken
    as the largest, Table 2's ResNet-50 on 512 ranks was estimated at 3.7 GB, within the
    4 GB budget, and took 12 GB a run."""
    if not lay.program:
        return lay.nbytes
    return sum({nbytes for nbytes, _, _ in lay.program})


def peak_bytes(layouts, verify: str) -> int:
    """An estimate of a run's peak memory with its ranks verifying by ``verify``."""
    if verify == "buffers":
        return int(RUN_OWN_BYTES + BUFFER_COPIES * sum(len(lay.hosts) * buffer_bytes(lay)
                                                       for lay in layouts))
    codes = max((lay.nbytes // 4 for lay in layouts), default=0)
    return int(RUN_OWN_BYTES + codes + STREAMS * STREAM_BYTES * sum(
        len(lay.hosts) for lay in layouts))


@dataclass(frozen=True)
class Verification:
    """How a run's ranks verify (``mode``: ``hosts.config.VERIFY_MODES``), and why."""
    mode: str
    asked: str                  # the spec's run.verify
    buffers_bytes: int          # the run's peak on real buffers
    budget_bytes: float

    def line(self) -> str | None:
        """What the console says of it; None for real buffers (the default)."""
        if self.mode == "buffers":
            return None
        why = (f"real buffers would need about {self.buffers_bytes / GB:.1f} GB at the "
               f"peak, over run.verify_budget_gb = {self.budget_bytes / GB:g}"
               if self.asked == "auto" else "run.verify = \"checksums\"")
        return f"results verified by checksums ({why}; docs/architecture.md §4)"


def verification(run, layouts) -> Verification:
    """How a run of these job layouts verifies, by the spec's ``[run]`` (``run``)."""
    buffers = peak_bytes(layouts, "buffers")
    budget = run.verify_budget_gb * GB
    mode = run.verify if run.verify != "auto" else (
        "buffers" if buffers <= budget else "checksums")
    return Verification(mode, run.verify, buffers, budget)
