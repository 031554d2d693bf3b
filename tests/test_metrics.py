"""Unit tests for emulator/metrics.py (docs/architecture.md §6) on small synthetic logs whose answers
are computed by hand. Pure, no root, no run folder."""

import dataclasses
import math

import numpy as np
import pytest

from emulator.analysis import metrics
from emulator.analysis.metrics import Transfer
from tests.records_util import collective, received, sent


def flow(step, t_start, t_end, *, job=1, nbytes=1000, channel=0, src=0, dst=1):
    return Transfer(job=job, channel=channel, step=step, src=src, dst=dst, bytes=nbytes,
                    t_start=t_start, t_end=t_end, retransmits=0, cnps=0)


def value_at(ts, vs, t):
    """The step function (ts, vs) evaluated at t (0 before the first event)."""
    i = int(np.searchsorted(ts, t, side="right")) - 1
    return 0 if i < 0 else int(vs[i])


# --- join_flows ------------------------------------------------------------------------

def send(job, channel, step, src, dst, start, nbytes=4096, **extra):
    return sent(job, channel, step, src, dst, start_s=start, nbytes=nbytes, **extra)


def recv(job, channel, step, src, dst, end):
    return received(job, channel, step, src, dst, end_s=end)


def test_join_flows_pairs_sender_start_with_receiver_end_by_full_key():
    sends = [send(1, 0, 0, 0, 1, 0.5, retransmits=3, cnps=2),
             send(1, 0, 1, 0, 1, 1.5, nbytes=2048)]
    recvs = [recv(1, 0, 1, 0, 1, 2.25), recv(1, 0, 0, 0, 1, 1.25)]   # order differs
    flows = metrics.join_flows(sends, recvs)
    assert flows == [
        Transfer(job=1, channel=0, step=0, src=0, dst=1, bytes=4096,
                 t_start=0.5, t_end=1.25, retransmits=3, cnps=2),
        Transfer(job=1, channel=0, step=1, src=0, dst=1, bytes=2048,
                 t_start=1.5, t_end=2.25, retransmits=0, cnps=0),
    ]


@pytest.mark.parametrize("field,other", [("job", 2), ("channel", 1), ("step", 5),
                                         ("src", 7), ("dst", 7)])
def test_join_flows_does_not_pair_records_differing_in_one_key_field(field, other):
    s = send(1, 0, 0, 0, 1, 0.0)
    r = recv(1, 0, 0, 0, 1, 1.0)
    r = dataclasses.replace(r, **{field: other})
    assert metrics.join_flows([s], [r]) == []


def test_join_flows_drops_flows_without_receiver_record_or_end_time():
    sends = [send(1, 0, 0, 0, 1, 0.0),           # complete
             send(1, 0, 0, 1, 2, 0.0),           # receiver never logged it
             send(1, 0, 0, 2, 0, 0.0)]           # receiver logged it but it never ended
    recvs = [recv(1, 0, 0, 0, 1, 1.0), recv(1, 0, 0, 2, 0, None),
             recv(1, 0, 0, 3, 0, 2.0)]           # receiver record without a sender record
    flows = metrics.join_flows(sends, recvs)
    assert [(f.src, f.dst) for f in flows] == [(0, 1)]


def test_join_flows_of_empty_logs_is_empty():
    assert metrics.join_flows([], []) == []


# --- collective_times ------------------------------------------------------------------

def coll(job, pass_, start, end, verified=True):
    return collective(job, pass_, start_s=start, end_s=end, verified=verified)


def test_collective_times_takes_earliest_start_latest_end_and_all_verified():
    records = [coll(1, 0, 0.2, 3.0), coll(1, 0, 0.1, 2.5), coll(1, 0, 0.3, 3.5),
               coll(1, 1, 4.0, 6.0), coll(1, 1, 4.5, 7.0, verified=False),
               coll(2, 0, 1.0, 2.0)]
    out = metrics.collective_times(records)
    assert list(out) == [(1, 0), (1, 1), (2, 0)]
    assert out[(1, 0)] == metrics.CollectiveTime(start_s=0.1, end_s=3.5,
                                                 cct_s=pytest.approx(3.4), verified=True,
                                                 ranks=3)
    assert out[(1, 1)] == metrics.CollectiveTime(start_s=4.0, end_s=7.0, cct_s=3.0,
                                                 verified=False, ranks=2)
    assert out[(2, 0)] == metrics.CollectiveTime(start_s=1.0, end_s=2.0, cct_s=1.0,
                                                 verified=True, ranks=1)


