"""The words of ``symphony-emu``'s command line: its commands, their options and help
(``build_parser``); what each command does is ``emulator.cli``'s."""

from __future__ import annotations

import argparse
import os

from emulator.spec.schemes import SCHEMES

DESCRIPTION = "`symphony-emu`: the command line (also `python -m emulator`)."


def _positive_int(s: str) -> int:
    v = int(s)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


SERVERS_HELP = ("place the fabric's pods on these servers, reached over your ssh as "
                "[user@]host[:port] (sets topology.servers; docs/distributed.md)")


# --scheme means the same in run, sweep and predict: repeatable, each scheme named runs
SCHEME_HELP = (f"run this scheme ({', '.join(SCHEMES)}); repeatable, each named one runs "
               "(default: the spec's run.schemes)")

FORMATS = ("table", "nccl-tests")
FORCE_SIZE_HELP = ("run even a spec larger than this machine emulates (hosts, processes, "
                   "memory: emulator/launch/capacity.py)")


def _dask(p) -> None:
    p.add_argument("--dask", metavar="ADDRESS",
                   help="with --backend sim: hand the runs to the Dask scheduler at ADDRESS "
                        "(host:port; its workers need this revision of symphony-emu, not this "
                        "disk: each run folder comes back packed); instead of --jobs")


def _emulating(p: argparse.ArgumentParser) -> None:
    """The options of a command that emulates: the size guard's, and the servers."""
    p.add_argument("--force-size", action="store_true", help=FORCE_SIZE_HELP)
    p.add_argument("--servers", metavar="USER@HOST,...", help=SERVERS_HELP)


