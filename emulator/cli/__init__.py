"""`symphony-emu`: the command line (also `python -m emulator`).

    symphony-emu run SPEC [--out DIR] [--seeds N] [--scheme S] [--set key=value ...]
    symphony-emu sweep SPEC [--param key=v1,v2 ...] [--seeds N] [--scheme S ...] [--out DIR]
    symphony-emu predict SPEC [--seeds N] [--scheme S ...] [--set key=value ...] [--out DIR]
    symphony-emu report DIR
    symphony-emu validate SPEC [--set key=value ...]
    symphony-emu demo [--out DIR] ...      (the switch agents alone, without collectives)

``run`` executes an experiment spec (TOML, every key in emulator/schema.py; runs/) for each
scheme and seed, verifies every collective, and writes manifest, logs, summary.json and
plots; ``predict`` runs the same plans in the flow-level model (no root, no network:
seconds; ``emulator/launch/predict.py``); ``report`` recomputes metrics and plots from a run folder's logs; ``validate``
checks a spec without touching the network.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from emulator.cli.options import build_parser
from topologies import wiring


def _out_dir(arg: str | None, name: str) -> str:
    """The output folder of command ``name``: ``arg``, or a new one under runs/out/. A path
    that is, or lies under, an existing file ends the command with a one-line error."""
    if arg:
        out = os.path.abspath(arg)
        up = out
        while not os.path.exists(up):
            up = os.path.dirname(up)
        if not os.path.isdir(up):
            print(f"symphony-emu: --out {arg}: {up} is a file, not a folder (name a "
                  "folder, new or one of an earlier run)", file=sys.stderr)
            raise SystemExit(2)
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(wiring.REPO_ROOT, "runs", "out", f"{stamp}-{name}")


def _cmd_demo(args) -> int:
    from emulator.cli.demo import DemoConfig, run
    try:
        wiring.check_shape(args.leaves, args.spines, args.hosts_per_leaf, args.routing)
    except ValueError as e:
        print(f"symphony-emu demo: {e}", file=sys.stderr)
        return 2
    if not 0 < args.load <= 1:
        print(f"symphony-emu demo: --load must be in (0, 1], got {args.load}", file=sys.stderr)
        return 2
    if args.leaves < 2:
        print("symphony-emu demo: needs at least 2 leaves (rings cross the fabric)", file=sys.stderr)
        return 2
    cfg = DemoConfig(leaves=args.leaves, spines=args.spines, hosts_per_leaf=args.hosts_per_leaf,
                     routing=args.routing, packets_per_flow=args.packets, k=args.k,
                     load=args.load,
                     seed=args.seed)
    out = _out_dir(args.out, "demo")
    print(f"symphony-emu demo: output in {out}")
    summary = run(cfg, out)
    print("\nplots:")
    for p in summary["plots"]:
        print(f"  {p}")
    print(f"summary: {os.path.join(out, 'summary.json')}")
    bad = any(r["nfqueue_drops"] or r["traffic"]["bad_icrc"] or r["leftovers"]
              for r in summary["runs"])
    return 1 if bad else 0


def _sets(args) -> list[str]:
    """The command's ``--set`` items, and ``--servers a,b`` as ``topology.servers``."""
    sets = list(getattr(args, "set", None) or [])
    if getattr(args, "servers", None):
        import json
        sets.append("topology.servers=" + json.dumps(
            [t.strip() for t in args.servers.split(",") if t.strip()]))
    return sets


def _load_spec(args):
    from emulator.spec import SpecError, load
    try:
        spec = load(args.spec, _sets(args))
    except SpecError as e:
        print(f"symphony-emu {args.command}: {e}", file=sys.stderr)
        return None
    _print_warnings(args.command, spec)
    return spec


def _print_warnings(command: str, spec) -> None:
    from emulator.plan.timing import warnings
    for w in warnings(spec):
        print(f"symphony-emu {command}: warning: {spec.path}: {w}", file=sys.stderr)


