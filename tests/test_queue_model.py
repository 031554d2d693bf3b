"""Tests for switch_agent/queue_model.py: the egress-queue fluid model and RED (docs/architecture.md §5.2)."""

import pytest

from switch_agent.queue_model import EgressQueue, red_probability

RATE_BPS = 10e6                  # 10 Mbit/s = 1.25e6 bytes/s
BUFFER_BYTES = 100_000


# --- EgressQueue: drain -----------------------------------------------------------------

def test_rate_is_converted_to_bytes_per_second():
    assert EgressQueue(RATE_BPS, BUFFER_BYTES).rate_Bps == pytest.approx(1.25e6)


def test_new_queue_is_empty():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    assert q.backlog(0.0) == 0.0
    assert (q.max_q_bytes, q.enqueued_pkts, q.enqueued_bytes, q.dropped_pkts) == (0, 0, 0, 0)


def test_queue_drains_at_the_link_rate():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    assert q.enqueue(5000, 0.0) == pytest.approx(5000)
    assert q.backlog(0.001) == pytest.approx(3750)       # 1.25e6 B/s * 1 ms = 1250 B
    assert q.backlog(0.002) == pytest.approx(2500)
    assert q.backlog(0.004) == pytest.approx(0)
    assert q.backlog(0.01) == 0.0                        # never negative


def test_backlog_is_the_same_whether_or_not_it_is_polled_in_between():
    polled = EgressQueue(RATE_BPS, BUFFER_BYTES)
    direct = EgressQueue(RATE_BPS, BUFFER_BYTES)
    polled.enqueue(5000, 0.0)
    direct.enqueue(5000, 0.0)
    for t in (0.0005, 0.001, 0.0015):
        polled.backlog(t)
    assert polled.backlog(0.002) == pytest.approx(direct.backlog(0.002)) == pytest.approx(2500)


def test_drained_queue_does_not_bank_credit_for_later_arrivals():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    q.enqueue(1000, 0.0)
    assert q.backlog(0.1) == 0.0                         # idle for a long time
    assert q.enqueue(4000, 0.1) == pytest.approx(4000)   # no negative backlog carried over
    assert q.backlog(0.1016) == pytest.approx(2000)


def test_arrivals_faster_than_the_rate_accumulate():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    # 1500 B every 0.4 ms = 3.75e6 B/s offered vs 1.25e6 B/s drained: +1000 B per packet.
    backlogs = [q.enqueue(1500, i * 0.0004) for i in range(10)]
    assert backlogs == pytest.approx([1500 + 1000 * i for i in range(10)])
    assert q.enqueued_pkts == 10
    assert q.enqueued_bytes == 15000
    assert q.max_q_bytes == pytest.approx(10500)


def test_arrivals_at_exactly_the_rate_keep_a_steady_backlog():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    backlogs = [q.enqueue(1250, i * 0.001) for i in range(20)]
    assert backlogs == pytest.approx([1250] * 20)


def test_max_q_bytes_is_the_high_water_mark():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    q.enqueue(3000, 0.0)
    q.enqueue(3000, 0.0)                                 # 6000
    assert q.backlog(0.004) == pytest.approx(1000)
    q.enqueue(2000, 0.004)                               # 3000
    assert q.max_q_bytes == pytest.approx(6000)
    q.enqueue(5000, 0.004)                               # 8000
    assert q.max_q_bytes == pytest.approx(8000)


# --- EgressQueue: drop-tail ---------------------------------------------------------------

def test_drop_tail_when_the_packet_does_not_fit():
    q = EgressQueue(RATE_BPS, 10_000)
    assert q.enqueue(6000, 0.0) == pytest.approx(6000)
    assert q.enqueue(4000, 0.0) == pytest.approx(10_000)  # exactly full still fits
    assert q.enqueue(1, 0.0) == -1.0
    assert q.dropped_pkts == 1
    assert q.backlog(0.0) == pytest.approx(10_000)        # queue unchanged by the drop
    assert q.enqueued_pkts == 2
    assert q.enqueued_bytes == 10_000
    assert q.max_q_bytes == pytest.approx(10_000)


def test_a_dropped_packet_does_not_occupy_the_queue_and_space_frees_as_it_drains():
    q = EgressQueue(RATE_BPS, 10_000)
    q.enqueue(9000, 0.0)
    assert q.enqueue(2000, 0.0) == -1.0
    assert q.enqueue(1500, 0.0) == -1.0
    assert q.dropped_pkts == 2
    assert q.backlog(0.0) == pytest.approx(9000)
    # after 0.8 ms, 1000 B drained: 2000 B now fit (8000 + 2000 = buffer)
    assert q.enqueue(2000, 0.0008) == pytest.approx(10_000)
    assert q.dropped_pkts == 2
    assert q.enqueued_pkts == 2


def test_a_packet_larger_than_the_buffer_is_always_dropped():
    q = EgressQueue(RATE_BPS, 1000)
    assert q.enqueue(1001, 0.0) == -1.0
    assert q.dropped_pkts == 1
    assert q.backlog(0.0) == 0.0
    assert q.max_q_bytes == 0.0


# --- EgressQueue: validation -----------------------------------------------------------------

@pytest.mark.parametrize("rate_bps", [0, -1, -10e6])
def test_non_positive_rate_is_rejected(rate_bps):
    with pytest.raises(ValueError, match="rate_bps"):
        EgressQueue(rate_bps, BUFFER_BYTES)


