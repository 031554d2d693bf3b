"""Tests for hosts/gbn.py's sender: timeout, ACK validation, window, constructor arguments."""

import pytest

from hosts.gbn import ACK, GbnReceiver, GbnSender
from tests.gbn_util import Channel


# --- retransmission timeout ----------------------------------------------------------

def test_rto_rewinds_to_snd_una_only_after_rto_without_progress():
    snd = GbnSender(10, rto_s=1.0)
    for psn in range(5):
        snd.sent(psn, 0.0)
    assert snd.check_timeout(0.999) is False
    assert snd.next_psn() == 5
    assert snd.check_timeout(1.0) is True
    assert snd.next_psn() == 0 and snd.timeouts == 1
    assert snd.check_timeout(1.5) is False      # the timer restarted at the timeout
    assert snd.check_timeout(2.0) is True
    assert snd.timeouts == 2
    for psn in range(5):
        snd.sent(psn, 2.0)
    assert snd.on_ack(2, 2.5) is True           # progress at 2.5
    assert snd.check_timeout(3.499) is False
    assert snd.check_timeout(3.5) is True
    assert snd.next_psn() == 3 and snd.timeouts == 3


def test_rto_counts_from_the_last_transmission_so_a_slow_paced_sender_never_times_out():
    # ack_every 8 at a low DCQCN rate: eight sends 0.4 s apart take 2.8 s before the
    # first ACK can exist; a timer that ran from the first send would fire at 1.0 s and
    # rewind a flow that lost nothing (the spurious go-back-N this transport once did).
    snd = GbnSender(16, rto_s=1.0)
    for psn in range(8):
        snd.sent(psn, 0.4 * psn)
        assert snd.check_timeout(0.4 * psn + 0.399) is False
    assert snd.on_ack(7, 2.9) is True
    assert snd.timeouts == 0 and snd.retransmits == 0
    snd.sent(8, 3.0)                            # then silence: the backstop still fires
    assert snd.check_timeout(3.999) is False
    assert snd.check_timeout(4.0) is True and snd.next_psn() == 8


def test_no_timeout_when_nothing_is_outstanding():
    snd = GbnSender(6, rto_s=1.0, max_outstanding=3)
    assert snd.check_timeout(100.0) is False    # nothing sent yet
    for psn in range(3):
        snd.sent(psn, 100.0)
    assert snd.on_ack(2, 100.5)                 # everything sent is acknowledged
    assert snd.check_timeout(200.0) is False
    snd.sent(3, 300.0)                          # the timer starts at this send ...
    assert snd.check_timeout(300.999) is False  # ... not at the last ACK (100.5)
    assert snd.check_timeout(301.0) is True
    assert snd.next_psn() == 3
    for psn in range(3, 6):
        snd.sent(psn, 301.0)
    assert snd.on_ack(5, 301.5)
    assert snd.done
    assert snd.check_timeout(1000.0) is False
    assert snd.timeouts == 1


# --- ACK validation ------------------------------------------------------------------

def test_stale_ack_is_ignored_and_does_not_refresh_the_timer():
    ch = Channel(12, ack_every=4, rto_s=1.0)
    ch.send()
    acks = ch.deliver_all()
    assert acks == [(ACK, 3), (ACK, 7), (ACK, 11)]
    ch.drop_response(2)                         # keep the final ACK out of the way
    ch.resp.reverse()                           # ACK(7) overtakes ACK(3)
    ch.now = 0.5
    ch.respond()
    assert ch.snd.snd_una == 8
    ch.now = 1.4
    ch.respond()                                # ACK(3): stale
    assert ch.ack_results == [True, False]
    assert ch.snd.snd_una == 8 and ch.snd.next_psn() is None
    assert ch.snd.on_ack(7, 1.45) is False      # repeat of the newest ACK: also stale
    assert ch.snd.check_timeout(1.5) is True    # measured from 0.5, not from 1.4/1.45
    assert ch.snd.next_psn() == 8


def test_ack_for_a_psn_never_sent_is_ignored():
    snd = GbnSender(10, rto_s=1.0)
    for psn in range(5):
        snd.sent(psn, 0.0)
    assert snd.on_ack(5, 0.1) is False
    assert snd.on_ack(9, 0.1) is False          # would complete the flow if accepted
    assert snd.snd_una == 0 and not snd.done
    assert snd.on_ack(4, 0.2) is True
    assert snd.snd_una == 5


def test_ack_after_rewind_moves_next_psn_past_acknowledged_data():
    snd = GbnSender(10, rto_s=1.0)
    for psn in range(8):
        snd.sent(psn, 0.0)
    snd.check_timeout(1.0)                      # rewind to 0
    snd.sent(0, 1.0)
    assert snd.on_ack(5, 1.1) is True           # a late ACK from the first round
    assert snd.next_psn() == 6


# --- window --------------------------------------------------------------------------

def test_max_outstanding_limits_unacknowledged_packets():
    snd = GbnSender(10, rto_s=1.0, max_outstanding=3)
    for psn in range(3):
        assert snd.next_psn() == psn
        snd.sent(psn, 0.0)
    assert snd.next_psn() is None
    snd.on_ack(0, 0.1)
    assert snd.next_psn() == 3
    snd.sent(3, 0.1)
    assert snd.next_psn() is None
    snd.on_nak(2, 0.2)                          # 0..1 arrived; go back to 2
    assert snd.snd_una == 2
    assert snd.next_psn() == 2
    snd.sent(2, 0.2)
    snd.sent(3, 0.2)
    snd.sent(4, 0.2)
    assert snd.next_psn() is None               # 2, 3, 4 outstanding
    assert snd.retransmits == 2


# --- constructor arguments -----------------------------------------------------------

@pytest.mark.parametrize("n", [0, -1])
def test_sender_rejects_empty_message(n):
    with pytest.raises(ValueError, match="at least one packet"):
        GbnSender(n, rto_s=1.0)


@pytest.mark.parametrize("rto", [0.0, -1.0])
def test_sender_rejects_non_positive_rto(rto):
    with pytest.raises(ValueError, match="rto_s"):
        GbnSender(5, rto_s=rto)


@pytest.mark.parametrize("ack_every", [0, -3])
def test_receiver_rejects_ack_every_below_one(ack_every):
    with pytest.raises(ValueError, match="ack_every"):
        GbnReceiver(ack_every=ack_every)


@pytest.mark.parametrize("window", [0, -1])
def test_sender_rejects_non_positive_max_outstanding(window):
    with pytest.raises(ValueError, match="max_outstanding"):
        GbnSender(5, rto_s=1.0, max_outstanding=window)