def test_collective_times_of_no_records_is_empty():
    assert metrics.collective_times([]) == {}


# --- overlap_timeline / max_overlap -----------------------------------------------------

# Job 1: steps 0, 0, 1, 2 overlapping, then a gap, then step 3 alone; job 2 elsewhere.
OVERLAP_FLOWS = [
    flow(0, 0.0, 5.0),
    flow(0, 1.0, 3.0, src=1, dst=2),
    flow(1, 2.0, 6.0),
    flow(2, 4.0, 7.0),
    flow(3, 9.0, 10.0),
    flow(7, 8.0, 8.5, job=2),
]


def test_overlap_timeline_is_max_minus_min_active_step_plus_one_at_each_event():
    ts, vs = metrics.overlap_timeline(OVERLAP_FLOWS, job=1)
    expected = {
        0.0: 1,     # step 0 starts
        1.0: 1,     # a second step-0 flow: still one step
        2.0: 2,     # step 1 starts: steps 0..1
        3.0: 2,     # one step-0 flow ends, the other is still active
        4.0: 3,     # step 2 starts: steps 0..2
        5.0: 2,     # the last step-0 flow ends: steps 1..2
        6.0: 1,     # step 1 ends
        7.0: 0,     # nothing in flight
        9.0: 1,     # step 3 alone
        10.0: 0,
    }
    assert list(ts) == list(expected)
    assert list(vs) == list(expected.values())


@pytest.mark.parametrize("t,expected", [(-1.0, 0), (0.5, 1), (2.5, 2), (4.5, 3), (5.5, 2),
                                        (6.5, 1), (7.5, 0), (8.25, 0), (9.5, 1), (11.0, 0)])
def test_overlap_timeline_value_between_events(t, expected):
    ts, vs = metrics.overlap_timeline(OVERLAP_FLOWS, job=1)
    assert value_at(ts, vs, t) == expected


def test_overlap_timeline_filters_by_job():
    ts, vs = metrics.overlap_timeline(OVERLAP_FLOWS, job=2)
    assert list(ts) == [8.0, 8.5]
    assert list(vs) == [1, 0]


def test_overlap_timeline_of_unknown_job_is_empty():
    ts, vs = metrics.overlap_timeline(OVERLAP_FLOWS, job=99)
    assert len(ts) == 0 and len(vs) == 0


def test_overlap_timeline_perfect_handoff_at_the_same_instant_stays_lockstep():
    # step 1 starts exactly when step 0 ends: the value at t=2 is 1, never 2
    ts, vs = metrics.overlap_timeline([flow(0, 0.0, 2.0), flow(1, 2.0, 4.0)], job=1)
    assert list(ts) == [0.0, 2.0, 4.0]
    assert list(vs) == [1, 1, 0]


def test_overlap_timeline_counts_the_gap_between_steps_not_the_number_of_flows():
    # steps 0 and 3 active together: 3 - 0 + 1 = 4 even though only two flows are active
    ts, vs = metrics.overlap_timeline([flow(0, 0.0, 2.0), flow(3, 1.0, 3.0)], job=1)
    assert value_at(ts, vs, 1.5) == 4


def test_max_overlap_is_the_peak_of_the_timeline():
    assert metrics.max_overlap(OVERLAP_FLOWS, job=1) == 3
    assert metrics.max_overlap(OVERLAP_FLOWS, job=2) == 1
    assert metrics.max_overlap(OVERLAP_FLOWS, job=99) == 0


# --- step_completion -------------------------------------------------------------------

