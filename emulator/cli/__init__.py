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

import argparse
import os
import signal
import sys
import time

from emulator.schemes import SCHEMES
from topologies import fabric


def _out_dir(arg: str | None, name: str) -> str:
    if arg:
        return os.path.abspath(arg)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(fabric.REPO_ROOT, "runs", "out", f"{stamp}-{name}")


def _positive_int(s: str) -> int:
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def _cmd_demo(args) -> int:
    from emulator.cli.demo import DemoConfig, run
    try:
        fabric.check_shape(args.leaves, args.spines, args.hosts_per_leaf, args.routing)
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


SERVERS_HELP = ("place the fabric's pods on these servers, reached over your ssh as "
                "[user@]host[:port] (sets topology.servers; docs/distributed.md)")


def _print_warnings(command: str, spec) -> None:
    from emulator.plan.timing import warnings
    for w in warnings(spec):
        print(f"symphony-emu {command}: warning: {spec.path}: {w}", file=sys.stderr)


_CHECKED: dict = {}          # real servers' facts, checked once per command


def _fits(command: str, spec, scheme: str, seed: int, force: bool, label: str = "") -> bool:
    """The size guard (emulator.launch.capacity): False, saying why, if this machine
    cannot emulate the spec; ``force`` (--force-size) skips it."""
    from emulator.launch import capacity
    machine = None
    t = spec.topology
    if t.server_targets:                      # real servers: reach and check each first
        from topologies import servers
        key = (t.server_targets, t.ssh_config, t.underlay)
        facts = _CHECKED.get(key)             # once per command (a sweep's points share)
        if facts is None:
            try:
                facts = servers.preflight(list(t.server_targets),
                                          os.path.expanduser(t.ssh_config) or None,
                                          list(t.underlay) or None)
            except (servers.PreflightError, ConnectionError, RuntimeError) as e:
                print(f"symphony-emu {command}: {spec.path}{label}: the servers are not "
                      f"ready:\n{e}", file=sys.stderr)
                return False
            _CHECKED[key] = facts
            for i, f in enumerate(facts):
                print(f"server s{i} {f.target}: {f.cpus} cores, "
                      f"{f.mem_available_bytes / (1 << 30):.1f} GiB available, underlay "
                      f"{f.address} on {f.interface}"
                      + (f" ({f.speed_bps / 1e9:g} Gb/s)" if f.speed_bps else ""))
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
    hosts, switches = len(spec.topology.host_names), len(fabric.switch_names(spec.topology))
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
    if not _fits("run", spec, schemes[0], seeds[0], args.force_size):
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
    print(f"symphony-emu run: {_layout(spec)}")
    for scheme in schemes:
        for seed in seeds:
            rundir = os.path.join(out, f"{scheme}-seed{seed}")
            runner.run_one(spec, scheme, seed, rundir, _progress_printer(f"{scheme} seed {seed}"),
                           pcap=pcap)
            if sys.stdout.isatty():
                print()
    summary = report.summarize(out, plots=not args.no_plots)
    print()
    _print_results(summary, spec.scale.dilation, args.format)
    if spec.raw.get("variants"):
        print(f"\n(this spec has [[variants]]; `symphony-emu sweep {args.spec}` runs them all)")
    print(f"\nsummary: {os.path.join(out, 'summary.json')}")
    for p in summary.get("plots", []):
        print(f"plot:    {p}")
    bad = [r for r in summary["runs"] if not r["fidelity"]["faithful"]]
    return 1 if bad else 0


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
        # (they are, against the base spec, by `validate` and `sweep`).
        base = load(args.spec, ["variants=[]"])
        extra = []
        if args.variant:
            named = dict(variants(load(args.spec)))
            if args.variant not in named:
                print(f"symphony-emu predict: --variant {args.variant!r}: {args.spec} has "
                      f"{', '.join(named) or 'no [[variants]]'}", file=sys.stderr)
                return 2
            extra = named[args.variant]
        spec = load(args.spec, (args.set or []) + extra + ["variants=[]"]) \
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
        if args.backend == "emulation" and not _fits(
                "sweep", spec, (args.scheme or spec.run.schemes)[0], spec.run.seeds[0],
                args.force_size, f" ({label})"):
            return 2
    out = _out_dir(args.out, load(args.spec).name + "-sweep")
    os.makedirs(out, exist_ok=True)
    print(f"symphony-emu sweep: -> {out} (run again with --out {out} to resume)")
    seeds = list(range(1, args.seeds + 1)) if args.seeds else None
    rows = sweep.run_sweep(args.spec, out, args.param or [], _sets(args), args.scheme,
                           seeds, _progress_printer, args.variant, args.backend,
                           not args.no_plots)
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
    root = args.dir or os.path.join(fabric.REPO_ROOT, "runs", "out")
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
    try:
        summary = report.summarize(args.dir, fresh=True)
    except FileNotFoundError as e:
        print(f"symphony-emu report: {e}", file=sys.stderr)
        return 2
    import json
    with open(os.path.join(report.run_dirs(args.dir)[0], "manifest.json")) as f:
        dilation = json.load(f)["scale"]["dilation"]
    _print_results(summary, dilation, args.format)
    for p in summary.get("plots", []):
        print(f"plot: {p}")
    return 0


