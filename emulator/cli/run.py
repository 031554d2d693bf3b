"""``symphony-emu run``: a spec's schemes x seeds, emulated or simulated, then its report
(``--until-decided``: seeds in batches until every comparison is decided)."""

from __future__ import annotations

import os
import sys

from emulator.cli.common import load_spec, out_dir, print_results, progress_printer


def cmd_run(args) -> int:
    from emulator.analysis import report
    from emulator.launch.backends import BACKENDS, BackendError, Options, Task
    spec = load_spec(args)
    if spec is None:
        return 2
    backend = BACKENDS[args.backend]
    # --scheme is repeatable: each scheme named runs, in the order given (once each)
    schemes = (list(dict.fromkeys(args.scheme)) if args.scheme
               else list(backend.default_schemes(spec)))
    bad = [s for s in schemes if s not in backend.schemes]
    if bad:
        print(f"symphony-emu run: --scheme {bad[0]!r}: allowed: {', '.join(backend.schemes)}",
              file=sys.stderr)
        return 2
    seeds = list(range(1, args.seeds + 1)) if args.seeds else list(spec.run.seeds)
    if args.until_decided and "baseline" not in schemes:
        print("symphony-emu run: --until-decided compares each scheme with the baseline; "
              "run baseline too (--scheme or run.schemes)", file=sys.stderr)
        return 2
    opts = Options(pcap=args.pcap or [], servers=args.servers, paths=args.paths,
                   dask=args.dask, force_size=args.force_size, jobs=args.jobs)
    why = backend.refusal(opts)
    if why:
        print(f"symphony-emu run: {why}", file=sys.stderr)
        return 2
    try:
        for scheme, seed in ([(s, n) for s in schemes for n in seeds] if args.paths
                             else [(schemes[0], seeds[0])]):     # --paths: each run's own
            backend.check(spec, scheme, seed, opts)
    except BackendError as e:
        print(f"symphony-emu run: {e}", file=sys.stderr)
        return 2
    out = out_dir(args.out, spec.name)
    if getattr(args, "resume", False):
        if not args.out or not os.path.isdir(out):
            print(f"symphony-emu run: --resume: --out {args.out or '(none)'} is not a folder "
                  "of an earlier run", file=sys.stderr)
            return 2
    elif os.path.exists(out) and os.listdir(out) and not reclaim_killed(out):
        print(f"symphony-emu run: {out} exists and is not empty; choose another --out "
              "(or --resume it)", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu run: {spec.name}: {len(schemes)} scheme(s) x {len(seeds)} seed(s) "
          f"-> {out}")
    print(f"symphony-emu run: {backend.describe(spec)}")
    verification = backend.verification(spec)
    if verification:
        print(f"symphony-emu run: {verification}")

    def run_seeds(batch):
        # seed by seed, the schemes of one seed (and repeat) side by side, in turns: a
        # machine that drifts over a long sitting then moves both sides of a pair alike
        tasks = []
        for i, seed in enumerate(batch):
            for k in range(1, args.repeat + 1):
                for scheme in schemes if (i + k) % 2 else schemes[::-1]:
                    name = f"{scheme}-seed{seed}" + (f"-rep{k}" if k > 1 else "")
                    rundir = os.path.join(out, name)
                    if getattr(args, "resume", False) and kept(rundir, spec, scheme, seed):
                        print(f"{name}: done before, kept", flush=True)
                        continue
                    tasks.append(Task(name, spec, scheme, seed, rundir, k))
        backend.run(tasks, opts, progress_printer)

    sequential = None
    try:
        if args.until_decided:
            sequential = _until_decided(args, spec, schemes, seeds, out, run_seeds)
        else:
            run_seeds(seeds)
    except BackendError as e:                  # e.g. the Dask scheduler went away
        print(f"symphony-emu run: {e}", file=sys.stderr)
        return 2
    summary = report.summarize(out, plots=not args.no_plots,
                               progress=lambda line: print(line, flush=True))
    if sequential is not None:
        summary.sequential = sequential
        summary.write(out)
    print()
    print_results(summary, spec.scale.dilation, args.format)
    if spec.raw.get("variants"):
        print(f"\n(this spec has [[variants]]; `symphony-emu sweep {args.spec}` runs them all)")
    print(f"\nsummary: {os.path.join(out, 'summary.json')}")
    for p in summary.plots:
        print(f"plot:    {p}")
    if sequential is not None:
        print(f"\nuntil decided: {sequential['text']}")
    bad = [r for r in summary.runs if not r.fidelity.faithful]
    return 1 if bad else 0


