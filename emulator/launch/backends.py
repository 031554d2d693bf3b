"""The three backends behind one interface, so that ``run``, ``sweep`` and ``reproduce``
name a backend and never branch on which it is (docs/architecture.md §1):

* :class:`Emulation`: the fabric (Mininet, kernel ECMP, agents on NFQUEUE), root, one run
  at a time (``emulator.launch.runner``);
* :class:`Simulation`: the same protocol code on a virtual clock, runs side by side in
  processes or on a Dask cluster (``emulator.sim``);
* :class:`Model`: the flow-level model (``emulator.launch.predict``).

A backend says which schemes it runs, whether it needs root, which of the run options it
takes (an option given to a backend that does not take it is refused in one line, naming
the backends that do), checks a spec before anything is written, and runs a list of
:class:`Task` into their run folders. Every run folder, whatever wrote it, is read by
``emulator.analysis.report`` alike. Emulation-only code (Mininet, pyroute2) is imported
only when an emulation is checked or run, so this module imports on any machine.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from emulator.spec.schema import SCHEME_NAMES, Spec


class BackendError(ValueError):
    """What a backend cannot do; the message names it and why, one line."""


@dataclass(frozen=True)
class Task:
    """One run: its name (as printed), what it runs and where its folder goes."""
    name: str
    spec: Spec
    scheme: str
    seed: int
    rundir: str
    repeat: int = 1


@dataclass(frozen=True)
class Options:
    """The run options a command was given; each backend takes some of them
    (:attr:`Backend.takes`)."""
    pcap: list[str] = field(default_factory=list)    # --pcap: capture points
    servers: str | None = None                       # --servers: real servers
    paths: str | None = None                         # --paths: follow an emulated run set's
    dask: str | None = None                          # --dask: a Dask scheduler
    force_size: bool = False                         # --force-size: skip the size guard
    jobs: int = 1                                    # --jobs: runs at once

    def given(self) -> list[str]:
        """The options set away from their defaults, as the command line names them."""
        return [name for name, on in (("pcap", self.pcap), ("servers", self.servers),
                                      ("paths", self.paths), ("dask", self.dask))
                if on]


class Backend:
    name: str = ""
    schemes: tuple[str, ...] = SCHEME_NAMES
    needs_root: bool = False
    takes: frozenset[str] = frozenset()          # which of Options.given() it accepts

    def refusal(self, opts: Options) -> str | None:
        """One line if ``opts`` holds an option this backend does not take."""
        for name in opts.given():
            if name not in self.takes:
                others = [b.name for b in BACKENDS.values() if name in b.takes]
                return (f"--{name} is for --backend {' or '.join(others)}; "
                        f"--backend {self.name} {WHY_NOT[name]}")
        if self.needs_root and os.geteuid() != 0:
            return (f"--backend {self.name} needs root (network namespaces, iptables); "
                    f"--backend {' and '.join(b.name for b in BACKENDS.values() if not b.needs_root)} do not")
        return None

    def default_schemes(self, spec: Spec) -> tuple[str, ...]:
        """The schemes run when the command names none."""
        return tuple(spec.run.schemes)

    def check(self, spec: Spec, scheme: str, seed: int, opts: Options,
              label: str = "") -> None:
        """Raise :class:`BackendError` if this backend cannot run ``spec`` here (before
        anything is written)."""

    def describe(self, spec: Spec) -> str:
        """How runs of ``spec`` are made, one line for the console."""
        return self.name

    def verification(self, spec: Spec) -> str | None:
        """One line for the console where the ranks of ``spec``'s runs verify their
        results by checksums (``emulator.plan.memory``); None on real buffers, the
        default."""
        from emulator import plan as planning
        return planning.verification(spec).line()

    def run(self, tasks: list[Task], opts: Options, progress=None) -> None:
        """Every task into its run folder, each said as it ends."""
        raise NotImplementedError


WHY_NOT = {"pcap": "has no packets to capture",
           "servers": "has no servers to use",
           "paths": "draws its own paths",
           "dask": "keeps one run at a time"}


class Emulation(Backend):
    name = "emulation"
    needs_root = True
    takes = frozenset({"pcap", "servers"})

    def check(self, spec, scheme, seed, opts, label=""):
        # the fabric's imports (Mininet, pyroute2) first: without them the command ends
        # in one line (emulator.cli) before anything is written
        from emulator.launch import runner  # noqa: F401
        from emulator.launch import capacity, capture
        from topologies.wiring import switch_names
        try:
            capture.check_points(capture.parse_points(opts.pcap), spec.topology.host_names,
                                 switch_names(spec.topology))
            if opts.pcap:
                capture.tool()
        except capture.CaptureError as e:
            raise BackendError(str(e)) from None
        machine = _with_servers(spec, label)
        if opts.force_size:
            return
        why = capacity.check(spec, scheme, seed, machine)
        if why:
            raise BackendError("; ".join(
                f"{spec.path}{label}: too large for this machine: {w}" for w in why)
                + "; --backend sim simulates it in virtual time, --force-size emulates it "
                "anyway")

    def describe(self, spec):
        """D, and the processes that serve the hosts and switches (architecture §3.4,
        §5.1)."""
        from emulator.launch.capacity import default_processes
        from topologies.wiring import switch_names
        hosts, switches = len(spec.topology.host_names), len(switch_names(spec.topology))
        sc = spec.scale
        hp = min(hosts, sc.host_processes or default_processes(hosts))
        ap = min(switches, sc.agent_processes or default_processes(switches))
        return (f"D = {sc.dilation:g}; {hosts} hosts in {hp} process(es), {switches} switch "
                f"agents in {ap}{', each process on one CPU' if sc.pin_cpus else ''}")

    def run(self, tasks, opts, progress=None):
        from emulator.launch import capture, runner     # the fabric: Mininet, root
        pcap = capture.parse_points(opts.pcap)
        for t in tasks:
            print(f"{t.name}: running", flush=True)
            runner.run_one(t.spec, t.scheme, t.seed, t.rundir,
                           progress(t.name) if progress else None, pcap=pcap,
                           repeat=t.repeat)
            if sys.stdout.isatty():
                print()


def _with_servers(spec: Spec, label: str):
    """This machine with the spec's real servers (each reached and checked first), or
    None when the spec names none."""
    t = spec.topology
    if not t.server_targets:
        return None
    from cluster import servers
    from emulator.launch import capacity
    try:
        facts, new = servers.checked(t.server_targets, t.ssh_config, t.underlay)
    except (servers.PreflightError, ConnectionError, RuntimeError) as e:
        raise BackendError(f"{spec.path}{label}: the servers are not ready:\n{e}") from None
    for i, f in enumerate(facts if new else []):
        print(f.describe(i))
    return capacity.with_servers(capacity.this_machine(), facts, t.underlay_gbps * 1e9)


class Simulation(Backend):
    name = "sim"
    takes = frozenset({"paths", "dask"})

    def check(self, spec, scheme, seed, opts, label=""):
        from emulator import plan as planning
        from emulator.sim.run import SimError, check
        try:
            check(spec.path, planning.compile(spec, scheme, seed))
            if opts.paths:
                self._paths(opts.paths, spec, scheme, seed)
            if opts.dask:
                from emulator.sim.pool import reach
                reach(opts.dask)
        except SimError as e:
            raise BackendError(f"{label.strip(' ()') + ': ' if label else ''}{e}") from None

    def describe(self, spec):
        return "simulated (virtual time)"

    def run(self, tasks, opts, progress=None):
        from emulator.sim.pool import run_many
        from emulator.sim.run import SimError
        try:
            run_many([(t.name, t.spec, t.scheme, t.seed, t.rundir,
                       self._paths(opts.paths, t.spec, t.scheme, t.seed) if opts.paths
                       else None, t.repeat) for t in tasks], opts.jobs, opts.dask)
        except SimError as e:                  # e.g. the Dask scheduler went away
            raise BackendError(str(e)) from None

    @staticmethod
    def _paths(run_set: str, spec: Spec, scheme: str, seed: int) -> dict:
        from emulator.analysis.split import twin_paths
        return twin_paths(run_set, spec, scheme, seed)


class Model(Backend):
    name = "fluid"
    takes = frozenset()

    @property
    def schemes(self):
        from emulator.model.simulate import MODEL_SCHEMES
        return tuple(MODEL_SCHEMES)

    def default_schemes(self, spec):
        return self.schemes                    # all of the model's: it costs seconds

    def describe(self, spec):
        return "the flow-level model"

    def verification(self, spec):
        return None                    # fluid flows carry no bytes to verify

    def run(self, tasks, opts, progress=None):
        from emulator.launch import predict
        for t in tasks:
            predict.predict_one(t.spec, t.scheme, t.seed, t.rundir)


BACKENDS: dict[str, Backend] = {b.name: b for b in (Model(), Simulation(), Emulation())}
