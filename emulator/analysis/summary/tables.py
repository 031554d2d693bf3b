"""A run set's tables in ``summary.json``: what ``report`` makes of its faithful runs
per scheme (``report.compare*``, ``evidence``) and what it left out.

A table is a map keyed by data -- scheme names, job ids (as strings, JSON's keys),
metric names (``evidence.METRICS``) -- to a typed row: the keys are what the runs were,
the rows' fields what the report computed of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.analysis.stats import Paired
from emulator.analysis.summary.codec import Part, key

BASELINE = "baseline"       # the scheme every other is compared with
SYMPHONY = "symphony"       # the paper's; the split says what share of the ideal it won


@dataclass(frozen=True, kw_only=True)
class SchemeMedians(Part):
    """A scheme's medians over its runs' collectives and jobs (``report.compare``)."""
    cct_s: float | None
    jct_s: float | None
    max_step_overlap: float | None


@dataclass(frozen=True, kw_only=True)
class Quartiles(Part):
    median: float
    p25: float
    p75: float
    n: int


@dataclass(frozen=True, kw_only=True)
class SchemeSeeds(Part):
    """Over seeds: each seed's median CCT, and its jobs' median JCT."""
    cct_s: Quartiles
    jct_s: Quartiles | None


@dataclass(frozen=True, kw_only=True)
class PairedSeeds(Quartiles):
    """A scheme's median CCT over the baseline's of the same seed, minus 1, over seeds."""
    faster: int                     # seeds in which it was faster
    seeds: list[int]


@dataclass(frozen=True, kw_only=True)
class SeedComparison(Part):
    """``report.compare_seeds``: per scheme over seeds, and paired by seed."""
    schemes: dict[str, SchemeSeeds]
    paired: dict[str, PairedSeeds]


@dataclass(frozen=True, kw_only=True)
class Evidence(Paired, Part):
    """One metric of a scheme against the baseline, paired by seed (``evidence``): the
    statistics of ``stats.paired`` and which seeds were paired."""
    seeds: list[int]
    primary: bool                   # the spec's primary metric
    correlation: float | None       # Spearman's, of the paired values


@dataclass(frozen=True, kw_only=True)
class JobRow(Part):
    """A job under a scheme, medians over seeds (``report.compare_jobs``)."""
    ranks: int
    jct_s: float | None
    last_step_span_s: float | None
    normalized_jct: float | None    # its JCT over the baseline's of the same seed


@dataclass(frozen=True, kw_only=True)
class Noise(Part):
    """The same seed run again (``--repeat``; ``evidence.noise_floor``): spreads are
    (max - min) / median."""
    seeds: int                      # seeds run more than once
    repeats: int                    # the most runs of one seed
    within_seed_spread: float       # median over those seeds
    within_seed_spread_max: float
    between_seeds_spread: float | None    # of the seeds' first runs


@dataclass(frozen=True, kw_only=True)
class SplitMedians(Part):
    """A scheme's medians over its emulated runs' splits (``report.compare_split``): per
    collective (``split.CollectiveSplit``'s fields), per job (``jct_*``) and, for
    Symphony, its gain and the share of the ideal-priority gain it realised. A median
    with nothing to take it of is left out."""
    routing_x: float | None = key(absent=None)
    transport_x: float | None = key(absent=None)
    ideal_gain: float | None = key(absent=None)
    bound_s: float | None = key(absent=None)
    fluid_s: float | None = key(absent=None)
    ideal_s: float | None = key(absent=None)
    emulated_s: float | None = key(absent=None)
    sim_s: float | None = key(absent=None)
    emulation_x: float | None = key(absent=None)
    jct_bound_s: float | None = key(absent=None)
    jct_fluid_s: float | None = key(absent=None)
    jct_ideal_s: float | None = key(absent=None)
    jct_emulated_s: float | None = key(absent=None)
    jct_sim_s: float | None = key(absent=None)
    jct_fluid_lo_s: float | None = key(absent=None)    # each run's job-time range
    jct_fluid_hi_s: float | None = key(absent=None)
    gain_vs_baseline: float | None = key(absent=None)
    realised_share_of_ideal: float | None = key(absent=None)
    realised_share_by_seed: dict[str, float] | None = key(absent=None)
    realised_share_ci: list[float] | None = key(absent=None)


@dataclass(frozen=True, kw_only=True)
class Excluded(Part):
    """A run left out of every median: unfaithful or wrong, or its folder damaged."""
    scheme: str | None              # None: a damaged manifest
    seed: int | None
    repeat: int
    damaged: bool = key(absent=False)


@dataclass(frozen=True, kw_only=True)
class Damaged(Part):
    """A run folder with a file that cannot be read, read by none."""
    rundir: str
    scheme: str | None              # from its manifest, when that is intact
    seed: int | None
    repeat: int
    damaged: bool
    why: str