def kept(rundir: str, spec, scheme: str, seed: int) -> bool:
    """Is ``rundir`` a finished run of this very spec (as written and overridden), scheme
    and seed? A folder of anything else is run anew (``--resume``): never kept wrongly."""
    from emulator.rundir import RunFolder
    folder = RunFolder(rundir)
    if not folder.done:
        return False
    try:
        man = folder.manifest
    except (OSError, ValueError):      # DamagedRun, OlderRun: not a run to keep
        return False
    return (man.scheme, man.seed, man.spec) == (scheme, seed, spec.raw)


def _until_decided(args, spec, schemes, seeds, out, run_seeds) -> dict:
    """Seeds in batches until the primary metric of every scheme against the baseline is
    decided, or ``--max-seeds``: a fixed plan of looks, each at the confidence that keeps
    a wrong verdict at any look at most 5 % (``stats.sequential_plan``), said up front."""
    from emulator.analysis import report
    from emulator.analysis.evidence import evidence, primary_metric
    from emulator.analysis.stats import sequential_plan
    first = seeds[0]
    looks, conf = sequential_plan(args.max_seeds, args.batch)
    primary = primary_metric(spec.raw)
    print(f"symphony-emu run: until decided: {primary.upper()} of "
          f"{', '.join(s for s in schemes if s != 'baseline')} against the baseline, seeds "
          f"{first}..{first + args.max_seeds - 1} in batches of {args.batch}; looks at "
          f"{', '.join(map(str, looks))} pairs, each at {conf:.2%} (a wrong verdict at any "
          f"look: at most 5 %)")
    done, record = 0, []
    for n in looks:
        run_seeds(range(first + done, first + n))
        done = n
        summary = report.summarize(out, plots=False, exports=False, twin=False)
        good = [r for r in summary.runs if r.fidelity.faithful]
        ev = evidence(good, primary, conf)
        verdicts = {s: e[primary].verdict for s, e in ev.items() if primary in e}
        record.append({"pairs": n, "verdicts": verdicts})
        print(f"look at {n} seeds ({conf:.2%}): " + ", ".join(
            f"{s} {v}" for s, v in verdicts.items()), flush=True)
        if verdicts and all(v != "undecided" for v in verdicts.values()):
            break
    last = record[-1]
    decided = bool(last["verdicts"]) and all(v != "undecided" for v in last["verdicts"].values())
    text = (f"{'decided' if decided else 'not decided'} after {last['pairs']} seeds "
            f"({primary}: " + ", ".join(f"{s} {v}" for s, v in last["verdicts"].items())
            + f"; each look at {conf:.2%}, looks planned at {looks})")
    return {"primary": primary, "confidence": conf, "looks": looks, "record": record,
            "decided": decided, "text": text}


def reclaim_killed(out: str) -> bool:
    """True if ``out`` held nothing but the folders of runs that never finished (a
    SIGKILLed runner, a Ctrl-C): then what they left is removed, said, and ``out`` is
    empty again, so the same command can run again. A folder holding no more than what a
    run writes before its fabric takes anything from the machine (its manifest, an empty
    ledger: a Ctrl-C in the few milliseconds between them) is such a run's too."""
    import shutil
    from emulator.launch import ledger
    from emulator.rundir import MANIFEST, RunFolder
    entries = [os.path.join(out, e) for e in os.listdir(out)]
    before_fabric = {MANIFEST, MANIFEST + ".tmp", ledger.LEDGER}

    def unfinished(e):
        if not os.path.isdir(e) or RunFolder(e).done:
            return False
        st = ledger.state(e)
        if st == "none":
            return set(os.listdir(e)) <= before_fabric
        return st in ("killed", "cleaned", "closed")
    if not entries or not all(unfinished(e) for e in entries):
        return False
    for e in entries:
        if ledger.state(e) == "none":
            shutil.rmtree(e)
            print(f"symphony-emu: {e}: a run that did not finish (interrupted before it "
                  "took anything from the machine); removed its partial files")
            continue
        removed = ledger.reclaim(e, unfinished=True)
        print(f"symphony-emu: {e}: a run that did not finish; removed "
              f"{', '.join(removed) if removed else 'nothing left on the machine'}, "
              "and its partial files")
        os.rmdir(e)
    return True
