"""Unit tests for emulator/plan/layout.py: job layouts, wire_bytes and theoretical_cct_s."""

import pytest

from emulator.plan import layout as jobs_mod
from emulator.spec import load, validate
from tests.spec_util import TABLE1, write
from tests.toml_util import to_toml


# --- jobs.layout / wire_bytes / theoretical_cct_s ---------------------------------------

def dilate(seconds: float) -> float:
    return seconds * 1000.0


def test_table1_layout_is_4_rail_rings_of_4_ranks():
    spec = load(TABLE1)
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.job == 1 and lay.algorithm == "ring_allreduce"
    assert lay.hosts == tuple(f"h{i}" for i in range(16))
    assert lay.rings == ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15))
    assert lay.grid is None
    assert lay.nbytes == 262144 * 4
    assert lay.steps == 6
    assert lay.passes == 4
    assert lay.ring_size == 4
    assert lay.bus_factor == pytest.approx(1.5)
    assert lay.ring_of(9) == (1, 5, 9, 13)
    assert lay.compute_gap_s == 0.0 and lay.start_s == 0.0


def test_layout_converts_gap_and_start_with_the_time_scale():
    spec = load(TABLE1, ["jobs.0.compute_gap_us=50", "jobs.0.start_ms=2"])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.compute_gap_s == pytest.approx(0.05)
    assert lay.start_s == pytest.approx(2.0)


def test_layout_single_ring_over_all_hosts():
    spec = load(TABLE1, ['jobs.0.rings="single"'])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.rings == (tuple(range(16)),)
    assert lay.ring_size == 16
    assert lay.nbytes == 262144 * 16
    assert lay.steps == 30


def test_layout_sorts_listed_hosts_numerically_not_lexically():
    spec = load(TABLE1, ['jobs.0.hosts=["h10", "h2", "h14", "h6"]'])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.hosts == ("h2", "h6", "h10", "h14")
    assert lay.rings == ((0, 1, 2, 3),)           # all on rail 2
    assert lay.steps == 6


def test_layout_ring2d_grid_row_by_row():
    spec = load(TABLE1, ['jobs.0.algorithm="ring2d_allreduce"', "jobs.0.grid=[4, 4]"])
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.grid == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    assert lay.rings == lay.grid
    assert lay.nbytes == 262144 * 4               # chunk x columns
    assert lay.steps == 2 * 3 + 2 * 3
    assert lay.ring_size == 16
    assert lay.bus_factor == pytest.approx(2 * 15 / 16)


def test_layout_size_bytes_is_the_buffer_per_rank():
    raw = {"topology": {"kind": "dumbbell", "hosts": 4},
           "jobs": [{"id": 3, "hosts": "all", "rings": "single", "size_bytes": 65536,
                     "algorithm": "ring_reducescatter"}]}
    spec = validate(raw, "<memory>")
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.nbytes == 65536
    assert lay.steps == 3
    assert lay.bus_factor == pytest.approx(0.75)


@pytest.mark.parametrize("payload,mtu,expected", [
    (4096, 4096, 4096 + 58),          # one full packet: 14 Eth + 20 IP + 8 UDP + 12 BTH + 4 ICRC
    (0, 4096, 58),                    # an empty message is still one packet
    (1, 4096, 59),
    (4097, 4096, 4097 + 2 * 58),
    (10000, 1024, 10000 + 10 * 58),
    (262144, 4096, 262144 + 64 * 58),
])
def test_wire_bytes_adds_58_bytes_per_packet(payload, mtu, expected):
    assert jobs_mod.wire_bytes(payload, mtu) == expected


def two_rank_layout(tmp_path):
    raw = {"topology": {"kind": "dumbbell", "hosts": 2, "link_rate_gbps": 8.0},
           "jobs": [{"id": 1, "hosts": "all", "rings": "single", "chunk_bytes": 4096}]}
    spec = load(write(tmp_path, to_toml(raw)))
    return jobs_mod.layout(spec.jobs[0], spec.topology, dilate)


FRAME_S = 4154 * 8 / 8e6          # one full 4096-byte frame at 8e6 bit/s


def test_theoretical_cct_two_ranks_is_two_chunk_times_on_the_wire(tmp_path):
    lay = two_rank_layout(tmp_path)
    assert (lay.nbytes, lay.steps, lay.rings) == (8192, 2, ((0, 1),))
    # per step: 4096 payload + 58 framing = 4154 bytes at 8e6 bit/s; no latency by default
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(2 * 4154 * 8 / 8e6)
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(0.008308)


def test_theoretical_cct_adds_the_per_step_latency_once_per_step(tmp_path):
    lay = two_rank_layout(tmp_path)
    # e.g. one extra store-and-forward frame time per step (2 hops)
    got = jobs_mod.theoretical_cct_s(lay, 8e6, 4096, step_latency_s=FRAME_S)
    assert got == pytest.approx(2 * (4154 * 8 / 8e6 + FRAME_S))
    assert got == pytest.approx(0.016616)


def test_theoretical_cct_counts_framing_of_every_packet(tmp_path):
    lay = two_rank_layout(tmp_path)
    # mtu 1024: each 4096-byte step is 4 packets, 4096 + 4 * 58 = 4328 bytes
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 1024) == pytest.approx(2 * 4328 * 8 / 8e6)


def test_theoretical_cct_ring2d_2x2_uses_row_and_column_chunk_sizes(tmp_path):
    raw = {"topology": {"kind": "dumbbell", "hosts": 4},
           "jobs": [{"id": 1, "hosts": "all", "rings": "single",
                     "algorithm": "ring2d_allreduce", "grid": [2, 2], "chunk_bytes": 4096}]}
    spec = load(write(tmp_path, to_toml(raw)))
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    assert lay.nbytes == 8192 and lay.steps == 4
    # row steps move 4096-byte halves, column steps 2048-byte quarters
    expected = (4154 + 2106 + 2106 + 4154) * 8 / 8e6
    assert jobs_mod.theoretical_cct_s(lay, 8e6, 4096) == pytest.approx(expected)


def test_theoretical_cct_table1_is_six_steps_of_a_64_packet_chunk():
    spec = load(TABLE1)
    lay = jobs_mod.layout(spec.jobs[0], spec.topology, dilate)
    rate = 10e9 / spec.scale.dilation
    per_step = (262144 + 64 * 58) * 8 / rate
    assert jobs_mod.theoretical_cct_s(lay, rate, 4096) == pytest.approx(6 * per_step)


def test_transport_timers_are_real_scale_and_dilated_like_every_other_timer():
    from emulator.plan import compile

    def transport_params(spec):               # what every host of the plan gets
        return compile(spec, "baseline", 1).hosts["h0"].transport
    spec = load(TABLE1, ["scale.dilation=2000", "transport.rto_us=1000",
                         "transport.nak_timeout_us=200"])
    tp = transport_params(spec)
    assert tp.rto_s == pytest.approx(2.0) and tp.nak_timeout_s == pytest.approx(0.4)
    spec = load(TABLE1, ["scale.dilation=8000"])
    assert transport_params(spec).rto_s == pytest.approx(8.0)
