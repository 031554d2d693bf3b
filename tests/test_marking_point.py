"""The enqueue-vs-dequeue marking replay (emulator/analysis/marking_point.py) on arrival
records worked out by hand; pure, no root."""

from dataclasses import replace

import pytest

from emulator.analysis import marking_point as mp
from runtime.records import Arrivals

RED = {"enabled": True, "kmin_bytes": 5000.0, "kmax_bytes": 15000.0, "pmax": 1.0,
       "rate_ref_bps": 0.0}


def record(t, nbytes, rate_bps=8000.0, red=RED, roce=None):
    """A port draining 1000 B/s (8000 b/s), no burst credit, a buffer that never fills;
    the recorded backlogs are what the agent's model finds (filled in by the replay)."""
    rec = Arrivals(switch="leaf0", port="leaf0-eth1", rate_bps=rate_bps,
                   final_rate_bps=rate_bps, buffer_bytes=10**9, burst_bytes=0.0,
                   red=red, t_s=list(t), bytes=list(nbytes),
                   q_bytes=[0.0] * len(t), roce=roce or [1] * len(t))
    return replace(rec, q_bytes=mp.backlogs(rec)[0])


def test_a_growing_queue_leaves_more_behind_than_it_found():
    # 1000 B every 0.5 s into a 1000 B/s port: packet i finds 1000 + 500 i bytes (itself
    # included) and leaves at t = 0.5 i + (1000 + 500 i)/1000 = 1 + i, when 2i + 3
    # packets have arrived and 1000 (1 + i) bytes drained: 1000 (i + 2) stay behind
    n = 10
    m = 2 * n + 5                   # enough arrivals behind the last packet checked
    found, left, err = mp.backlogs(record([0.5 * i for i in range(m)], [1000] * m))
    for i in range(n):
        assert found[i] == pytest.approx(1000 + 500 * i)
        assert left[i] == pytest.approx(1000 * (i + 2))
    assert err == 0


def test_a_draining_queue_leaves_less_behind_and_the_totals_say_so():
    # a burst of 10 packets at t = 0 then nothing: packet i finds 1000 (i + 1), leaves at
    # t = i + 1 and leaves 1000 (9 - i) behind. RED 5000..15000, pmax 1:
    #   at enqueue p = (1000 (i+1) - 5000)/10000 for i >= 5: 0.1 + 0.2 + 0.3 + 0.4 + 0.5 = 1.5
    #   at dequeue p = (1000 (9-i) - 5000)/10000 > 0 for 9 - i > 5 (i <= 3): 0.4+0.3+0.2+0.1 = 1.0
    res = mp.replay_port(record([0.0] * 10, [1000] * 10))
    assert res.packets == 10
    assert res.marks_enqueue == pytest.approx(1.5)
    assert res.marks_dequeue == pytest.approx(1.0)
    assert res.differ == 9                       # all but i = 4 (0 both ways)


def test_only_roce_data_counts_and_scaled_thresholds_follow_the_port_rate():
    # the same burst, the odd packets not RoCE (they still queue): marks of even i only;
    # thresholds given for 16000 b/s, the port runs at 8000: 2500..7500 B
    red = dict(RED, rate_ref_bps=16000.0)
    res = mp.replay_port(record([0.0] * 10, [1000] * 10, red=red, roce=[1, 0] * 5))
    assert res.packets == 5
    # enqueue, even i: q = 1000 (i+1) -> p = (q - 2500)/5000 capped at 1: i=2: 0.1, i=4: 0.5,
    # i=6: 0.9, i=8: 1 -> 2.5
    assert res.marks_enqueue == pytest.approx(2.5)
    # dequeue, even i: left 1000 (9 - i): i=0: 1, i=2: 0.9, i=4: 0.5, i=6: 0.1 -> 2.5
    assert res.marks_dequeue == pytest.approx(2.5)


def test_a_record_the_agent_model_disagrees_with_shows_the_replay_error():
    rec = record([0.0, 0.5], [1000, 1000])
    rec = replace(rec, q_bytes=[1000.0, 2000.0])    # the replay finds 1000 and 1500
    assert mp.backlogs(rec)[2] == pytest.approx(500)