FORMATS = ("table", "nccl-tests")
FORCE_SIZE_HELP = ("run even a spec larger than this machine emulates (hosts, processes, "
                   "memory: emulator/launch/capacity.py)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="symphony-emu", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run an experiment spec (every scheme and seed)")
    r.add_argument("spec", help="experiment spec (TOML), e.g. runs/table1.toml")
    r.add_argument("--out", help="output folder (default runs/out/<time>-<name>)")
    r.add_argument("--seeds", type=_positive_int, help="run seeds 1..N instead of the spec's")
    r.add_argument("--scheme", help=f"run only this scheme ({', '.join(SCHEMES)})")
    r.add_argument("--no-plots", action="store_true", help="tables and summary.json only")
    r.add_argument("--pcap", metavar="POINTS",
                   help="capture packets at these hosts or switch ports (e.g. h0,leaf1-eth3) "
                        "into <point>.pcapng in each run folder, from before the job starts "
                        "until it ended (Wireshark's dumpcap; tcpdump if it is missing)")
    r.add_argument("--format", choices=FORMATS, default="table", help="table (ours, default) or nccl-tests (their columns, time(us) and GB/s at real "
                        "scale, and footer; nccl-tests.json, shaped like their -J file, is "
                        "written either way)")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a spec value, e.g. --set symphony.k=0.001 (repeatable)")
    r.add_argument("--force-size", action="store_true", help=FORCE_SIZE_HELP)
    r.add_argument("--servers", metavar="USER@HOST,...", help=SERVERS_HELP)
    r.set_defaults(func=_cmd_run, needs_root=True)
    sw = sub.add_parser("sweep", help="run a spec over its [[variants]] and/or --param grids, "
                                      "resumable, into one table")
    sw.add_argument("spec")
    sw.add_argument("--param", action="append", metavar="KEY=V1,V2,...",
                    help="sweep a value, e.g. --param symphony.k=0.001,0.01 (repeatable: grid)")
    sw.add_argument("--out", help="output folder; an existing one is resumed")
    sw.add_argument("--seeds", type=_positive_int, help="seeds 1..N instead of the spec's")
    sw.add_argument("--scheme", action="append", help="only these schemes (repeatable)")
    sw.add_argument("--variant", action="append",
                    help="only these of the spec's [[variants]] (repeatable)")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a spec value for every point (repeatable)")
    sw.add_argument("--backend", choices=("emulation", "fluid"), default="emulation",
                    help="emulation (default, root) or fluid: the flow-level model, "
                         "schemes baseline, ideal-priority, pq (no root, seconds)")
    sw.add_argument("--no-plots", action="store_true", help="tables only")
    sw.add_argument("--force-size", action="store_true", help=FORCE_SIZE_HELP)
    sw.add_argument("--servers", metavar="USER@HOST,...", help=SERVERS_HELP)
    sw.set_defaults(func=_cmd_sweep, needs_root=False)       # emulation checks it itself
    c = sub.add_parser("cli", help="open Mininet's CLI on a spec's fabric, with commands to "
                                   "start jobs, switch Symphony, perturb, read stats, plot")
    c.add_argument("spec")
    c.add_argument("--scheme", default="symphony",
                   help=f"switch behaviour: {', '.join(SCHEMES)} (default symphony)")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--out", help="output folder (default runs/out/<time>-<name>-cli)")
    c.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a spec value (repeatable)")
    c.add_argument("--script", help="run the CLI commands in this file, then exit")
    c.add_argument("--force-size", action="store_true", help=FORCE_SIZE_HELP)
    c.add_argument("--servers", metavar="USER@HOST,...", help=SERVERS_HELP)
    c.set_defaults(func=_cmd_cli, needs_root=True)
    pr = sub.add_parser("predict", help="run a spec in the flow-level model (max-min fluid "
                                        "flows on the same plan; no root, seconds)")
    pr.add_argument("spec")
    pr.add_argument("--out", help="output folder (default runs/out/<time>-<name>-predict)")
    pr.add_argument("--seeds", type=_positive_int, help="seeds 1..N instead of the spec's")
    pr.add_argument("--scheme", action="append",
                    help="baseline (max-min), ideal-priority, pq (repeatable; default all)")
    pr.add_argument("--granularity", default="per_job", choices=("per_job", "per_ring"),
                    help="ideal-priority's lowest step per job (default) or per ring")
    pr.add_argument("--variant", help="one of the spec's [[variants]] (its overrides)")
    pr.add_argument("--no-plots", action="store_true", help="tables and summary.json only")
    pr.add_argument("--format", choices=FORMATS, default="table", help="table (ours, default) or nccl-tests (their columns, time(us) and GB/s at real "
                        "scale, and footer; nccl-tests.json, shaped like their -J file, is "
                        "written either way)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a spec value (repeatable)")
    pr.set_defaults(func=_cmd_predict, needs_root=False)
    cl = sub.add_parser("clean", help="remove what a killed run left on this machine "
                                      "(processes, namespaces), from its ledger")
    cl.add_argument("dir", nargs="?", help="a run folder, or an output folder holding run "
                                           "folders (default: every killed run in runs/out)")
    cl.add_argument("--force", action="store_true",
                    help="clean even a run whose runner still lives")
    cl.set_defaults(func=_cmd_clean, needs_root=True)
    rp = sub.add_parser("report", help="recompute metrics and plots from a run folder")
    rp.add_argument("dir")
    rp.add_argument("--format", choices=FORMATS, default="table", help="table (ours, default) or nccl-tests (their columns, time(us) and GB/s at real "
                        "scale, and footer; nccl-tests.json, shaped like their -J file, is "
                        "written either way)")
    rp.set_defaults(func=_cmd_report, needs_root=False)
    v = sub.add_parser("validate", help="check a spec without running it")
    v.add_argument("spec")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.set_defaults(func=_cmd_validate, needs_root=False)
    d = sub.add_parser("demo", help="leaf-spine + switch agents: baseline vs Symphony marks")
    d.add_argument("--out", help="output folder (default runs/out/<time>-demo)")
    d.add_argument("--leaves", type=_positive_int, default=4)
    d.add_argument("--spines", type=int, default=4)
    d.add_argument("--hosts-per-leaf", type=_positive_int, default=4)
    d.add_argument("--routing", choices=fabric.ROUTING_MODES, default="ecmp")
    d.add_argument("--packets", type=_positive_int, default=200, help="4 KB packets per flow")
    d.add_argument("--load", type=float, default=0.5,
                   help="each host's send rate as a fraction of its link rate (0, 1]")
    d.add_argument("--k", type=float, default=0.01, help="Symphony's gain k")
    d.add_argument("--seed", type=int, default=1)
    d.set_defaults(func=_cmd_demo, needs_root=True)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