def _formats(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (ours, default) or nccl-tests (their columns, time(us) and "
                        "GB/s at real scale, and footer; nccl-tests-<scheme>.json, shaped like their "
                        "-J file, is written either way)")


def build_parser(run: dict) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="symphony-emu", description=DESCRIPTION)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run an experiment spec (every scheme and seed)")
    r.add_argument("spec", help="experiment spec (TOML), e.g. runs/table1.toml")
    r.add_argument("--out", help="output folder (default runs/out/<time>-<name>)")
    r.add_argument("--resume", action="store_true",
                   help="--out is an earlier run of this same spec and options, interrupted: "
                        "keep each run it finished, run the others")
    r.add_argument("--seeds", type=_positive_int, help="run seeds 1..N instead of the spec's")
    r.add_argument("--scheme", action="append", metavar="S", help=SCHEME_HELP)
    r.add_argument("--no-plots", action="store_true", help="tables and summary.json only")
    r.add_argument("--pcap", metavar="POINTS",
                   help="capture packets at these hosts or switch ports (e.g. h0,leaf1-eth3) "
                        "into <point>.pcapng in each run folder, from before the job starts "
                        "until it ended (Wireshark's dumpcap; tcpdump if it is missing)")
    _formats(r)
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a spec value, e.g. --set symphony.k=0.001 (repeatable)")
    r.add_argument("--backend", choices=("emulation", "sim", "fluid"), default="emulation",
                   help="emulation (default, root: the real data path), sim: the same "
                        "protocol code on a virtual clock (no root, seconds; emulator.sim) "
                        "or fluid: the flow-level model (its schemes; as `predict`)")
    r.add_argument("--repeat", type=_positive_int, default=1, metavar="K",
                   help="run each seed K times (the emulation's own timing; the sim: K draws "
                        "of the hosts' timing) and print how much one seed varies against how "
                        "much seeds do: the noise floor (comparisons read each seed's first run)")
    r.add_argument("--until-decided", action="store_true",
                   help="add seeds in batches until the primary metric (run.primary) of each "
                        "scheme against the baseline is decided at 95 %% over all looks, or "
                        "--max-seeds")
    r.add_argument("--max-seeds", type=_positive_int, default=30,
                   help="with --until-decided: the most seeds (default 30)")
    r.add_argument("--batch", type=_positive_int, default=5,
                   help="with --until-decided: seeds per look (default 5)")
    r.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                   help="with --backend sim: runs at once, each in its own process "
                        "(default: this machine's CPUs)")
    _dask(r)
    r.add_argument("--paths", metavar="RUNSET",
                   help="with --backend sim: each run follows the paths the emulated run of "
                        "its seed in RUNSET (a `run --out` folder) recorded: its twin")
    _emulating(r)
    r.set_defaults(func=run["run"], needs_root=False)      # emulation checks it itself
    sw = sub.add_parser("sweep", help="run a spec over its [[variants]] and/or --param grids, "
                                      "resumable, into one table")
    sw.add_argument("spec")
    sw.add_argument("--param", action="append", metavar="KEY=V1,V2,...",
                    help="sweep a value, e.g. --param symphony.k=0.001,0.01 (repeatable: grid)")
    sw.add_argument("--out", help="output folder; an existing one is resumed")
    sw.add_argument("--seeds", type=_positive_int, help="seeds 1..N instead of the spec's")
    sw.add_argument("--scheme", action="append", metavar="S",
                    help=SCHEME_HELP + "; with --backend fluid the model's: baseline, "
                         "ideal-priority, pq")
    sw.add_argument("--variant", action="append",
                    help="only these of the spec's [[variants]] (repeatable)")
    sw.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a spec value for every point (repeatable)")
    sw.add_argument("--backend", choices=("emulation", "sim", "fluid"), default="emulation",
                    help="emulation (default, root); sim: the same protocol code on a "
                         "virtual clock (no root); fluid: the flow-level model, schemes "
                         "baseline, ideal-priority, pq (no root, seconds)")
    sw.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                    help="with --backend sim: runs at once, each in its own process "
                         "(default: this machine's CPUs)")
    _dask(sw)
    sw.add_argument("--no-plots", action="store_true", help="tables only")
    _emulating(sw)
    sw.set_defaults(func=run["sweep"], needs_root=False)       # emulation checks it itself
    rp = sub.add_parser("reproduce", help="the paper's figures on the model, the simulation "
                                          "and the emulation into docs/data/figures/, "
                                          "resumable; --page makes docs/results.md from them")
    rp.add_argument("figures", nargs="*", metavar="FIG",
                    help="specs in runs/ with [[paper]] tables (default: all of them)")
    rp.add_argument("--backend", action="append", choices=("fluid", "sim", "emulation"),
                    help="only these (repeatable; default all three: emulation needs root "
                         "and takes ~20-60 s a run)")
    rp.add_argument("--seeds", type=_positive_int,
                    help="seeds per backend instead of the defaults (model 200, simulation 20 "
                         "and 50 for fig4/fig5, emulation 3 and 5 for fig4/fig5/table1-paper)")
    rp.add_argument("--out", help="run folders; an existing one is resumed")
    rp.add_argument("--data", help="where the CSVs go (default docs/data/figures)")
    rp.add_argument("--jobs", type=_positive_int, default=os.cpu_count() or 1,
                    help="simulated runs at once (default: this machine's CPUs)")
    rp.add_argument("--page", action="store_true",
                    help="write the page from the CSVs only (no run); refused for a --data "
                         "folder with no rows, and for a page that would show fewer seeds of "
                         "a figure on a backend than the one it replaces (--force)")
    rp.add_argument("--force", action="store_true",
                    help="with --page: replace the page even if the new one shows less")
    rp.add_argument("--to", help="with --page: the file (default docs/results.md; its plots "
                    "go to results/ beside it)")
    rp.set_defaults(func=run["reproduce"], needs_root=False)   # emulation checks it itself
    c = sub.add_parser("cli", help="open Mininet's CLI on a spec's fabric, with commands to "
                                   "start jobs, switch Symphony, perturb, read stats, plot")
    c.add_argument("spec")
    c.add_argument("--scheme", action="append", metavar="S",
                   help=f"switch behaviour: {', '.join(SCHEMES)} (default symphony); one: "
                        "the CLI runs one fabric (`run` takes several)")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--out", help="output folder (default runs/out/<time>-<name>-cli)")
    c.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a spec value (repeatable)")
    c.add_argument("--script", help="run the CLI commands in this file, then exit")
    _emulating(c)
    c.set_defaults(func=run["cli"], needs_root=True)
    pr = sub.add_parser("predict", help="run a spec in the flow-level model (max-min fluid "
                                        "flows on the same plan; no root, seconds)")
    pr.add_argument("spec")
    pr.add_argument("--out", help="output folder (default runs/out/<time>-<name>-predict)")
    pr.add_argument("--seeds", type=_positive_int, help="seeds 1..N instead of the spec's")
    pr.add_argument("--scheme", action="append", metavar="S",
                    help="run this scheme of the model's: baseline (max-min), ideal-priority, "
                         "pq; repeatable, each named one runs (default all three)")
    pr.add_argument("--tracking", default="job", choices=("job", "ring"),
                    help="ideal-priority's lowest step per job (default) or per ring, "
                         "as [symphony] tracking")
    pr.add_argument("--variant", help="one of the spec's [[variants]] (its overrides)")
    pr.add_argument("--no-plots", action="store_true", help="tables and summary.json only")
    _formats(pr)
    pr.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override a spec value (repeatable)")
    pr.set_defaults(func=run["predict"], needs_root=False)
    cl = sub.add_parser("clean", help="remove what a killed run left on this machine "
                                      "(processes, namespaces), from its ledger")
    cl.add_argument("dir", nargs="?", help="a run folder, or an output folder holding run "
                                           "folders (default: every killed run in runs/out)")
    cl.add_argument("--force", action="store_true",
                    help="clean even a run whose runner still lives")
    cl.set_defaults(func=run["clean"], needs_root=True)
    rp = sub.add_parser(
        "report", help="recompute metrics and plots from a run folder",
        description="Reads the raw records of every run in DIR (manifest.json, "
                    "measurements.json, the hosts' and switches' .jsonl) and writes anew what "
                    "is derived from them: summary.json, the index.html pages, the plots, each "
                    "run's flows/steps/ports/collectives.csv and trace.json, "
                    "nccl-tests-<scheme>.json, and (once, kept) each emulated run's twin/. "
                    "The raw records are never changed.")
    rp.add_argument("dir")
    _formats(rp)
    rp.add_argument("--no-twin", action="store_true",
                    help="do not simulate each emulated run on its own paths (its twin, "
                         "made once and kept in <run>/twin/)")
    rp.set_defaults(func=run["report"], needs_root=False)
    up = sub.add_parser(
        "upgrade", help="bring run folders and summaries written by an older version to "
                        "this format",
        description="Finds every run folder under each DIR (twins included) and converts "
                    "those of an older run format in place: the manifest gets the compiled "
                    "run plan (the stored spec compiled again, kept only if it matches what "
                    "the folder recorded of its plan), the records their current names; "
                    "and every summary.json of an older summary format, the keys an older "
                    "report left out filled with what their absence meant. A folder or "
                    "summary that cannot be converted is named with why and left as it was. "
                    "Then `report` reads them (emulator/upgrade.py says what changes).")
    up.add_argument("dirs", nargs="+", metavar="DIR")
    up.set_defaults(func=run["upgrade"], needs_root=False)
    co = sub.add_parser(
        "core", help="the compiled core: whether this install runs it; --build compiles it",
        description="The per-packet code of hosts, switches and the simulator "
                    "(runtime/compiled.py lists it) compiled by mypyc into build/core/: "
                    "about 1.5x faster, the same results. Loaded only while its sources are "
                    "the ones compiled; after an edit everything runs from source until it "
                    "is built again (scripts/setup.sh does). SYMPHONY_PURE=1 runs from "
                    "source anyway.")
    co.add_argument("--build", action="store_true",
                    help="compile it (needs mypy and a C compiler; scripts/setup.sh "
                         "installs both) unless it is current")
    co.add_argument("--force", action="store_true", help="with --build: even if current")
    co.set_defaults(func=run["core"], needs_root=False)
    v = sub.add_parser("validate", help="check a spec without running it")
    v.add_argument("spec")
    v.add_argument("--set", action="append", metavar="KEY=VALUE")
    v.set_defaults(func=run["validate"], needs_root=False)
    return ap
