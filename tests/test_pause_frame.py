"""The 802.1Qbb PAUSE frame (runtime/pause.py) byte by byte, against scapy's own
dissector, and a paused priority's timer on hand-computed times."""

import math

import pytest

from runtime import pause

MAC = bytes.fromhex("02aabbccddee")


def test_a_pause_frame_is_mac_control_pfc_padded_to_the_minimum_frame():
    """dst 01:80:C2:00:00:01, the sender's MAC, EtherType 0x8808, opcode 0x0101, the
    class-enable vector with bit 3 set, priority 3's quanta at bytes 24-25 (2 x 3 after
    the vector at 16-17, the quanta from 18), zeros to 60 bytes (64 with the FCS)."""
    f = pause.encode(MAC, {3: 0x1234})
    assert len(f) == pause.FRAME_BYTES == 60
    assert f[:6] == bytes.fromhex("0180c2000001") and f[6:12] == MAC
    assert f[12:14] == b"\x88\x08" and f[14:16] == b"\x01\x01"
    assert f[16:18] == b"\x00\x08"                    # bit 3: priority 3 named
    assert f[18:24] == bytes(6) and f[24:26] == b"\x12\x34" and f[26:34] == bytes(8)
    assert f[34:] == bytes(26)


def test_decoding_gives_back_what_was_encoded_and_refuses_other_frames():
    p = pause.decode(pause.encode(MAC, {3: 65535, 5: 0}))
    assert p.src_mac == MAC and p.names(3) and p.names(5) and not p.names(0)
    assert p.quanta == (0, 0, 0, 65535, 0, 0, 0, 0)
    f = bytearray(pause.encode(MAC, {3: 1}))
    assert pause.decode(f[:33]) is None                           # too short
    assert pause.decode(f[:14] + b"\x00\x01" + f[16:]) is None    # 802.3x link PAUSE
    assert pause.decode(f[:12] + b"\x08\x00" + f[14:]) is None    # IPv4, not MAC control
    with pytest.raises(ValueError):
        pause.encode(MAC, {8: 1})
    with pytest.raises(ValueError):
        pause.encode(MAC, {3: 65536})


def test_scapy_dissects_it_as_pfc_and_builds_what_we_decode():
    scapy = pytest.importorskip("scapy.contrib.mac_control")
    from scapy.layers.l2 import Ether
    got = Ether(pause.encode(MAC, {3: 777}))
    cb = got[scapy.MACControlClassBasedFlowControl]
    assert (cb.c3_enabled, cb.c3_pause_time, cb.c0_enabled, cb.c0_pause_time) == (1, 777, 0, 0)
    built = bytes(Ether(dst="01:80:c2:00:00:01", src="02:aa:bb:cc:dd:ee")
                  / scapy.MACControlClassBasedFlowControl(c3_enabled=1, c3_pause_time=9))
    p = pause.decode(built)
    assert p.names(3) and p.quanta[3] == 9 and not p.names(2)


def test_one_quantum_is_512_bit_times_at_the_link_rate_so_dilation_stretches_it():
    """65535 quanta: 65535 x 512 / 10 Gb/s = 3.3553920 ms; at D = 1000 (10 Mb/s) the
    same frame pauses 3.355392 s, like every other time."""
    assert pause.pause_s(65535, 10e9) == pytest.approx(3.355392e-3, rel=1e-12)
    assert pause.pause_s(65535, 10e6) == pytest.approx(3.355392, rel=1e-12)


def test_the_timer_keeps_each_pause_its_refresh_and_resume():
    """On a 512 bit/s link one quantum is 1 s. PAUSE(2) at t = 1: paused until 3; a
    refresh PAUSE(2) at 2: until 4; XON at 3.5: over, 2.5 s paused. PAUSE(1) at 5 and left
    to expire at 6: 3.5 s in all; a resume when not paused changes nothing."""
    t = pause.PauseTimer()
    assert not t.paused(0.0) and t.paused_s(10.0) == 0.0
    t.on_pause(2, 512.0, 1.0)
    assert t.paused(2.9) and t.until_s == 3.0
    t.on_pause(2, 512.0, 2.0)
    assert t.until_s == 4.0 and t.paused_s(3.0) == 2.0
    t.on_pause(0, 512.0, 3.5)
    assert not t.paused(3.5) and t.paused_s(100.0) == 2.5
    t.on_pause(1, 512.0, 5.0)
    assert t.paused_s(5.5) == 3.0 and t.paused_s(100.0) == 3.5
    t.on_pause(0, 512.0, 7.0)
    assert (t.pauses, t.resumes) == (3, 2)
    assert t.all_intervals(100.0) == [(1.0, 3.5), (5.0, 6.0)]
    assert math.isclose(t.paused_s(100.0), 3.5)
