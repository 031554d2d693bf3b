"""``symphony-emu predict``: a spec's runs in the flow-level model instead of the emulator.

For each model scheme (``baseline``: max-min, what ideal congestion control gives;
``ideal-priority``: the job's lowest active step first on every link, the bound of a
perfect step-aware switch; ``pq``: the two classes a strict-priority port serves) and
seed, the spec is compiled into the same run plan ``run`` uses, the plan becomes the
model's inputs (``emulator.model.from_plan``), and the result is written as a run folder
(``manifest.json``, ``measurements.json`` with ``"backend": "fluid"``, the flow and
collective records in ``fluid.jsonl``), so ``emulator.analysis.report`` — the
nccl-tests-style table, ``summary.json``, the CDF plots — reads it unchanged. Seconds to
minutes for what the emulator needs hours for: the paper's own scale.
"""

from __future__ import annotations

import os
import time

from emulator import plan as planning
from emulator.measurements import Measurements
from emulator.model import simulate
from emulator.model.from_plan import model_inputs
from emulator.model.simulate import MODEL_SCHEMES, TRACKING
from emulator.rundir import FLUID_RECORDS, RunFolder
from emulator.spec.schema import Spec
from runtime.telemetry import Telemetry

PLAN_SCHEME = "baseline"     # the plan's agent settings do not enter the model


def predict_one(spec: Spec, scheme: str, seed: int, rundir: str | None = None,
                tracking: str = "job"):
    """One (model scheme, seed) run; with ``rundir``, also its run folder. Returns the
    ``ModelResult`` and the inputs it ran on."""
    plan = planning.compile(spec, PLAN_SCHEME, seed)
    inp = model_inputs(plan)
    t0 = time.perf_counter()
    res = simulate(inp.fabric, inp.jobs, scheme=scheme, rng=seed, mtu_bytes=inp.mtu_bytes,
                   background=inp.background, link_events=inp.link_events,
                   per_step_sport=inp.per_step_sport, tracking=tracking,
                   messages=inp.messages,
                   post_delay_s=inp.post_delay_s, path_seed=plan.fabric.path_seed)
    wall = time.perf_counter() - t0
    if rundir is not None:
        write_run(RunFolder(rundir), plan, spec, scheme, res, inp, wall, tracking)
    return res, inp


def write_run(folder: RunFolder, plan, spec: Spec, scheme: str, res, inp, wall_s: float,
              tracking: str) -> None:
    folder.write_manifest(plan, spec.raw, spec.path, scheme=scheme, backend="fluid",
                          model={"tracking": tracking})
    if os.path.exists(folder.file(FLUID_RECORDS)):
        os.remove(folder.file(FLUID_RECORDS))        # a run again: its records anew
    tele = Telemetry(folder.file(FLUID_RECORDS))
    for rec in res.records():
        tele.write(rec)
    tele.close()
    folder.write_measurements(Measurements(
        backend="fluid", t_start=0.0, unfinished_flows=[list(k) for k in res.unfinished],
        not_modelled=list(inp.not_modelled), wall_s=wall_s, model_stats=res.stats))


def run_predict(spec: Spec, out: str, schemes: list[str], seeds: list[int],
                tracking: str = "job", progress=None) -> None:
    """Every (scheme, seed) into ``out/<scheme>-seed<N>/``."""
    for s in schemes:
        if s not in MODEL_SCHEMES:
            raise ValueError(f"--scheme {s!r}: the model's schemes are "
                             f"{', '.join(MODEL_SCHEMES)}")
    if tracking not in TRACKING:
        raise ValueError(f"--tracking {tracking!r}: allowed: {', '.join(TRACKING)}")
    os.makedirs(out, exist_ok=True)
    total, done = len(schemes) * len(seeds), 0
    t0 = time.monotonic()
    for scheme in schemes:
        for seed in seeds:
            predict_one(spec, scheme, seed, os.path.join(out, f"{scheme}-seed{seed}"),
                        tracking)
            done += 1
            if progress is not None:
                progress(done, total, time.monotonic() - t0)
