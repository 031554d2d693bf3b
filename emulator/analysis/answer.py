"""The main job's answer (``scripts/run-main.sh``): each scheme against the baseline, per
metric, from a simulated and an emulated run set of the same spec, and how far each
emulated run is from its simulated twin.

    python -m emulator.analysis.answer SIMULATED_OUT EMULATED_OUT

Reads the two ``summary.json`` files only (``emulator.analysis.summary.read``); prints a
verdict only where the statistics give one (``emulator.analysis.stats``: never a sign
from three seeds).
"""

from __future__ import annotations

import os
import statistics
import sys

from emulator.analysis import summary
from emulator.analysis.evidence import evidence_text, paper_claims, scheme_name

WORDS = {"cct": "CCT (a collective)", "jct": "JCT (the job)"}


def answer(sim_dir: str, emu_dir: str) -> list[str]:
    out = []
    sets = []
    for label, d in (("simulated", sim_dir), ("emulated", emu_dir)):
        path = os.path.join(d, summary.FILE)
        if not os.path.exists(path):
            out.append(f"{label}: no summary.json in {d} (the run did not finish)")
            continue
        try:
            sets.append((label, summary.read(path)))
        except summary.SummaryError as e:       # an older one names the upgrade
            out.append(f"{label}: {e}")
    for label, s in sets:
        for scheme, metrics in s.evidence.items():
            for m in WORDS:
                e = metrics.get(m)
                if e is not None:
                    out.append(f"{label + ',':<11}{e.n:>3} paired seeds  {scheme_name(scheme)} "
                               f"vs baseline, {WORDS[m]:<19}"
                               f"{evidence_text(e, 'faster', 'slower')}")
    claims = paper_claims(sets[0][1].spec) if sets else ()
    for c in claims:
        if c.variant == "":
            out.append(f"the paper, for comparison: {c.text()}")
    twins = [j.emulated_jct_s / j.sim_jct_s for label, s in sets if label == "emulated"
             for r in s.runs for j in (r.split.jobs if r.split else [])
             if j.sim_jct_s and j.emulated_jct_s]
    if twins:
        out.append(f"emulated / simulated twin on the same paths, per run's job: median "
                   f"{statistics.median(twins):.3f} [{min(twins):.3f}, {max(twins):.3f}] over "
                   f"{len(twins)} runs: what emulating added to the same code")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for line in answer(*argv):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
