"""A spec's fabric kept up for interactive use: ``symphony-emu cli SPEC`` opens Mininet's
CLI on it, with commands to start the spec's jobs, switch Symphony, apply perturbations,
read the switches' state and plot what ran.

    symphony-emu cli runs/table1.toml [--scheme symphony] [--out DIR]
    symphony> job                     # start every job of the spec (again: a new run)
    symphony> wait                    # until it ended
    symphony> symphony set k=0.001
    symphony> perturb imbalance switch=leaf0 toward=spine0 ratio=1.3
    symphony> perturb link_down switch=leaf0 toward=spine1      # now, until `unperturb`
    symphony> stats
    symphony> plot

Everything Mininet's CLI has works too (``h0 ping h5``, ``leaf0 tc -s qdisc``, ``py``).
``LiveSession`` is the same as a Python API; the CLI commands are thin wrappers around it.
Each ``job`` writes a run folder (``<out>/run<N>``) laid out as ``symphony-emu run``'s, so
``plot`` (and ``symphony-emu report``) computes the usual metrics and figures from it.
A command's arguments are checked by ``emulator.cli.commands``; a bad one, or any error
of a command, is printed and the session goes on.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

from mininet.cli import CLI
from mininet.log import output

from emulator import plan as planning
from emulator.analysis import console, report
from emulator.cli import commands
from emulator.cli.commands import CommandError
from emulator.cli.common import fits, load_spec
from emulator.launch.fabric import LiveFabric, topology
from emulator.launch.launcher import HostProcesses
from emulator.measurements import Measurements
from emulator.perturbations.background import BACKGROUND_PORT
from emulator.perturbations.engine import Engine
from emulator.rundir import RunFolder
from emulator.spec.schema import Spec
from emulator.spec import validate
from emulator.spec.check import SpecError
from emulator.spec.jobs import passes_error
from runtime.records import decode
from switch_agent.agent import SYMPHONY_KEYS
from topologies import wiring

LIVE_BACKGROUND_PORT = 5301


class LiveSession:
    def __init__(self, spec: Spec, scheme: str = "symphony", seed: int = 1,
                 out_dir: str | None = None):
        self.spec, self.scheme, self.seed = spec, scheme, seed
        self.plan = planning.compile(spec, scheme, seed)
        self.out = out_dir or os.path.join(wiring.REPO_ROOT, "runs", "out",
                                           time.strftime("%Y%m%d-%H%M%S") + f"-{spec.name}-cli")
        os.makedirs(self.out, exist_ok=True)
        self.fab: LiveFabric | None = None
        self.engine: Engine | None = None
        self.runs: list[dict] = []             # {"group", "dir", "procs", "jobs"}

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> "LiveSession":
        fabdir = os.path.join(self.out, "fabric")
        self.fab = LiveFabric(topology(self.plan, fabdir), log_level="output")
        self.fab.start()
        self.engine = Engine(self.fab, fabdir)
        return self

    def stop(self) -> None:
        for r in self.runs:
            r["procs"].stop(5)
        if self.engine is not None:
            self.engine.close()
        if self.fab is not None:
            self.fab.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- jobs ----------------------------------------------------------------------
    def start_jobs(self, job_ids: list[int] | None = None, passes: int | None = None) -> str:
        """Start the spec's jobs (or those ids) at once; returns the new run folder."""
        spec = self.spec
        known = [j.id for j in spec.jobs]
        if job_ids:
            unknown = [j for j in job_ids if j not in known]
            if unknown:
                raise ValueError(f"unknown job id(s) {unknown}; the spec has {known}")
        jobs = [j for j in spec.jobs if not job_ids or j.id in job_ids]
        if passes is not None:
            for j in jobs:
                why = None if j.workload else passes_error(j, passes, spec.topology)
                if why:
                    raise ValueError(f"passes={passes!r} (job {j.id}): {why}")
            jobs = [replace(j, passes=passes) if j.workload is None else j for j in jobs]
        busy = {h for r in self.runs if self._running(r) for h in r["procs"].configs}
        plan = planning.compile(replace(spec, jobs=tuple(jobs)), self.scheme, self.seed)
        if set(plan.hosts) & busy:
            raise ValueError(f"hosts {sorted(set(plan.hosts) & busy)} still run an earlier "
                             "job (see `jobs`)")
        # <out>/run<N>/<scheme>-seed<S>/: one run folder, as `symphony-emu run` writes them
        group = os.path.join(self.out, f"run{len(self.runs) + 1}")
        rundir = os.path.join(group, f"{self.scheme}-seed{self.seed}")
        os.makedirs(rundir)
        RunFolder(rundir).write_manifest(plan, spec.raw, spec.path, live=True)
        procs = HostProcesses(self.fab, plan.hosts, rundir, plan.host_processes,
                              plan.pin_cpus)
        procs.start()
        try:
            procs.go()
        except RuntimeError:
            procs.stop(5)
            raise
        self.runs.append({"group": group, "dir": rundir, "procs": procs,
                          "jobs": [lay.job for lay in plan.layouts]})
        return group

    @staticmethod
    def _running(run: dict) -> bool:
        return run["procs"].running

    def progress(self, run: dict) -> tuple[int, int]:
        """(steps applied, steps in all) of a run, from its ranks' progress lines."""
        run["procs"].poll()
        return run["procs"].progress

    def wait(self, timeout_s: float = 600) -> bool:
        """Wait for every started job; True if all ended in time."""
        deadline = time.monotonic() + timeout_s
        return all(r["procs"].wait(deadline, step_s=0.1) for r in self.runs)

    def finish(self, run: dict) -> dict:
        """Measurements of an ended run (so ``report`` can judge it), then its summary."""
        folder = RunFolder(run["dir"])
        if not folder.done:
            procs = run["procs"]
            procs.poll()
            host_exit = procs.stop(5)          # it reads the processes' last lines too
            folder.write_measurements(Measurements(
                t_start=procs.t_start, host_exit=host_exit,
                rank_summaries={h: decode(s) for h, s in procs.summaries.items()}))
        return report.summarize(run["group"])

    # --- the switches --------------------------------------------------------------
    def symphony(self, enabled: bool | None = None, **params) -> dict:
        unknown = set(params) - set(SYMPHONY_KEYS)
        if unknown:
            raise ValueError(f"unknown Symphony parameter(s) {sorted(unknown)}; "
                             f"allowed: {', '.join(SYMPHONY_KEYS)}")
        cmd = {"cmd": "symphony", **params}
        if enabled is not None:
            cmd["enabled"] = enabled
        return self.fab.agents(cmd)

    def stats(self) -> dict:
        """Per switch: marks by cause, per-job (step_min, alpha), per-port queue."""
        out = {}
        for name, s in self.fab.agents({"cmd": "stats"}).items():
            c = s["counters"]["total"]
            out[name] = {"symphony": s["symphony"]["enabled"],
                         "marks_red": c.get("marks_red", 0),
                         "marks_symphony": c.get("marks_symphony", 0),
                         "marks_both": c.get("marks_both", 0),
                         "jobs": {j: {"step_min": v["step_min"], "alpha": v["alpha"]}
                                  for j, v in s["jobs"].items()},
                         "queues": {p: round(q) for p, q in s["queues"].items()}}
        return out

    def perturb(self, kind: str, **kv) -> str:
        """Apply a perturbation now; keys as in [[perturbations]] (validated the same
        way, applied by the same objects as a spec's). Returns its description;
        ``unperturb`` undoes the last one (or all)."""
        entry, open_ended = commands.live_perturbation(kind, kv)
        raw = dict(self.spec.raw, perturbations=[entry])
        try:
            (p,) = validate(raw, self.spec.path).perturbations
        except SpecError as e:
            raise ValueError(str(e).replace("perturbations[0].", "")) from None
        obj = planning.perturbation(self.spec, p, self.plan.link_rate_bps,
                                    LIVE_BACKGROUND_PORT - BACKGROUND_PORT
                                    + len(self.engine.log))
        if open_ended:
            obj.nbytes = None                      # until undone
        return self.engine.apply_now(obj)

    def unperturb(self, everything: bool = False) -> list[str]:
        return self.engine.undo_last(everything)


