"""A run folder: the one writer of its manifest and measurements, the one reader of
everything in it. Report, plots, sweep and the live CLI go through :class:`RunFolder`.

    <run>/                       one (scheme, seed) run
        manifest.json            what ran: the run format's version, the spec as written,
                                 the compiled run plan, versions, git revision
        measurements.json        what the run measured beyond its records (CPU load,
                                 agents' counters and fidelity, host summaries,
                                 perturbation log): ``emulator.measurements.Measurements``
        h*.jsonl                 host telemetry (flows, collectives, summaries)
        fluid.jsonl              a model run's (symphony-emu predict): the same records
        leaf*/spine*/core*.jsonl agent telemetry
        *.host.json, *.agent.json, *.host.out, *.log   configs, protocol lines, logs

Telemetry files are written by ``runtime.telemetry`` in the processes; this module never
writes them. Their records are ``runtime.records``' types; the manifest's ``format`` is
that module's ``FORMAT``, and a folder of an older format is refused, naming the command
that upgrades it (``emulator.upgrade``), never read through a compatibility branch.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass

from emulator.measurements import Measurements
from emulator.plan import RunPlan
from runtime.codec import Codec
from runtime.records import FORMAT, FlowReceived, FlowSent
from runtime.telemetry import read_records
from topologies import wiring

MANIFEST = "manifest.json"
MEASUREMENTS = "measurements.json"
FLUID_RECORDS = "fluid.jsonl"     # a model run's flow and collective records, in one file


class DamagedRun(ValueError):
    """A run folder's file that cannot be read (truncated, not JSON): named, never skipped."""


class OlderRun(ValueError):
    """A run folder written in an older run format: upgrade it first."""


@dataclass(frozen=True)
class Manifest(Codec):
    """``manifest.json``: what ran (:meth:`RunFolder.write_manifest`); a field only some
    runs have has a default, and its comment names them."""
    format: int                     # runtime.records.FORMAT
    spec_path: str | None
    spec: dict                      # the spec as written (free-form: its TOML)
    name: str
    scheme: str                     # a model run's: the model's (its plan's: baseline)
    seed: int
    plan: dict                      # the compiled plan (RunFolder.plan reads it)
    versions: dict                  # python, kernel, numpy... (informational)
    git_revision: str
    started: str
    machine: dict                   # {cpus, node}
    backend: str = "emulation"      # or sim, fluid (emulator.sim, emulator.launch.predict)
    repeat: int = 1                 # emulation, sim: the how-manieth run of its seed
    live: bool = False              # the live CLI's run
    sim: dict | None = None         # sim: {paths_given}
    model: dict | None = None       # fluid: {tracking}
    upgraded: dict | None = None    # emulator.upgrade: from which format, and how