def _fits(command: str, spec, scheme: str, seed: int, force: bool, label: str = "") -> bool:
    """The size guard (emulator.launch.capacity): False, saying why, if this machine
    cannot emulate the spec; ``force`` (--force-size) skips it."""
    from emulator.launch import capacity
    machine = None
    t = spec.topology
    if t.server_targets:                      # real servers: reach and check each first
        from topologies import servers
        try:
            facts, new = servers.checked(t.server_targets, t.ssh_config, t.underlay)
        except (servers.PreflightError, ConnectionError, RuntimeError) as e:
            print(f"symphony-emu {command}: {spec.path}{label}: the servers are not ready:\n"
                  f"{e}", file=sys.stderr)
            return False
        for i, f in enumerate(facts if new else []):
            print(f.describe(i))
        machine = capacity.with_servers(capacity.this_machine(), facts, t.underlay_gbps * 1e9)
    if force:
        return True
    why = capacity.check(spec, scheme, seed, machine)
    for w in why:
        print(f"symphony-emu {command}: {spec.path}{label}: too large for this machine: {w}; "
              "--force-size runs it anyway", file=sys.stderr)
    return not why


def _cmd_validate(args) -> int:
    from emulator import plan as planning
    from emulator.plan.layout import theoretical_cct_s
    spec = _load_spec(args)
    if spec is None:
        return 2
    plan = planning.compile(spec, spec.run.schemes[0], spec.run.seeds[0])
    rate = plan.link_rate_bps
    print(f"{args.spec}: ok — {spec.name}: {len(spec.topology.host_names)} hosts, links "
          f"{rate / 1e6:g} Mbit/s emulated (D = {spec.scale.dilation:g}), schemes "
          f"{', '.join(spec.run.schemes)}, seeds {_seeds_text(spec.run.seeds)}")
    for job, lay in zip(spec.jobs, plan.layouts):
        start = f", starts at {lay.start_s * 1e3:.0f} ms" if lay.start_s else ""
        if lay.after_job:
            start = f", starts {lay.start_s * 1e3:.0f} ms after job {lay.after_job}"
        if lay.program:
            mtu = spec.transport.mtu_bytes
            per_iter = len(lay.program) // job.iterations
            one = lay.program[:per_iter]
            comm = sum(theoretical_cct_s(lay, rate, mtu, nbytes=c[0]) for c in one)
            print(f"  job {lay.job}: {job.workload} training, {len(lay.hosts)} ranks in "
                  f"{len(lay.rings)} ring(s) of {len(lay.rings[0])}, {job.iterations} "
                  f"iteration(s) x {per_iter} gradient buckets ({sum(c[0] for c in one)} B "
                  f"per rank), compute {one[-1][1] * 1e3:.0f} ms and lockstep all-reduces "
                  f"{comm * 1e3:.0f} ms per iteration, emulated{start}")
            continue
        theo = theoretical_cct_s(lay, rate, spec.transport.mtu_bytes)
        print(f"  job {lay.job}: {lay.algorithm}, {len(lay.hosts)} ranks in {len(lay.rings)} "
              f"ring(s) of {len(lay.rings[0])}, {lay.nbytes} B per rank, {lay.steps} steps x "
              f"{lay.passes} passes, theoretical CCT {theo * 1e3:.1f} ms emulated{start}")
    return 0


def _layout(spec) -> str:
    """How a run of ``spec`` is laid out on this machine: D, and the processes that serve
    its hosts and switches (architecture §3.4, §5.1)."""
    from emulator.launch.launcher import default_processes
    hosts, switches = len(spec.topology.host_names), len(wiring.switch_names(spec.topology))
    sc = spec.scale
    hp = min(hosts, sc.host_processes or default_processes(hosts))
    ap = min(switches, sc.agent_processes or default_processes(switches))
    return (f"D = {sc.dilation:g}; {hosts} hosts in {hp} process(es), {switches} switch "
            f"agents in {ap}{', each process on one CPU' if sc.pin_cpus else ''}")


