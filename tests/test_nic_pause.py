"""A host's NIC honours 802.1Qbb PAUSE (hosts/nic_core.py: the code both the emulated
and the simulated NIC run): no data leaves while RoCE's priority is paused, it goes again
at once on XON or when the quanta run out, and the pause is not pacing lateness."""

import pytest

from emulator.routing.graph import dumbbell
from emulator.sim.loop import Loop
from emulator.sim.network import Network, SimNic
from hosts.cc import CcConfig
from hosts.config import TransportParams
from runtime import pause
from runtime.scale import Scale

RATE = 10e6                    # 10 Gb/s at D = 1000
FRAME_S = 4154 * 8 / RATE      # 3.3232 ms: a full data frame


def nic_sending(packets: int):
    """h0's NIC with a message of ``packets`` full frames to h1 on a dumbbell."""
    loop = Loop()
    fab = dumbbell(2, rate_bps=RATE)
    net = Network(fab, loop, 1 << 20, lambda a, b: f"{a}-{b}", lambda s, d, p: None)
    nic = SimNic(fab.host_ips["h0"], RATE, CcConfig.default("none", 10e9, Scale(1000)),
                 TransportParams(rto_s=10.0, nak_timeout_s=1.0), network=net,
                 clock=lambda: loop.now)
    net.attach("h0", nic, lambda t: None)
    nic.send(fab.host_ips["h1"], 1, 0, 0, bytes(4096 * packets))
    return nic, loop


def test_no_data_leaves_while_paused_and_it_goes_again_at_xon():
    """Two frames at line rate (t = 0 and one frame time later), then a PAUSE of 65535
    quanta at 2.5 frame times (3.355 s at 10 Mb/s): nothing at the third frame's time;
    the NIC asks to be woken when the quanta end. An XON at 10 frame times: the third
    frame leaves at once, on time (no pacing lateness from the pause)."""
    nic, loop = nic_sending(6)
    assert nic.service(0.0) == pytest.approx(FRAME_S)
    nic.service(FRAME_S)
    assert nic.counters["data_tx"] == 2
    t_pause = 2.5 * FRAME_S
    nic.on_pause(pause.encode(bytes(6), {pause.DATA_PRIORITY: 65535}), t_pause)
    wake = nic.service(2 * FRAME_S + 1e-3 + FRAME_S)
    assert nic.counters["data_tx"] == 2
    assert wake == pytest.approx(t_pause + pause.pause_s(65535, RATE))
    t_xon = 10 * FRAME_S
    nic.on_pause(pause.encode(bytes(6), {pause.DATA_PRIORITY: 0}), t_xon)
    nic.service(t_xon)
    assert nic.counters["data_tx"] == 3
    assert nic.pacing_late_s[2] == pytest.approx(0.0, abs=1e-12)
    assert nic.pause.paused_s(100.0) == pytest.approx(t_xon - t_pause)


def test_a_pause_that_is_not_refreshed_ends_with_its_quanta():
    """A PAUSE of 1000 quanta (51.2 ms at 10 Mb/s) at t = 0, before the first send:
    the first frame leaves when it ends."""
    nic, loop = nic_sending(2)
    nic.on_pause(pause.encode(bytes(6), {pause.DATA_PRIORITY: 1000}), 0.0)
    end = pause.pause_s(1000, RATE)
    assert end == pytest.approx(51.2e-3)
    assert nic.service(0.0) == pytest.approx(end)
    nic.service(end)
    assert nic.counters["data_tx"] == 1


def test_a_pause_of_another_priority_stops_nothing():
    nic, loop = nic_sending(2)
    nic.on_pause(pause.encode(bytes(6), {0: 65535, 4: 65535}), 0.0)
    nic.service(0.0)
    assert nic.counters["data_tx"] == 1 and not nic.pause.paused(0.0)