# 1000-byte chunks at 8000 bit/s: the ideal step takes 1 s.
STEP_FLOWS = [
    flow(0, 0.0, 1.0), flow(0, 0.0, 0.8, src=1, dst=2),      # step 0 done at 1
    flow(1, 1.0, 2.0), flow(1, 0.9, 1.5, src=1, dst=2),      # step 1 done at 2
    flow(2, 2.0, 4.0), flow(2, 2.5, 3.0, src=1, dst=2),      # step 2 done at 4
    flow(0, 0.0, 10.0, job=2),
]


def test_step_completion_rates_normalized_by_ideal_chunk_time():
    out = metrics.step_completion(STEP_FLOWS, job=1, rate_bps=8000.0)
    assert out.steps == [0, 1, 2]
    assert out.t_done == [1.0, 2.0, 4.0]
    assert out.duration_s == pytest.approx([1.0, 1.0, 2.0])
    assert out.normalized_rate == pytest.approx([1.0, 1.0, 0.5])


def test_step_completion_first_step_is_measured_from_its_earliest_start():
    flows = [flow(0, 10.0, 10.5), flow(0, 10.25, 12.0, src=1), flow(1, 12.0, 13.0)]
    out = metrics.step_completion(flows, job=1, rate_bps=8000.0)
    assert out.duration_s == pytest.approx([2.0, 1.0])
    assert out.normalized_rate == pytest.approx([0.5, 1.0])


def test_step_completion_uses_wire_bytes_of_the_largest_flow_for_the_ideal():
    flows = [flow(0, 0.0, 1.0, nbytes=500), flow(0, 0.0, 1.0, nbytes=1000, src=1)]
    out = metrics.step_completion(flows, job=1, rate_bps=8000.0,
                                  wire_bytes=lambda b: b + 1000)
    # ideal = (1000 + 1000) * 8 / 8000 = 2 s; took 1 s
    assert out.normalized_rate == pytest.approx([2.0])


def test_step_completion_zero_duration_gives_nan():
    flows = [flow(0, 0.0, 1.0), flow(1, 0.5, 1.0)]
    out = metrics.step_completion(flows, job=1, rate_bps=8000.0)
    assert out.duration_s == [1.0, 0.0]
    assert out.normalized_rate[0] == pytest.approx(1.0)
    assert math.isnan(out.normalized_rate[1])


def test_step_completion_filters_by_job_and_is_empty_for_unknown_job():
    out2 = metrics.step_completion(STEP_FLOWS, job=2, rate_bps=8000.0)
    assert out2.steps == [0] and out2.normalized_rate == pytest.approx([0.1])
    assert metrics.step_completion(STEP_FLOWS, job=5, rate_bps=8000.0) == \
        metrics.StepCompletion(steps=[], t_done=[], duration_s=[], normalized_rate=[])


# --- last_step_span --------------------------------------------------------------------

def test_last_step_span_is_slowest_minus_fastest_flow_of_the_final_step():
    assert metrics.last_step_span(STEP_FLOWS, job=1) == pytest.approx(1.0)   # 4.0 - 3.0


def test_last_step_span_of_a_single_flow_is_zero_and_of_no_flows_is_zero():
    assert metrics.last_step_span(STEP_FLOWS, job=2) == 0.0
    assert metrics.last_step_span(STEP_FLOWS, job=42) == 0.0


def test_last_step_span_ignores_earlier_steps_even_if_they_end_later():
    flows = [flow(0, 0.0, 100.0), flow(1, 1.0, 2.0), flow(1, 1.0, 2.5, src=1)]
    assert metrics.last_step_span(flows, job=1) == pytest.approx(0.5)


# --- throughput_timeline ---------------------------------------------------------------

def test_throughput_of_1000_bytes_over_1s_is_8000_bit_per_s_in_every_bin():
    t, v = metrics.throughput_timeline([flow(0, 0.0, 1.0)], job=1, bin_s=0.25)
    assert list(t) == [0.0, 0.25, 0.5, 0.75]
    assert v == pytest.approx([8000.0] * 4)


def test_throughput_partial_bins_are_weighted_by_overlap():
    # 1000 bytes over [0.125, 0.625]: 16000 bit/s while active
    t, v = metrics.throughput_timeline([flow(0, 0.125, 0.625)], job=1, bin_s=0.25,
                                       t0=0.0, t1=1.0)
    assert list(t) == [0.0, 0.25, 0.5, 0.75]
    assert v == pytest.approx([8000.0, 16000.0, 8000.0, 0.0])
    assert float(np.sum(v) * 0.25) == pytest.approx(8000.0)   # all 1000 bytes accounted


