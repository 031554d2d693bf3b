"""Helpers for tests that build run records by hand (``runtime.records``): the fields a
test is about given, every other required field at a neutral value (no counters, no
samples), so a record reads as what the test checks."""

from runtime.records import CollectiveDone, FlowReceived, FlowSent, RankSummary


def sent(job=1, channel=0, step=0, src="10.0.0.1", dst="10.0.0.2", *, start_s=0.0,
         end_s=None, nbytes=4096, **extra) -> FlowSent:
    """A sender's flow record; ``extra``: counters (``retransmits=3``) or model fields."""
    fields = dict(sport=0, packets=1, retransmits=0, timeouts=0, naks=0, cnps=0, cuts=0,
                  final_rate_bps=0.0, rate_samples=[])
    return FlowSent(job=job, channel=channel, step=step, src=src, dst=dst, bytes=nbytes,
                    start_s=start_s, end_s=end_s, **{**fields, **extra})


def received(job=1, channel=0, step=0, src="10.0.0.1", dst="10.0.0.2", *, start_s=0.0,
             end_s=None, nbytes=4096, **extra) -> FlowReceived:
    """A receiver's flow record; ``extra``: counters (``ce=2``)."""
    fields = dict(ce=0, cnps_sent=0, naks_sent=0, duplicates=0, out_of_order=0,
                  goodput_samples=[])
    return FlowReceived(job=job, channel=channel, step=step, src=src, dst=dst, bytes=nbytes,
                        start_s=start_s, end_s=end_s, **{**fields, **extra})


def collective(job=1, pass_index=0, *, start_s, end_s, rank=0, verified=True,
               **extra) -> CollectiveDone:
    """A rank's collective record; ``extra``: ``algorithm``, ``nbytes``, ``steps``, ``host``."""
    fields = dict(algorithm="ring_allreduce", nbytes=4096, steps=1)
    return CollectiveDone(job=job, rank=rank, pass_index=pass_index, start_s=start_s,
                          end_s=end_s, verified=verified, **{**fields, **extra})


def rank_summary(name="h0", **extra) -> RankSummary:
    """A rank host's summary of a run that went well: on time, its collective verified,
    nothing paced late; ``extra``: what the test is about (``udp``, ``clock``, ``pacing``)."""
    fields = dict(ip="10.0.0.1", timed_out=False, ok=True, udp={}, counters={},
                  cnp_suppressed=0, open_flows=0,
                  pacing={"packets": 0, "mean_late_s": 0.0, "max_late_s": 0.0},
                  collectives=1, expected=1, verified=1, steps_applied=0, steps_total=0)
    return RankSummary(name=name, **{**fields, **extra})