@pytest.mark.parametrize("buffer_bytes", [0, -1, -1500])
def test_non_positive_buffer_is_rejected(buffer_bytes):
    with pytest.raises(ValueError, match="buffer_bytes"):
        EgressQueue(RATE_BPS, buffer_bytes)


# --- RED ----------------------------------------------------------------------------------

KMIN, KMAX, PMAX = 50_000, 100_000, 0.2


@pytest.mark.parametrize("q_bytes", [0, 1, 25_000, 49_999, 49_999.9])
def test_red_probability_is_0_below_kmin(q_bytes):
    assert red_probability(q_bytes, KMIN, KMAX, PMAX) == 0.0


def test_red_probability_is_0_at_kmin():
    assert red_probability(KMIN, KMIN, KMAX, PMAX) == 0.0


@pytest.mark.parametrize("q_bytes, expected", [
    (50_001, 0.2 * 1 / 50_000),       # 4e-06
    (60_000, 0.04),
    (75_000, 0.1),
    (90_000, 0.16),
    (99_999, 0.2 * 49_999 / 50_000),  # 0.199996
])
def test_red_probability_is_linear_between_kmin_and_kmax(q_bytes, expected):
    assert red_probability(q_bytes, KMIN, KMAX, PMAX) == pytest.approx(expected)


@pytest.mark.parametrize("q_bytes", [100_000, 100_001, 150_000, 1e9])
def test_red_probability_is_1_at_and_above_kmax(q_bytes):
    assert red_probability(q_bytes, KMIN, KMAX, PMAX) == 1.0


def test_red_probability_uses_the_given_pmax_and_thresholds():
    assert red_probability(30, 10, 50, 0.5) == pytest.approx(0.25)
    assert red_probability(30, 10, 50, 1.0) == pytest.approx(0.5)
    assert red_probability(30, 20, 50, 0.3) == pytest.approx(0.1)


def test_red_on_the_queue_model_backlog():
    """The congestion point marks on the backlog including the arriving packet."""
    q = EgressQueue(100e6, 200_000)                     # 12.5e6 B/s
    backlog = 0.0
    for _ in range(50):                                  # 50 back-to-back 1500 B packets
        backlog = q.enqueue(1500, 0.0)
    assert backlog == pytest.approx(75_000)
    assert red_probability(backlog, KMIN, KMAX, PMAX) == pytest.approx(0.1)
    # 2 ms later 25_000 B have drained: the next packet sees 51_500 B.
    backlog = q.enqueue(1500, 0.002)
    assert backlog == pytest.approx(51_500)
    assert red_probability(backlog, KMIN, KMAX, PMAX) == pytest.approx(0.2 * 1500 / 50_000)


# --- clock and token bucket ------------------------------------------------------------

def test_an_earlier_timestamp_does_not_grow_the_backlog():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    q.enqueue(5000, 0.002)
    assert q.backlog(0.001) == pytest.approx(5000)      # clock went back: no negative drain
    assert q.backlog(0.003) == pytest.approx(3750)


def test_burst_credit_saved_while_idle_is_spent_by_the_next_arrivals():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES, burst_bytes=3000)
    assert q.enqueue(5000, 0.0) == pytest.approx(2000)  # an idle port starts with a full bucket
    assert q.backlog(0.002) == pytest.approx(0)         # 2500 B drained: 500 B of credit left
    assert q.enqueue(1000, 0.002) == pytest.approx(500)
    assert q.backlog(1.0) == 0.0                        # long idle: the bucket refills ...
    assert q.enqueue(4000, 1.0) == pytest.approx(1000)  # ... to the burst, not beyond


def test_negative_burst_is_rejected():
    with pytest.raises(ValueError, match="burst_bytes"):
        EgressQueue(RATE_BPS, BUFFER_BYTES, burst_bytes=-1)


def test_a_rate_change_applies_from_its_time_on():
    q = EgressQueue(8e6, 100_000)               # 1 MB/s
    q.enqueue(10_000, 0.0)
    q.set_rate(4e6, 0.004)                      # 4 KB drained at the old rate, then 0.5 MB/s
    assert q.backlog(0.004) == pytest.approx(6000)
    assert q.backlog(0.008) == pytest.approx(4000)
    with pytest.raises(ValueError, match="rate_bps must be > 0"):
        q.set_rate(0, 0.01)


# --- the high class of a two-class (pq) port --------------------------------------------

def test_the_high_class_backlog_drains_first_and_never_exceeds_the_port():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES)
    q.enqueue(5000, 0.0)                                 # the low class's
    q.enqueue(3000, 0.0)
    assert q.promote(3000) == pytest.approx(3000)        # the high class's
    assert q.backlog(0.001) == pytest.approx(6750)       # 1250 B left the port ...
    assert q.q_high == pytest.approx(1750)               # ... all of them the high class's
    assert q.backlog(0.003) == pytest.approx(4250)
    assert q.q_high == 0.0                               # then the low class drains
    assert q.backlog(1.0) == 0.0


def test_a_promoted_packet_that_idle_credit_sent_at_once_is_not_counted_twice():
    q = EgressQueue(RATE_BPS, BUFFER_BYTES, burst_bytes=1000)
    assert q.enqueue(1500, 0.0) == pytest.approx(500)    # 1000 B left on saved credit
    assert q.promote(1500) == pytest.approx(500)         # the class holds what the port does
