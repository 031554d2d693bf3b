"""``symphony-emu sweep``: a spec's variants and parameter grid, each point a resumable set of runs."""

from __future__ import annotations

import os
import sys

from emulator.cli.common import out_dir, print_warnings, progress_printer, sets


def cmd_sweep(args) -> int:
    from emulator.launch import sweep
    from emulator.launch.backends import BACKENDS, BackendError, Options
    from emulator.spec.check import SpecError
    backend = BACKENDS[args.backend]
    if args.scheme:                           # repeatable, each once, as in run and predict
        args.scheme = list(dict.fromkeys(args.scheme))
    if args.scheme and any(s not in backend.schemes for s in args.scheme):
        print(f"symphony-emu sweep: --scheme: allowed with --backend {backend.name}: "
              f"{', '.join(backend.schemes)}", file=sys.stderr)
        return 2
    opts = Options(dask=args.dask, force_size=args.force_size, jobs=args.jobs)
    why = backend.refusal(opts)
    if why:
        print(f"symphony-emu sweep: {why}", file=sys.stderr)
        return 2
    from emulator.spec import load
    try:
        pts = sweep.points(args.spec, args.param or [], sets(args), args.variant)
        specs = [(label, load(args.spec, sets)) for label, sets in pts]   # each point valid
        for label, spec in specs:
            print_warnings("sweep", spec)
            backend.check(spec, (args.scheme or backend.default_schemes(spec))[0],
                          spec.run.seeds[0], opts, f" ({label})")
    except (SpecError, ValueError) as e:        # a BackendError is a ValueError
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    out = out_dir(args.out, load(args.spec).name + "-sweep")
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu sweep: -> {out} (run again with --out {out} to resume)")
    seeds = list(range(1, args.seeds + 1)) if args.seeds else None
    try:
        rows = sweep.run_sweep(args.spec, out, args.param or [], sets(args), args.scheme,
                               seeds, progress_printer, args.variant, backend,
                               not args.no_plots, opts)
    except BackendError as e:
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    return 1 if any(not r["faithful"] for r in rows) else 0
