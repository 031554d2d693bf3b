"""``summary.json``, declared once: what ``report`` makes of a run set and every reader
of a run reads, as typed parts (as ``runtime.records`` declares what processes write).

``report.summarize`` builds a :class:`Summary` (each run a ``run.RunResult``, its
tables ``tables``' rows) and writes it with :meth:`Summary.write`; every reader in the
repository takes the type -- attributes, never a dict by string key -- and one that has
only the file reads it with :func:`read`. The file's JSON is the shape it had before it
was declared, key for key (tests outside this repository read it), plus ``"format"``:
:data:`FORMAT`. Its only free-form parts are the spec as written (``spec``: the run
set's TOML, as its manifest keeps it) and ``sequential`` (``run --until-decided``'s
record of its looks, its own shape).

Its format is its own, not the run format (``runtime.records.FORMAT``): the summary is
made from run folders, which did not change; an older ``summary.json`` (format 0, no
``"format"``: written before it was declared) is converted by ``symphony-emu upgrade``
(``emulator.upgrade``), and ``report`` writes it anew from the run folders in any case.

A part read from a file is checked against its type: a key missing, unknown or of
another type is a :class:`SummaryError` naming the file, the key (a path from the top:
``runs[0].fidelity.faithful``) and what was expected.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

from emulator.analysis.summary.codec import Part, SummaryError, key
from emulator.analysis.summary.run import (  # noqa: F401 - the summary's parts, here
    COUNTED, SIMULATED, CollectiveResult, CollectiveSplit, Fidelity, JobResult, JobSplit,
    Lossless, Message, MessageSplit, RunResult, Split, Transport)
from emulator.analysis.summary.tables import (  # noqa: F401
    BASELINE, SYMPHONY, Damaged, Evidence, Excluded, JobRow, Noise, PairedSeeds,
    Quartiles, SchemeMedians, SchemeSeeds, SeedComparison, SplitMedians)

FORMAT = 1      # summary.json's: 0 = before it was declared (no "format" in it)
FILE = "summary.json"


@dataclass(frozen=True, kw_only=True)
class Scaling(Part):
    dilation: float                 # emulated time = real-scale time x dilation


@dataclass(kw_only=True)
class Summary(Part):
    """A run set's (or one run folder's) report. Not frozen: ``run --until-decided``
    adds its ``sequential`` record to the summary the report made."""
    format: int = FORMAT
    name: str                       # the spec's
    backend: str                    # the first run's
    order: list[str]                # the runs' dependency rules
    run_folder: str | None          # a report of one run's folder: that folder
    spec: dict                      # the spec as written (free-form: its TOML)
    scale: Scaling
    link_rate_bps: float            # emulated
    runs: list[RunResult]           # by scheme, then seed
    comparison: dict[str, SchemeMedians]
    seeds: SeedComparison
    primary: str                    # the metric the comparison is about (evidence)
    evidence: dict[str, dict[str, Evidence]]     # scheme -> metric -> its evidence
    per_job: dict[str, dict[str, JobRow]]        # job id -> scheme -> row
    noise: dict[str, dict[str, Noise]]           # scheme -> metric -> --repeat's spread
    split: dict[str, SplitMedians]               # scheme -> medians of the splits
    excluded: list[Excluded]
    damaged: list[Damaged]
    plots: list[str] = key(absent=())
    sequential: dict | None = key(absent=None)   # run --until-decided's (free-form)
    # emulator.upgrade's note on a summary it converted: {"from": its format, "filled":
    # the keys it lacked, filled with what they meant then}
    upgraded: dict | None = key(absent=None)

    def write(self, out_dir: str) -> str:
        """``summary.json`` in ``out_dir``, each run's folder given relative to it (the
        run set moves with its folder, to another machine too); the summary in memory
        keeps full paths."""
        rel = replace(self, runs=[replace(r, rundir=os.path.relpath(r.rundir, out_dir))
                                  for r in self.runs],
                      damaged=[replace(d, rundir=os.path.relpath(d.rundir, out_dir))
                               for d in self.damaged])
        path = os.path.join(out_dir, FILE)
        with open(path, "w") as f:
            json.dump(rel.to_json(), f, indent=1)
        return path


def read(path: str) -> Summary:
    """The summary in ``path`` (a ``summary.json``, or the folder holding one), its runs'
    folders as the file gives them (relative to it)."""
    if os.path.isdir(path):
        path = os.path.join(path, FILE)
    try:
        with open(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise SummaryError(f"{path}: not JSON ({e.msg} at byte {e.pos})") from None
    return decode(data, path)


def decode(data, path: str = FILE) -> Summary:
    """A summary's JSON as its type; ``path``: where it was read, for the error."""
    version = data.get("format", 0) if isinstance(data, dict) else None
    if version == 0:
        raise SummaryError(f"{path}: a summary of format 0 (this version reads {FORMAT}); "
                           f"upgrade it: symphony-emu upgrade "
                           f"{os.path.dirname(os.path.abspath(path))}")
    if version != FORMAT:
        raise SummaryError(f"{path}: format {version!r}: not a summary this version reads "
                           f"(format {FORMAT})")
    try:
        return Summary.from_json(data)
    except SummaryError as e:
        raise SummaryError(f"{path}: {e}") from None
