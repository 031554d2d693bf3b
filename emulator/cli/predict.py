"""``symphony-emu predict``: a spec's plans in the flow-level model (no root: seconds)."""

from __future__ import annotations

import os
import sys
import time

from emulator.cli.common import out_dir, print_results, print_warnings, progress_printer


def cmd_predict(args) -> int:
    from emulator.analysis import report
    from emulator.launch.predict import run_predict
    from emulator.model.simulate import MODEL_SCHEMES
    from emulator.spec import load, variants
    from emulator.spec.check import SpecError
    try:
        # A spec's other [[variants]] are not run here, so not validated against --set
        # (they are, against the base spec, by `validate` and `sweep`); nor are the
        # paper's values, which then name a variant (`sweep` and `reproduce` print them).
        alone = ["variants=[]"] + (["paper=[]"] if load(args.spec).raw.get("variants") else [])
        base = load(args.spec, alone)
        extra = []
        if args.variant:
            named = dict(variants(load(args.spec)))
            if args.variant not in named:
                print(f"symphony-emu predict: --variant {args.variant!r}: {args.spec} has "
                      f"{', '.join(named) or 'no [[variants]]'}", file=sys.stderr)
                return 2
            extra = named[args.variant]
        spec = load(args.spec, (args.set or []) + extra + alone) \
            if args.set or extra else base
    except SpecError as e:
        print(f"symphony-emu predict: {e}", file=sys.stderr)
        return 2
    print_warnings("predict", spec)
    schemes = list(dict.fromkeys(args.scheme)) if args.scheme else list(MODEL_SCHEMES)
    bad = [s for s in schemes if s not in MODEL_SCHEMES]
    if bad:
        print(f"symphony-emu predict: --scheme {bad[0]!r}: the model's schemes are "
              f"{', '.join(MODEL_SCHEMES)}", file=sys.stderr)
        return 2
    seeds = list(range(1, args.seeds + 1)) if args.seeds else list(spec.run.seeds)
    out = out_dir(args.out, spec.name + "-predict")
    if os.path.exists(out) and os.listdir(out):
        print(f"symphony-emu predict: {out} exists and is not empty; choose another --out",
              file=sys.stderr)
        return 2
    print(f"symphony-emu predict: {spec.name}: {len(schemes)} scheme(s) x {len(seeds)} "
          f"seed(s) in the flow-level model -> {out}")
    t0 = time.monotonic()
    run_predict(spec, out, schemes, seeds, args.tracking, progress_printer("model", "runs"))
    wall = time.monotonic() - t0
    summary = report.summarize(out, plots=not args.no_plots)
    print()
    print_results(summary, spec.scale.dilation, args.format)
    print(f"\n{len(schemes) * len(seeds)} model runs in {wall:.1f} s; summary: "
          f"{os.path.join(out, 'summary.json')}")
    for p in summary.plots:
        print(f"plot:    {p}")
    return 0
