"""A flow's rate and goodput samples (hosts/flows.py add_sample): one every
rate_sample_s while a flow is short; a long flow's are thinned to at most MAX_SAMPLES,
spanning its whole life, so a run's records grow with its flows, not its packets."""

import tempfile

from emulator.sim.run import run_sim
from emulator.spec import load
from emulator.rundir import RunFolder
from hosts.flows import MAX_SAMPLES, add_sample
from runtime.records import FlowReceived, FlowSent
from tests.spec_ext_util import TABLE1


def test_samples_are_thinned_to_every_other_one_and_the_interval_doubles():
    samples, every = [], 1.0
    t = 0.0
    for i in range(1000):
        t += every
        every = add_sample(samples, (t, i), every)
    assert MAX_SAMPLES // 2 <= len(samples) < MAX_SAMPLES
    assert samples[0] == (1.0, 0)
    assert samples[-1] == (t, 999) and every == 2.0 ** 14    # 14 thinnings of 64 samples
    gaps = [b[0] - a[0] for a, b in zip(samples, samples[1:])]
    assert min(gaps) >= every / 2 and max(gaps) <= 1.5 * every   # even, at the interval


def test_a_long_flows_samples_are_bounded_and_span_it():
    """The main job with 2 MB chunks: each flow 512 packets, more than MAX_SAMPLES
    samples' worth at 50 ms emulated; each kept to at most MAX_SAMPLES (the longest
    thinned, not short of samples), the last goodput sample the whole message at the
    flow's end."""
    spec = load(TABLE1, ["jobs.0.chunk_bytes=2097152", "jobs.0.passes=1"])
    with tempfile.TemporaryDirectory() as d:
        run_sim(spec, "baseline", 1, d + "/run")
        folder = RunFolder(d + "/run")
        sent = list(folder.host_records(FlowSent))
        got = list(folder.host_records(FlowReceived))
    assert sent and got
    longest = max(got, key=lambda f: f.end_s - f.start_s)
    assert max(len(f.rate_samples) for f in sent) < MAX_SAMPLES
    assert max(len(f.goodput_samples) for f in got) <= MAX_SAMPLES
    assert max(len(f.goodput_samples) for f in got) >= MAX_SAMPLES // 2
    assert longest.goodput_samples[-1][1] == longest.bytes
    assert longest.goodput_samples[-1][0] == round(longest.end_s, 6)