def test_throughput_sums_flows_and_filters_by_job():
    flows = [flow(0, 0.0, 1.0), flow(1, 0.5, 1.0, nbytes=500, src=1),
             flow(0, 0.0, 1.0, job=2, nbytes=2000)]
    t, v = metrics.throughput_timeline(flows, job=1, bin_s=0.5)
    assert list(t) == [0.0, 0.5]
    assert v == pytest.approx([8000.0, 16000.0])
    _, v_all = metrics.throughput_timeline(flows, job=None, bin_s=0.5)
    assert v_all == pytest.approx([24000.0, 32000.0])


def test_throughput_window_clips_flows_outside_it():
    t, v = metrics.throughput_timeline([flow(0, 0.0, 2.0)], job=1, bin_s=0.5,
                                       t0=0.5, t1=1.5)
    assert list(t) == [0.5, 1.0]
    assert v == pytest.approx([4000.0, 4000.0])


def test_mean_throughput_counts_each_flows_bits_pro_rata_inside_the_window():
    # 1000 B over [0, 2] s (4000 bit/s) and 1000 B over [1, 1.5] s (16000 bit/s), window
    # [1, 2]: 4000 bit of the first, all 8000 of the second, over 1 s
    flows = [flow(0, 0.0, 2.0), flow(1, 1.0, 1.5, job=2)]
    assert metrics.mean_throughput(flows, 1.0, 2.0) == pytest.approx(12000.0)
    assert metrics.mean_throughput(flows, 3.0, 4.0) == 0.0          # nothing in flight
    assert metrics.mean_throughput(flows, 2.0, 2.0) is None         # an empty window
    assert metrics.mean_throughput([flow(0, 1.0, 1.0)], 0.0, 2.0) == 0.0


def test_throughput_ignores_zero_length_flows_and_is_empty_without_flows():
    t, v = metrics.throughput_timeline([flow(0, 1.0, 1.0), flow(1, 0.0, 1.0)], job=1,
                                       bin_s=0.5)
    assert v == pytest.approx([8000.0, 8000.0])
    t, v = metrics.throughput_timeline([flow(0, 0.0, 1.0)], job=3, bin_s=0.5)
    assert len(t) == 0 and len(v) == 0


def test_throughput_has_no_spurious_trailing_bin_when_span_is_a_multiple_of_bin():
    t, v = metrics.throughput_timeline([flow(0, 0.0, 0.07, nbytes=70)], job=1, bin_s=0.01)
    assert len(t) == 7
    assert v == pytest.approx([8000.0] * 7)


# --- bandwidths and cdf ----------------------------------------------------------------

def test_bandwidths_algbw_is_bytes_per_second_and_busbw_scales_by_factor():
    alg, bus = metrics.bandwidths(1_000_000, 0.5, 1.5)
    assert alg == pytest.approx(2_000_000.0)
    assert bus == pytest.approx(3_000_000.0)


def test_bandwidths_all_reduce_4_ranks_example():
    # 1 MiB per rank in 2 s, factor 2(4-1)/4 = 1.5
    alg, bus = metrics.bandwidths(1 << 20, 2.0, 2 * 3 / 4)
    assert alg == pytest.approx(524288.0)
    assert bus == pytest.approx(786432.0)


def test_bandwidths_of_zero_time_are_zero():
    assert metrics.bandwidths(1000, 0.0, 1.5) == (0.0, 0.0)


def test_cdf_sorts_values_and_gives_cumulative_fractions():
    x, p = metrics.cdf([3.0, 1.0, 2.0, 2.0])
    assert list(x) == [1.0, 2.0, 2.0, 3.0]
    assert p == pytest.approx([0.25, 0.5, 0.75, 1.0])


def test_cdf_of_a_single_value_is_one():
    x, p = metrics.cdf([7])
    assert list(x) == [7.0] and list(p) == [1.0]