class RunFolder:
    def __init__(self, path: str):
        self.path = path
        self._plan = None
        self._hosts_checked = False

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    # --- writing -------------------------------------------------------------------
    def write_manifest(self, plan, spec_raw: dict, spec_path: str | None, **extra) -> None:
        """What ran: the spec as written (``spec_raw``, from ``spec_path``), the compiled
        plan, versions."""
        os.makedirs(self.path, exist_ok=True)
        manifest = {"format": FORMAT, "spec_path": spec_path, "spec": spec_raw,
                    "name": plan.name, "scheme": plan.scheme.name, "seed": plan.seed,
                    "plan": plan.to_dict(),
                    "versions": _versions(), "git_revision": git_revision(),
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "machine": {"cpus": os.cpu_count(), "node": platform.node()}, **extra}
        Manifest.from_dict(manifest)        # an extra no reader knows: refused here
        self._write(MANIFEST, manifest)

    def write_measurements(self, meas: Measurements) -> None:
        self._write(MEASUREMENTS, meas.to_dict())

    def _write(self, name: str, data: dict) -> None:
        tmp = self.file(name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, self.file(name))      # never a half-written file

    # --- reading -------------------------------------------------------------------
    @property
    def is_run(self) -> bool:
        return os.path.exists(self.file(MANIFEST))

    @property
    def done(self) -> bool:
        return os.path.exists(self.file(MEASUREMENTS))

    @property
    def manifest(self) -> Manifest:
        man = self._load(MANIFEST)
        version = man.get("format", 1)     # format 1 had none
        if version != FORMAT:
            raise OlderRun(f"{self.path}: a run folder of format {version} "
                           f"(this version reads {FORMAT}); upgrade it: symphony-emu upgrade "
                           f"{os.path.dirname(self.path.rstrip('/')) or '.'}")
        try:
            return Manifest.from_dict(man)
        except (ValueError, TypeError) as e:      # a key unknown, one missing
            raise DamagedRun(f"{self.file(MANIFEST)}: not this run format's manifest ({e})"
                             "; run it again or remove the run's folder") from None

    @property
    def plan(self) -> RunPlan:
        """The run plan the run ran (``emulator.plan.RunPlan``), as its manifest stores it."""
        if self._plan is None:
            self._plan = RunPlan.from_dict(self.manifest.plan)
        return self._plan

    @property
    def measurements(self) -> Measurements:
        """What the run measured; empty (``Measurements()``) for a run not done."""
        if not self.done:
            return Measurements()
        data = self._load(MEASUREMENTS)
        try:
            return Measurements.from_dict(data)
        except (ValueError, TypeError) as e:      # a key unknown, one missing
            raise DamagedRun(f"{self.file(MEASUREMENTS)}: not this run format's "
                             f"measurements ({e}); run it again or remove the run's "
                             "folder") from None

    def _load(self, name: str) -> dict:
        try:
            with open(self.file(name)) as f:
                return json.load(f)
        except json.JSONDecodeError as e:
            raise DamagedRun(f"{self.file(name)}: damaged, not JSON ({e.msg} at byte {e.pos} "
                             f"of {os.path.getsize(self.file(name))}); run it again or remove "
                             "the run's folder") from None

    def host_records(self, kind: type) -> list:
        """Every host's records of one type (``runtime.records``: ``FlowSent``,
        ``CollectiveDone``...)."""
        if os.path.exists(self.file(FLUID_RECORDS)):
            return read_records(self.file(FLUID_RECORDS), kind)
        self._check_host_files()
        out = []
        for name in sorted(os.listdir(self.path)):
            if name.startswith("h") and name.endswith(".jsonl"):
                out += read_records(self.file(name), kind)
        return out

    def _check_host_files(self) -> None:
        """Raise :class:`DamagedRun` if a host's telemetry file holds other than the lines
        its host said it wrote (``HostEnd.records``; a run of an older revision says
        nothing), or its last line is cut: records lost are never read as a run that did
        less."""
        if self._hosts_checked:
            return
        for name, summ in self.measurements.rank_summaries.items():
            if summ.records is None:
                continue
            path = self.file(f"{name}.jsonl")
            lines, whole = 0, True
            if os.path.exists(path):
                with open(path, "rb") as f:
                    for line in f:
                        lines += 1
                        whole = line.endswith(b"\n")
            if lines != summ.records or not whole:
                raise DamagedRun(f"{path}: damaged, {lines} of the {summ.records} records its "
                                 f"host wrote{'' if whole else ', the last one cut'}; run it "
                                 "again or remove the run's folder")
        self._hosts_checked = True

    def agent_records(self, switch: str, kind: type | None = None) -> list:
        path = self.file(f"{switch}.jsonl")
        return read_records(path, kind) if os.path.exists(path) else []

    def flows(self) -> list:
        """Every flow both ends logged (``emulator.analysis.metrics.join_flows``)."""
        from emulator.analysis.metrics import join_flows
        return join_flows(self.host_records(FlowSent), self.host_records(FlowReceived))


def run_folders(out_dir: str) -> list[RunFolder]:
    """The run folders (with a manifest) directly inside ``out_dir``, in name order."""
    return [RunFolder(os.path.join(out_dir, d)) for d in sorted(os.listdir(out_dir))
            if os.path.exists(os.path.join(out_dir, d, MANIFEST))]


def git_revision() -> str:
    try:
        return subprocess.run(["git", "-C", wiring.REPO_ROOT, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _versions() -> dict:
    out = {"python": platform.python_version(), "kernel": platform.release()}
    for mod in ("numpy", "scapy", "matplotlib"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:           # noqa: BLE001 - a version is informational only
            out[mod] = None
    try:
        import mininet.net
        out["mininet"] = getattr(mininet.net, "VERSION", None)
    except ImportError:
        out["mininet"] = None
    return out
