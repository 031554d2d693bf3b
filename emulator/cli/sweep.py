"""``symphony-emu sweep``: a spec's variants and parameter grid, each point a resumable set of runs."""

from __future__ import annotations

import os
import sys

from emulator.cli.common import (dask_answers, fits, out_dir, print_warnings,
                                 progress_printer, sets)


def cmd_sweep(args) -> int:
    from emulator.launch import sweep
    from emulator.model.simulate import MODEL_SCHEMES
    from emulator.spec.schema import SCHEME_NAMES
    from emulator.spec.check import SpecError
    allowed = MODEL_SCHEMES if args.backend == "fluid" else SCHEME_NAMES
    if args.scheme:                           # repeatable, each once, as in run and predict
        args.scheme = list(dict.fromkeys(args.scheme))
    if args.scheme and any(s not in allowed for s in args.scheme):
        print(f"symphony-emu sweep: --scheme: allowed with --backend {args.backend}: "
              f"{', '.join(allowed)}", file=sys.stderr)
        return 2
    if args.backend == "emulation" and os.geteuid() != 0:
        print("symphony-emu sweep: needs root (network namespaces, iptables); "
              "--backend fluid does not", file=sys.stderr)
        return 2
    from emulator.spec import load
    try:
        pts = sweep.points(args.spec, args.param or [], sets(args), args.variant)
        specs = [(label, load(args.spec, sets)) for label, sets in pts]   # each point valid
    except (SpecError, ValueError) as e:
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    for label, spec in specs:
        print_warnings("sweep", spec)
        if args.backend == "sim":
            from emulator import plan as planning
            from emulator.sim.run import SimError, check as sim_check
            try:
                sim_check(spec.path, planning.compile(spec, (args.scheme or spec.run.schemes)[0],
                                                 spec.run.seeds[0]))
            except SimError as e:
                print(f"symphony-emu sweep: {label}: {e}", file=sys.stderr)
                return 2
        if args.backend == "emulation" and not fits(
                "sweep", spec, (args.scheme or spec.run.schemes)[0], spec.run.seeds[0],
                args.force_size, f" ({label})"):
            return 2
    if args.dask and args.backend != "sim":
        print("symphony-emu sweep: --dask is for --backend sim", file=sys.stderr)
        return 2
    if args.dask and not dask_answers("sweep", args.dask):
        return 2
    out = out_dir(args.out, load(args.spec).name + "-sweep")
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu sweep: -> {out} (run again with --out {out} to resume)")
    seeds = list(range(1, args.seeds + 1)) if args.seeds else None
    from emulator.sim.run import SimError
    try:
        rows = sweep.run_sweep(args.spec, out, args.param or [], sets(args), args.scheme,
                               seeds, progress_printer, args.variant, args.backend,
                               not args.no_plots, args.jobs, args.dask)
    except SimError as e:
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    return 1 if any(not r["faithful"] for r in rows) else 0