class SymphonyCLI(CLI):
    """Mininet's CLI plus the emulator's commands (``help <command>`` describes each)."""

    prompt = "symphony> "

    def __init__(self, session: LiveSession, **kwargs):
        self.session = session
        super().__init__(session.fab.net, **kwargs)

    def _guard(self, fn, line):
        """Run a command; whatever goes wrong is one line and the session goes on."""
        try:
            fn(line.split())
        except (ValueError, RuntimeError, KeyError, OSError) as e:   # CommandError, SpecError
            output(f"*** {e}\n")
        except Exception as e:                   # a bug, but not the end of the session
            output(f"*** {type(e).__name__}: {e}\n")

    def do_job(self, line):
        """job [ID ...] [passes=N]: start the spec's jobs (all, or these ids) in 1 s,
        into a new run folder; `jobs` shows their progress, `plot` their figures."""
        def run(words):
            ids, passes = commands.job_args(words, [j.id for j in self.session.spec.jobs])
            d = self.session.start_jobs(ids or None, passes)
            output(f"started job(s) {self.session.runs[-1]['jobs']} -> {d}\n")
        self._guard(run, line)

    def do_jobs(self, line):
        """jobs: the runs started here, their progress, and whether every result was right."""
        def run(words):
            for i, r in enumerate(self.session.runs, 1):
                done, total = self.session.progress(r)
                state = "running" if self.session._running(r) else "ended"
                output(f"run{i}: jobs {r['jobs']}, {state}, steps {done}/{total}, "
                       f"{r['group']}\n")
            if not self.session.runs:
                output("no jobs started yet (`job`)\n")
        self._guard(run, line)

    def do_wait(self, line):
        """wait [SECONDS]: until every job started here has ended (default: the spec's
        run timeout)."""
        def run(words):
            t = commands.wait_seconds(words, self.session.spec.run.timeout_s)
            ok = self.session.wait(t)
            output("all jobs ended\n" if ok else f"still running after {t:g} s\n")
        self._guard(run, line)

    def do_symphony(self, line):
        """symphony on|off|set k=... tau=... t_win_s=... n_warmup=... n_sample=...:
        switch Symphony on every switch, or change its parameters (t_win_s emulated)."""
        def run(words):
            if not words or words[0] not in ("on", "off", "set"):
                raise CommandError("usage: symphony on|off|set key=value ...")
            kv = commands.parse_kv(words[1:])
            enabled = {"on": True, "off": False}.get(words[0])
            replies = self.session.symphony(enabled, **kv)
            output(f"{len(replies)} switches: " + json.dumps(next(iter(replies.values()))) + "\n")
        self._guard(run, line)

    def do_perturb(self, line):
        """perturb KIND key=value ...: apply a perturbation now, until `unperturb`; keys
        as in the spec's [[perturbations]] (real-scale units), without its times:
          perturb imbalance switch=leaf0 toward=spine0 ratio=1.3
          perturb link_down switch=leaf0 toward=spine1
          perturb loss switch=spine0 fraction=0.01
          perturb background src=h0 dst=h5 rate_gbps=2
        `unperturb` undoes the last one, `unperturb all` every one."""
        def run(words):
            kind, kv = commands.perturb_words(words)
            output(f"applied: {self.session.perturb(kind, **kv)}\n")
        self._guard(run, line)

    def do_unperturb(self, line):
        """unperturb [all]: undo the last perturbation (or all of them)."""
        def run(words):
            undone = self.session.unperturb(commands.unperturb_all(words))
            output("".join(f"undone: {w}\n" for w in undone) or "nothing to undo\n")
        self._guard(run, line)

    def do_stats(self, line):
        """stats: per switch, Symphony on/off, marks by cause (RED, Symphony, both), each
        job's step_min and alpha, and every port's modelled queue (bytes)."""
        def run(words):
            for name, s in self.session.stats().items():
                jobs = ", ".join(f"job {j}: step_min {v['step_min']} alpha {v['alpha']:.3f}"
                                 for j, v in s["jobs"].items()) or "no jobs seen"
                queues = " ".join(f"{p}={q}" for p, q in s["queues"].items() if q) or "empty"
                output(f"{name}: symphony {'on' if s['symphony'] else 'off'}, marks red "
                       f"{s['marks_red']} symphony {s['marks_symphony']} both "
                       f"{s['marks_both']}; {jobs}; queues {queues}\n")
        self._guard(run, line)

    def do_plot(self, line):
        """plot [N]: metrics and figures of run N (default: the last), once it ended."""
        def run(words):
            i = commands.run_number(words, len(self.session.runs))
            r = self.session.runs[i - 1]
            if self.session._running(r):
                raise CommandError(f"run{i} is still running (`jobs`)")
            summary = self.session.finish(r)
            console.print_tables(summary, self.session.spec.scale.dilation)
            for p in summary.plots:
                output(f"plot: {p}\n")
        self._guard(run, line)


