"""Peak memory and wall time of one simulated run, verifying on real buffers and by
checksums (issue 44 item 2: memory bounded by the run's shape, not its bytes; the goal:
the paper's Table 1 layout at 8 MB steps, 7.0 GB on real buffers, in <= 1 GB by checksums).

    .venv/bin/python benchmarks/sim_memory.py [--spec runs/table1-paper.toml] [--seed 1]
        [--scheme baseline] [--mode buffers --mode checksums] [--set KEY=VALUE ...]

Each mode is one ``symphony-emu run SPEC --backend sim --scheme SCHEME`` of the one seed
(``--set run.verify=MODE``, its report without plots) in a child process of its own.
Printed per mode: the child's peak resident memory (its ``ru_maxrss``, from ``wait4``),
the plan's estimate of it (``emulator.plan.memory``), the wall time, and how many of the
ranks' collectives were verified. Without ``--set``: one pass of 8 MB chunks, no
variants and no paper claims (``DEFAULT_SETS``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from emulator import plan as planning  # noqa: E402
from emulator.plan import memory  # noqa: E402
from emulator.rundir import RunFolder  # noqa: E402
from emulator.spec import load  # noqa: E402
from topologies.wiring import REPO_ROOT  # noqa: E402

DEFAULT_SETS = ("jobs.0.passes=1", "jobs.0.chunk_bytes=8388608", "variants=[]", "paper=[]")
GOAL_CHECKSUMS_BYTES = 1e9


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=os.path.join(REPO_ROOT, "runs", "table1-paper.toml"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scheme", default="baseline")
    ap.add_argument("--mode", action="append", choices=("buffers", "checksums"),
                    help="a verification to measure (repeatable; default both)")
    ap.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help=f"spec overrides (default: {' '.join(DEFAULT_SETS)})")
    args = ap.parse_args(argv)
    sets = list(DEFAULT_SETS if args.set is None else args.set)
    print(f"{os.path.relpath(args.spec, REPO_ROOT)} {args.scheme} seed {args.seed}, "
          f"simulated; --set {' '.join(sets)}")
    for mode in args.mode or ("buffers", "checksums"):
        measure(args, sets, mode)
    return 0


def measure(args, sets: list[str], mode: str) -> dict:
    sets = sets + [f"run.verify={mode}"]
    estimate = memory.peak_bytes(planning.layouts(load(args.spec, sets)), mode)
    with tempfile.TemporaryDirectory(prefix="sim-memory-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [sys.executable, "-m", "emulator", "run", args.spec, "--backend", "sim",
               "--scheme", args.scheme, "--set", f"run.seeds=[{args.seed}]", "--no-plots",
               "--out", out] + [f"--set={s}" for s in sets]
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, cwd=REPO_ROOT)
        text = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall_s = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        said = [line for line in text.splitlines() if "verified by checksums" in line]
        meas = RunFolder(os.path.join(out, f"{args.scheme}-seed{args.seed}")).measurements
    summaries = [s for s in meas.rank_summaries.values() if hasattr(s, "verified")]
    verified = sum(s.verified for s in summaries)
    expected = sum(s.expected for s in summaries)
    peak = usage.ru_maxrss * 1024
    row = {"mode": mode, "peak_bytes": peak, "estimate_bytes": estimate, "wall_s": wall_s,
           "verified": verified, "expected": expected, "rc": child.returncode}
    goal = (f" (goal <= {GOAL_CHECKSUMS_BYTES / 1e9:g} GB: "
            f"{'met' if peak <= GOAL_CHECKSUMS_BYTES else 'NOT met'})" if mode == "checksums"
            else "")
    print(f"  {mode:<9}  peak {peak / 1e9:5.2f} GB (estimate {estimate / 1e9:.2f} GB){goal}, "
          f"wall {wall_s:6.1f} s, collectives verified {verified}/{expected}, exit {child.returncode}")
    for line in said:
        print(f"             said: {line.strip()}")
    if child.returncode not in (0, 1) or not summaries:
        print(text[-2000:])
    return row


if __name__ == "__main__":
    sys.exit(main())
