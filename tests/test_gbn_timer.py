"""A sender woken at exactly the time its timer said fires it (a virtual clock wakes it at
that instant; with the check written as a difference, rounding kept it from firing and
the simulator woke the host for ever)."""

from hosts.gbn import GbnSender


def test_the_timeout_fires_at_exactly_the_time_timeout_at_gives():
    g = GbnSender(64, 0.1, 0.0)
    for t in (0.6407328000000002, 1.9923408, 2.0923408000000001):
        g.sent(0, t)                     # data out, the timer restarted at t
        at = g.timeout_at()
        assert not g.check_timeout(at - 1e-9)
        assert g.check_timeout(at), (t, at)