def _seeds_text(seeds) -> str:
    seeds = list(seeds)
    if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return str(seeds)


def _progress_printer(label: str, unit: str = "steps"):
    state = {"last": None, "t": 0.0}

    def show(done: int, total: int, elapsed: float) -> None:
        eta = f"{elapsed * (total / done - 1):5.0f}s" if done else "    ?"
        line = f"{label}: {unit} {done}/{total} ({done / max(1, total):4.0%}), " \
               f"elapsed {elapsed:5.0f}s, ETA {eta}"
        if sys.stdout.isatty():
            print(f"\r{line:<78}", end="", flush=True)
        elif elapsed - state["t"] >= 10 or done == total and state["last"] != done:
            print(line, flush=True)
            state["t"] = elapsed
        state["last"] = done
    return show


def _dask_answers(cmd: str, address: str) -> bool:
    from emulator.sim.pool import reach
    from emulator.sim.run import SimError
    try:
        reach(address)
        return True
    except SimError as e:
        print(f"symphony-emu {cmd}: {e}", file=sys.stderr)
        return False


def _cmd_run(args) -> int:
    from emulator.analysis import report
    from emulator.launch import runner
    spec = _load_spec(args)
    if spec is None:
        return 2
    schemes = [args.scheme] if args.scheme else list(spec.run.schemes)
    from emulator.spec import SCHEMES
    if args.scheme and args.scheme not in SCHEMES:
        print(f"symphony-emu run: --scheme {args.scheme!r}: allowed: {', '.join(SCHEMES)}",
              file=sys.stderr)
        return 2
    seeds = list(range(1, args.seeds + 1)) if args.seeds else list(spec.run.seeds)
    sim = args.backend == "sim"
    if not sim and os.geteuid() != 0:
        print("symphony-emu run: needs root (network namespaces, iptables); "
              "--backend sim does not", file=sys.stderr)
        return 2
    if sim and (args.pcap or args.servers):
        print(f"symphony-emu run: --{'pcap' if args.pcap else 'servers'} is for the "
              "emulation; --backend sim has no packets to capture or servers to use",
              file=sys.stderr)
        return 2
    if args.paths and not sim:
        print("symphony-emu run: --paths is for --backend sim (a twin of an emulated run)",
              file=sys.stderr)
        return 2
    if args.dask and not sim:
        print("symphony-emu run: --dask is for --backend sim (the emulation keeps one run "
              "at a time)", file=sys.stderr)
        return 2
    if args.dask and not _dask_answers("run", args.dask):
        return 2
    given = {}
    if sim:
        from emulator.analysis.split import twin_paths
        from emulator.sim.run import SimError, check as sim_check
        from emulator import plan as planning
        try:
            sim_check(spec, planning.compile(spec, schemes[0], seeds[0]))
            if args.paths:
                given = {(scheme, seed): twin_paths(args.paths, spec, scheme, seed)
                         for scheme in schemes for seed in seeds}
        except SimError as e:
            print(f"symphony-emu run: {e}", file=sys.stderr)
            return 2
    elif not _fits("run", spec, schemes[0], seeds[0], args.force_size):
        return 2
    from emulator.launch import capture
    from emulator.spec import switch_names
    pcap = capture.parse_points(args.pcap)
    try:
        capture.check_points(pcap, spec.topology.host_names, switch_names(spec.topology))
        if pcap:
            capture.tool()
    except capture.CaptureError as e:
        print(f"symphony-emu run: {e}", file=sys.stderr)
        return 2
    out = _out_dir(args.out, spec.name)
    if os.path.exists(out) and os.listdir(out) and not _reclaim_killed(out):
        print(f"symphony-emu run: {out} exists and is not empty; choose another --out",
              file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu run: {spec.name}: {len(schemes)} scheme(s) x {len(seeds)} seed(s) "
          f"-> {out}")
    print(f"symphony-emu run: {'simulated (virtual time)' if sim else _layout(spec)}")
    def run_seeds(batch):
        # seed by seed, the schemes of one seed (and repeat) side by side, in turns: a
        # machine that drifts over a long sitting then moves both sides of a pair alike
        runs = [(f"{scheme}-seed{seed}" + (f"-rep{k}" if k > 1 else ""), scheme, seed, k)
                for i, seed in enumerate(batch) for k in range(1, args.repeat + 1)
                for scheme in (schemes if (i + k) % 2 else schemes[::-1])]
        if sim:
            from emulator.sim.pool import run_many
            run_many([(name, spec, scheme, seed, os.path.join(out, name),
                       given.get((scheme, seed)), k) for name, scheme, seed, k in runs],
                     args.jobs, args.dask)
            return
        for name, scheme, seed, k in runs:
            runner.run_one(spec, scheme, seed, os.path.join(out, name),
                           _progress_printer(name), pcap=pcap, repeat=k)
            if sys.stdout.isatty():
                print()

    sequential = None
    if args.until_decided and "baseline" not in schemes:
        print("symphony-emu run: --until-decided compares each scheme with the baseline; "
              "run baseline too (--scheme or run.schemes)", file=sys.stderr)
        return 2
    from emulator.sim.run import SimError
    try:
        if args.until_decided:
            sequential = _until_decided(args, spec, schemes, seeds, out, run_seeds)
        else:
            run_seeds(seeds)
    except SimError as e:                      # e.g. no Dask scheduler at --dask
        print(f"symphony-emu run: {e}", file=sys.stderr)
        return 2
    summary = report.summarize(out, plots=not args.no_plots)
    if sequential is not None:
        summary["sequential"] = sequential
        report.write_summary(out, summary)
    print()
    _print_results(summary, spec.scale.dilation, args.format)
    if spec.raw.get("variants"):
        print(f"\n(this spec has [[variants]]; `symphony-emu sweep {args.spec}` runs them all)")
    print(f"\nsummary: {os.path.join(out, 'summary.json')}")
    for p in summary.get("plots", []):
        print(f"plot:    {p}")
    if sequential is not None:
        print(f"\nuntil decided: {sequential['text']}")
    bad = [r for r in summary["runs"] if not r["fidelity"]["faithful"]]
    return 1 if bad else 0


