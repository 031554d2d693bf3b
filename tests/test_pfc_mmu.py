"""A switch's PFC decisions (switch_agent/pfc.py) on a two-into-one incast, every XOFF
and XON point computed by hand from HPCC's rule (the module's docstring):

    buffer 100000 B, 3 ports, headroom 10000 B and reserve 4096 B each, alpha 1/8,
    resume offset 3072 B, 1000-byte frames:
    shared pool F = 100000 - 3 x (10000 + 4096) = 57712 B; T = (F - S) / 8.

Ports 0 and 1 take frames in turn (0, 1, 0, 1, ...); port 2 (the egress's own link)
nothing. A port's first 4 frames sit in its reserve (4000 <= 4096); from the 5th its
bytes beyond the reserve are s = 1000 k - 4096 after k frames."""

import math

import pytest

from switch_agent.config import PfcParams
from switch_agent.pfc import REFRESH_FRACTION, Mmu

PARAMS = PfcParams(buffer_bytes=100_000, headroom_bytes=10_000, alpha=0.125,
                   reserve_bytes=4096, resume_offset_bytes=3072, quanta=65535)
RATE = 10e9
FRAME = 1000
ARRIVAL_S = 0.4e-6                 # two senders at 10 Gb/s, 1000 B frames, in turn
FRAME_S = FRAME * 8 / RATE         # 0.8 us: the egress sends one


def incast(mmu: Mmu, frames: int) -> list[tuple[int, int, float]]:
    """Frames 1..``frames`` to ports 0, 1, 0, ... at k x 0.4 us; (frame, port, time) of
    each XOFF."""
    out = []
    for k in range(1, frames + 1):
        port, t = (k - 1) % 2, k * ARRIVAL_S
        assert mmu.fits(port, FRAME)
        p = mmu.admit(port, FRAME, t)
        if p is not None:
            assert p.quanta == 65535 and p.ingress == port
            out.append((k, port, t))
    return out


def test_each_port_sends_xoff_where_its_shared_bytes_meet_the_falling_threshold():
    """Port 0 at its k-th frame (port 1 has k - 1): s0 = 1000k - 4096, S = 2000k - 9192,
    XOFF once 8 s0 >= F - S, i.e. 10000 k >= 99672: k = 10, frame 19 overall (s0 = 5904
    >= T = (57712 - 10808) / 8 = 5863). Port 1's 10th frame (20th) finds s1 + 1000 = 5904
    above T = 5863: it goes to port 1's headroom, and that is an XOFF too."""
    mmu = Mmu(PARAMS, [RATE] * 3)
    assert mmu.free_bytes == 57712
    xoffs = incast(mmu, 20)
    assert xoffs == [(19, 0, 19 * ARRIVAL_S), (20, 1, 20 * ARRIVAL_S)]
    assert (mmu.shared_of(0), mmu.shared_of(1), mmu.shared_used) == (5904, 4904, 10808)
    assert mmu.headroom_used == [0, 1000, 0]
    assert mmu.threshold() == pytest.approx(5863.0)
    assert mmu.paused == [True, True, False]


def test_xon_comes_once_a_port_holds_no_headroom_and_is_the_offset_below_the_threshold():
    """After the 20 frames port 0 gets one more (in flight when it paused: s0 + 1000 >
    T, so into its headroom). The egress, itself held until t = 10 us, then sends them in
    arrival order, one per 0.8 us, each leaving the ingress account as it starts; a port's
    headroom bytes go first. Releases 1, 2 empty the headrooms; then (s, S, T = (F-S)/8):
    3: port 0 4904, 9808, 5988; 4: port 1 3904, 8808, 6113; 5: port 0 3904, 7808, 6238;
    6: port 1 2904, 6808, 6363 and 2904 + 3072 <= 6363: XON for port 1 at 10 + 5 x 0.8 =
    14.0 us; 7: port 0 2904, 5808, 6488: XON at 14.8 us. Port 0 was paused from frame 19
    (7.6 us) to 14.8 us: 7.2 us; port 1 from frame 20 (8.0 us) to 14.0 us: 6.0 us."""
    mmu = Mmu(PARAMS, [RATE] * 3)
    xoff = {port: t for _, port, t in incast(mmu, 20)}
    assert mmu.admit(0, FRAME, 21 * ARRIVAL_S) is None       # already paused
    assert mmu.headroom_used == [1000, 1000, 0]
    xon = {}
    for k in range(1, 9):
        port, t = (k - 1) % 2, 10e-6 + (k - 1) * FRAME_S
        p = mmu.release(port, FRAME, t)
        if p is not None:
            assert p.quanta == 0 and math.isinf(p.refresh_at_s)
            xon[port] = (k, t)
    assert xon == {1: (6, pytest.approx(14.0e-6)), 0: (7, pytest.approx(14.8e-6))}
    assert xon[0][1] - xoff[0] == pytest.approx(7.2e-6)
    assert xon[1][1] - xoff[1] == pytest.approx(6.0e-6)
    assert mmu.paused == [False, False, False]
    assert (mmu.xoff_sent[:2], mmu.xon_sent[:2]) == ([1, 1], [1, 1])


def test_an_xoff_is_refreshed_at_half_its_pause_until_the_port_resumes():
    """65535 quanta at 10 Gb/s pause 3.355392 ms: the XOFF asks again 1.677696 ms later;
    asked then, the MMU sends it again; asked after the XON, nothing."""
    mmu = Mmu(PARAMS, [RATE] * 3)
    incast(mmu, 18)
    p = mmu.admit(0, FRAME, 1e-3)
    assert p is not None and p.refresh_at_s == pytest.approx(1e-3 + 3.355392e-3 / 2)
    assert REFRESH_FRACTION == 0.5
    assert mmu.refresh(0, p.refresh_at_s - 1e-9) is None        # not yet its time
    again = mmu.refresh(0, p.refresh_at_s)
    assert again is not None and again.quanta == 65535
    assert again.refresh_at_s == pytest.approx(p.refresh_at_s + 3.355392e-3 / 2)
    while mmu.paused[0]:
        mmu.release(0, FRAME, 6e-3)
    assert mmu.refresh(0, again.refresh_at_s) is None
    assert mmu.xoff_sent[0] == 2


def test_a_frame_is_dropped_only_once_the_headroom_is_full():
    """Port 0 past its threshold: its next 10 frames fill its 10000-byte headroom, the
    11th fits neither there nor under the threshold."""
    mmu = Mmu(PARAMS, [RATE] * 3)
    incast(mmu, 20)
    for _ in range(10):
        assert mmu.fits(0, FRAME)
        mmu.admit(0, FRAME, 1e-5)
    assert mmu.headroom_used[0] == 10_000 and not mmu.fits(0, FRAME)
    assert mmu.max_bytes[0] == 10_000 + 10_000


def test_headroom_and_reserve_that_leave_nothing_to_share_are_refused():
    with pytest.raises(ValueError, match="leave nothing"):
        Mmu(PfcParams(buffer_bytes=42_288, headroom_bytes=10_000), [RATE] * 3)