def run_cli(spec: Spec, scheme: str, seed: int, out: str | None,
            script: str | None = None) -> int:
    with LiveSession(spec, scheme, seed, out) as s:
        output(f"*** {spec.name}: {len(spec.topology.host_names)} hosts, scheme {scheme}; "
               f"extra commands: job, jobs, wait, symphony, perturb, unperturb, stats, plot "
               f"(help <command>); runs go to {s.out}\n")
        SymphonyCLI(s, script=script)
        running = [r for r in s.runs if s._running(r)]
        if running:
            output(f"*** stopping {len(running)} run(s) still going\n")
    return 0


def cmd_cli(args) -> int:
    from emulator.spec.schema import SCHEME_NAMES
    # --scheme is repeatable in every command; the CLI's fabric switches by one scheme at a
    # time, so a second one is refused, never silently dropped
    if len(args.scheme or []) > 1:
        print(f"symphony-emu cli: --scheme given {len(args.scheme)} times "
              f"({', '.join(args.scheme)}): the CLI runs one fabric under one scheme; give "
              "one (`symphony-emu run` runs several)", file=sys.stderr)
        return 2
    args.scheme = (args.scheme or ["symphony"])[0]
    if args.scheme not in SCHEME_NAMES:
        print(f"symphony-emu cli: --scheme {args.scheme!r}: allowed: {', '.join(SCHEME_NAMES)}",
              file=sys.stderr)
        return 2
    spec = load_spec(args)
    if spec is None:
        return 2
    if spec.messages:
        print(f"symphony-emu cli: {args.spec}: the CLI runs [[jobs]] specs; this one has "
              "[[messages]]", file=sys.stderr)
        return 2
    if args.script and not os.path.isfile(args.script):
        print(f"symphony-emu cli: --script {args.script}: no such file", file=sys.stderr)
        return 2
    if not fits("cli", spec, args.scheme, args.seed, args.force_size):
        return 2
    return run_cli(spec, args.scheme, args.seed, args.out, args.script)