def _until_decided(args, spec, schemes, seeds, out, run_seeds) -> dict:
    """Seeds in batches until the primary metric of every scheme against the baseline is
    decided, or ``--max-seeds``: a fixed plan of looks, each at the confidence that keeps
    a wrong verdict at any look at most 5 % (``stats.sequential_plan``), said up front."""
    from emulator.analysis import report
    from emulator.analysis.stats import sequential_plan
    first = seeds[0]
    looks, conf = sequential_plan(args.max_seeds, args.batch)
    primary = report.primary_metric(spec.raw)
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
        good = [r for r in summary["runs"] if r["fidelity"]["faithful"]]
        ev = report.evidence(good, primary, conf)
        verdicts = {s: e[primary]["verdict"] for s, e in ev.items() if primary in e}
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


def _print_results(summary: dict, dilation: float, fmt: str) -> None:
    """The results as our tables (``table``) or as nccl-tests prints its own (``nccl-tests``:
    their columns and footer; the verdicts after them either way)."""
    from emulator.analysis import export, report
    if fmt == "nccl-tests":
        print(export.nccl_tests_text(summary), end="")
        report.print_verdicts(summary)
    else:
        report.print_tables(summary, dilation)


def _cmd_predict(args) -> int:
    from emulator.analysis import report
    from emulator.launch.predict import run_predict
    from emulator.model.simulate import SCHEMES as MODEL_SCHEMES
    from emulator.spec import SpecError, load, variants
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
    _print_warnings("predict", spec)
    schemes = args.scheme or list(MODEL_SCHEMES)
    bad = [s for s in schemes if s not in MODEL_SCHEMES]
    if bad:
        print(f"symphony-emu predict: --scheme {bad[0]!r}: the model's schemes are "
              f"{', '.join(MODEL_SCHEMES)}", file=sys.stderr)
        return 2
    seeds = list(range(1, args.seeds + 1)) if args.seeds else list(spec.run.seeds)
    out = _out_dir(args.out, spec.name + "-predict")
    if os.path.exists(out) and os.listdir(out):
        print(f"symphony-emu predict: {out} exists and is not empty; choose another --out",
              file=sys.stderr)
        return 2
    print(f"symphony-emu predict: {spec.name}: {len(schemes)} scheme(s) x {len(seeds)} "
          f"seed(s) in the flow-level model -> {out}")
    t0 = time.monotonic()
    run_predict(spec, out, schemes, seeds, args.granularity, _progress_printer("model", "runs"))
    wall = time.monotonic() - t0
    summary = report.summarize(out, plots=not args.no_plots)
    print()
    _print_results(summary, spec.scale.dilation, args.format)
    print(f"\n{len(schemes) * len(seeds)} model runs in {wall:.1f} s; summary: "
          f"{os.path.join(out, 'summary.json')}")
    for p in summary.get("plots", []):
        print(f"plot:    {p}")
    return 0


