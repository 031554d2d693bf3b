"""Helpers for tests that build a run set's summary by hand (``emulator.analysis.
summary``): the parts a test is about given, every other required field at a neutral
value (nothing measured, no tables), so the summary reads as what the test checks and
is one the readers take -- the same types ``report`` writes, never a dict of its keys."""

from dataclasses import asdict

from emulator.analysis.stats import paired
from emulator.analysis.summary import (
    CollectiveResult, CollectiveSplit, Evidence, Fidelity, JobResult, JobSplit,
    MessageSplit, RunResult, Scaling, SeedComparison, Split, Summary, Transport)


def collective(pass_index=0, nbytes=1048576, cct_s=1.0, **fields) -> CollectiveResult:
    """A collective done and verified; ``fields``: any other (``theoretical_cct_s``...)."""
    base = dict(start_s=0.0, theoretical_cct_s=cct_s or 1.0, cct_ratio=1.0, failed=False,
                verified=True, algbw_bps=None, busbw_bps=None)
    return CollectiveResult(pass_index=pass_index, nbytes=nbytes, cct_s=cct_s,
                            **{**base, **fields})


def job(collectives=(), job=1, **fields) -> JobResult:
    base = dict(algorithm="ring_allreduce", ranks=4, nbytes=1048576, jct_s=None,
                max_step_overlap=1, last_step_span_s=0.0)
    return JobResult(job=job, collectives=list(collectives), **{**base, **fields})


def fidelity(faithful=True, reasons=(), errors=(), **fields) -> Fidelity:
    """A verdict with nothing measured (every measure None)."""
    measures = {k: None for k in (
        "cpu_busy", "cpu_steal", "cpu_busy_servers", "pacing_mean_late_s",
        "start_offset_max_s", "clock_bound_max_s", "agent_hold_mean_s", "agent_hold_frames",
        "host_rx_lag_mean_s", "host_rx_lag_frames", "cct_ratio_min", "cct_ratio_max",
        "queue_err_mean_bytes_max", "busy_util_min", "busy_util_max")}
    return Fidelity(faithful=faithful, reasons=list(reasons), errors=list(errors),
                    nfqueue_drops={}, perturbations=[], perturbation_effects=[],
                    **{**measures, **fields})


TRANSPORT = Transport(packets=0, retransmits=0, timeouts=0, naks=0, cnps=0, switch_drops=0)


def run(scheme="baseline", seed=1, jobs=(), *, faithful=True, split_jobs=None,
        twin="not run", **fields) -> RunResult:
    """A run; ``split_jobs``: its split's jobs (``split_job``), which makes it a replayed
    emulated run, ``twin`` what its split says of its twin."""
    base = dict(repeat=1, rundir=f"/nowhere/{scheme}-seed{seed}", backend="emulation",
                twin_of=None, order=["in_order"], together_throughput_bps=None,
                transport=TRANSPORT, fidelity=fidelity(faithful))
    if split_jobs is not None:
        base.update(replayed=True, split=Split(
            paths_recorded=1, flows=1, jobs=list(split_jobs), not_modelled=[],
            twin=twin, emulation_error_x=None))
    return RunResult(scheme=scheme, seed=seed, jobs=list(jobs), **{**base, **fields})


_SPLIT_TIMES = dict(fluid_s=None, ideal_s=None, emulated_s=None, routing_x=None,
                    transport_x=None, ideal_gain=None)


def collective_split(pass_index=0, bound_s=1.0, **fields) -> CollectiveSplit:
    """A collective's split, every time and factor None unless given."""
    return CollectiveSplit(pass_index=pass_index, bound_s=bound_s,
                           **{**_SPLIT_TIMES, **fields})


def message_split(step=0, bound_s=1.0, **fields) -> MessageSplit:
    base = dict(src="h0", dst="h1", src_ip="10.0.0.2", dst_ip="10.0.0.3", job=1)
    return MessageSplit(step=step, bound_s=bound_s, **{**base, **_SPLIT_TIMES, **fields})


def split_job(collectives=(), job=1, **fields) -> JobSplit:
    base = dict(fluid_jct_s=None, fluid_jct_range_s=None, ideal_jct_s=None,
                emulated_jct_s=None, sim_jct_s=None)
    return JobSplit(job=job, collectives=list(collectives), **{**base, **fields})


def evidence(a: list, b: list, seeds=None, primary=False) -> Evidence:
    """Scheme ``b`` against the baseline's ``a``, paired by seed (``stats.paired``)."""
    return Evidence(**asdict(paired(a, b)), seeds=list(seeds or range(1, len(a) + 1)),
                    primary=primary, correlation=None)


def summary(runs=(), **fields) -> Summary:
    """A run set of ``runs``, its tables empty unless given."""
    base = dict(name="t", backend="emulation", order=["in_order"], run_folder=None,
                spec={}, scale=Scaling(dilation=1.0), link_rate_bps=1e9,
                comparison={}, seeds=SeedComparison(schemes={}, paired={}), primary="cct",
                evidence={}, per_job={}, noise={}, split={}, excluded=[], damaged=[])
    return Summary(runs=list(runs), **{**base, **fields})
