"""When a spec's events fall in its run: the warnings of a valid spec that cannot do what
it says (:func:`warnings`, printed by the command line). Here, beside the plan, because
judging them needs the job layouts and their lockstep bound; the spec stays below the plan.

Every time of a spec is at real scale; the run stops at ``run.timeout_s`` of wall clock,
which is emulated time (docs/architecture.md §7). So an event at or after
``timeout_s / D`` (real scale) never happens: a job that would start then, a message
sent then, a perturbation that would fire then. Jobs whose perfect-lockstep time
(``emulator.plan.layout.theoretical_cct_s``: every step at link rate, nothing else) ends
after the timeout cannot finish. And a perturbation later than ``LOCKSTEP_SLACK`` times
the jobs' lockstep end most likely fires when every job has ended. Pure: reads the spec.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from emulator.perturbations import KINDS
from emulator.plan import layout as lay_mod, step_delays
from runtime.scale import Scale

if TYPE_CHECKING:
    from emulator.spec.schema import Spec

# The slowest runs measured took 5.6x their lockstep bound (journal@827c2ab, 1 MB
# chunks); twice that is where a perturbation is "after the jobs' end".
LOCKSTEP_SLACK = 10.0


def warnings(spec: Spec) -> list[str]:
    sc = Scale(spec.scale.dilation)
    timeout_s = spec.run.timeout_s
    out = []

    def real_ms(emulated_s: float) -> str:
        return f"{sc.real_time_s(emulated_s) * 1e3:.4g} ms"

    deadline = (f"the run's timeout (run.timeout_s = {timeout_s:g} s emulated, "
                f"{real_ms(timeout_s)} at real scale)")
    ends = job_ends_s(spec)
    for i, job in enumerate(spec.jobs):
        start_s, end_s = ends[job.id]
        if start_s >= timeout_s:
            out.append(f"jobs[{i}] (job {job.id}) would start at {real_ms(start_s)}, at or "
                       f"after {deadline}: it never runs")
        elif end_s > timeout_s:
            out.append(f"jobs[{i}] (job {job.id}): its lockstep bound alone ends at "
                       f"{real_ms(end_s)} ({end_s:.4g} s emulated), after {deadline}: the "
                       "run times out before the job finishes")
    for i, m in enumerate(spec.messages):
        if sc.time_s(m.start_ms * 1e-3) >= timeout_s:
            out.append(f"messages[{i}].start_ms = {m.start_ms:g}: at or after {deadline}: "
                       "it is never sent")
    work_end_s = max((end for _, end in ends.values()), default=0.0)
    for i, p in enumerate(spec.perturbations):
        for key in KINDS[p.kind].moments(p):
            at_s = sc.time_s(getattr(p, key) * 1e-3)
            where = f"perturbations[{i}].{key} = {getattr(p, key):g} ms ({p.kind})"
            if at_s >= timeout_s:
                out.append(f"{where}: at or after {deadline}: it never fires")
            elif ends and at_s > LOCKSTEP_SLACK * work_end_s:
                out.append(f"{where}: after {LOCKSTEP_SLACK:g}x the jobs' lockstep end "
                           f"({real_ms(work_end_s)}): it most likely fires once every job "
                           "has ended")
    return out


def job_ends_s(spec: Spec) -> dict[int, tuple[float, float]]:
    """Job id -> (start, end) in emulated seconds if every step ran at link rate
    (stragglers' delays included, imbalance and background left out: a lower bound)."""
    sc = Scale(spec.scale.dilation)
    rate = sc.rate_bps(spec.topology.link_rate_gbps * 1e9)
    mtu = spec.transport.mtu_bytes
    delays = step_delays(spec, sc)
    out: dict[int, tuple[float, float]] = {}
    for job in spec.jobs:
        lay = lay_mod.layout(job, spec.topology, sc.time_s)
        delay = max((delays.get(h, 0.0) for h in lay.hosts), default=0.0) * lay.steps
        start = lay.start_s + (out[lay.after_job][1] if lay.after_job in out else 0.0)
        if lay.program:                  # ready_s: from the start of its iteration
            span, t = 0.0, 0.0
            for n, (nbytes, ready_s, begins) in enumerate(lay.program):
                if begins and n:
                    span, t = span + t, 0.0
                t = max(t, ready_s) + lay_mod.theoretical_cct_s(lay, rate, mtu, nbytes=nbytes)
            busy = span + t + delay * len(lay.program)
        else:
            cct = lay_mod.theoretical_cct_s(lay, rate, mtu)
            busy = lay.passes * (cct + delay) + (lay.passes - 1) * lay.compute_gap_s
        out[job.id] = (start, start + busy)
    return out