def _cmd_sweep(args) -> int:
    from emulator.launch import sweep
    from emulator.model.simulate import SCHEMES as MODEL_SCHEMES
    from emulator.spec import SCHEMES, SpecError
    allowed = MODEL_SCHEMES if args.backend == "fluid" else SCHEMES
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
        pts = sweep.points(args.spec, args.param or [], _sets(args), args.variant)
        specs = [(label, load(args.spec, sets)) for label, sets in pts]   # each point valid
    except (SpecError, ValueError) as e:
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    for label, spec in specs:
        _print_warnings("sweep", spec)
        if args.backend == "sim":
            from emulator import plan as planning
            from emulator.sim.run import SimError, check as sim_check
            try:
                sim_check(spec, planning.compile(spec, (args.scheme or spec.run.schemes)[0],
                                                 spec.run.seeds[0]))
            except SimError as e:
                print(f"symphony-emu sweep: {label}: {e}", file=sys.stderr)
                return 2
        if args.backend == "emulation" and not _fits(
                "sweep", spec, (args.scheme or spec.run.schemes)[0], spec.run.seeds[0],
                args.force_size, f" ({label})"):
            return 2
    if args.dask and args.backend != "sim":
        print("symphony-emu sweep: --dask is for --backend sim", file=sys.stderr)
        return 2
    if args.dask and not _dask_answers("sweep", args.dask):
        return 2
    out = _out_dir(args.out, load(args.spec).name + "-sweep")
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu sweep: -> {out} (run again with --out {out} to resume)")
    seeds = list(range(1, args.seeds + 1)) if args.seeds else None
    from emulator.sim.run import SimError
    try:
        rows = sweep.run_sweep(args.spec, out, args.param or [], _sets(args), args.scheme,
                               seeds, _progress_printer, args.variant, args.backend,
                               not args.no_plots, args.jobs, args.dask)
    except SimError as e:
        print(f"symphony-emu sweep: {e}", file=sys.stderr)
        return 2
    return 1 if any(not r["faithful"] for r in rows) else 0


def _cmd_cli(args) -> int:
    from emulator.spec import SCHEMES
    if args.scheme not in SCHEMES:
        print(f"symphony-emu cli: --scheme {args.scheme!r}: allowed: {', '.join(SCHEMES)}",
              file=sys.stderr)
        return 2
    spec = _load_spec(args)
    if spec is None:
        return 2
    if spec.messages:
        print(f"symphony-emu cli: {args.spec}: the CLI runs [[jobs]] specs; this one has "
              "[[messages]]", file=sys.stderr)
        return 2
    if args.script and not os.path.isfile(args.script):
        print(f"symphony-emu cli: --script {args.script}: no such file", file=sys.stderr)
        return 2
    if not _fits("cli", spec, args.scheme, args.seed, args.force_size):
        return 2
    from emulator.cli import live
    return live.run_cli(spec, args.scheme, args.seed, args.out, args.script)


def _reclaim_killed(out: str) -> bool:
    """True if ``out`` held nothing but the folders of runs that never finished (a
    SIGKILLed runner, a Ctrl-C): then what they left is removed, said, and ``out`` is
    empty again, so the same command can run again."""
    from emulator.launch import ledger
    from emulator.rundir import RunFolder
    entries = [os.path.join(out, e) for e in os.listdir(out)]

    def unfinished(e):
        return (os.path.isdir(e) and not RunFolder(e).done
                and ledger.state(e) in ("killed", "cleaned", "closed"))
    if not entries or not all(unfinished(e) for e in entries):
        return False
    for e in entries:
        removed = ledger.reclaim(e, unfinished=True)
        print(f"symphony-emu: {e}: a run that did not finish; removed "
              f"{', '.join(removed) if removed else 'nothing left on the machine'}, "
              "and its partial files")
        os.rmdir(e)
    return True


def _cmd_clean(args) -> int:
    from emulator.launch import ledger
    root = args.dir or os.path.join(wiring.REPO_ROOT, "runs", "out")
    if not os.path.isdir(root):
        print(f"symphony-emu clean: {root}: not a folder", file=sys.stderr)
        return 2
    dirs = ledger.run_dirs_with_ledgers(root)
    status = 0
    for d in dirs:
        st = ledger.state(d)
        if st in ("closed", "cleaned") and not args.dir:
            continue
        try:
            removed = ledger.clean(d, force=args.force)
        except ledger.StillRunning as e:
            print(f"symphony-emu clean: {e}", file=sys.stderr)
            status = 1
            continue
        except ledger.ServersUnreached as e:
            removed = e.removed
            print(f"symphony-emu clean: {e}", file=sys.stderr)
            status = 1
        print(f"{d}: " + (f"removed {', '.join(removed)}" if removed
                          else "nothing of this run is left on the machine"))
    if not dirs:
        print(f"symphony-emu clean: no run folders with a ledger under {root}")
    return status


def _cmd_report(args) -> int:
    from emulator.analysis import report
    if not os.path.isdir(args.dir):
        print(f"symphony-emu report: {args.dir}: not a folder", file=sys.stderr)
        return 2
    from emulator.rundir import DamagedRun
    try:
        summary = report.summarize(args.dir, fresh=True, twin=not args.no_twin)
    except (FileNotFoundError, DamagedRun) as e:
        print(f"symphony-emu report: {e}", file=sys.stderr)
        return 2
    import json
    with open(os.path.join(report.run_dirs(args.dir)[0], "manifest.json")) as f:
        dilation = json.load(f)["scale"]["dilation"]
    _print_results(summary, dilation, args.format)
    for p in summary.get("plots", []):
        print(f"plot: {p}")
    return 0


def _reproduce(args) -> int:
    from emulator.cli.reproduce import cmd_reproduce
    return cmd_reproduce(args)


HANDLERS = {"run": _cmd_run, "sweep": _cmd_sweep, "cli": _cmd_cli, "predict": _cmd_predict,
            "clean": _cmd_clean, "report": _cmd_report, "validate": _cmd_validate,
            "demo": _cmd_demo, "reproduce": _reproduce}



def main(argv: list[str] | None = None) -> int:
    args = build_parser(HANDLERS).parse_args(argv)
    if args.needs_root and os.geteuid() != 0:
        print(f"symphony-emu {args.command}: needs root (network namespaces, iptables)",
              file=sys.stderr)
        return 2
    # SIGTERM tears down like Ctrl-C: the fabric's context manager removes what it made.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    # Ctrl-C too, even when started in the background by a shell (which hands its
    # background jobs SIGINT ignored, and Python then keeps it ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("\nsymphony-emu: interrupted; everything this run created has been removed",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
