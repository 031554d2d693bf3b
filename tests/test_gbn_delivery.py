"""Tests for hosts/gbn.py's delivery: lossless, NAK and go-back, duplicates, random faults."""

import random

import pytest

from hosts.gbn import ACK, NAK, GbnReceiver, GbnSender
from tests.gbn_util import Channel


# --- lossless ------------------------------------------------------------------------

def test_lossless_transfer_coalesces_acks_every_ack_every_and_on_last():
    ch = Channel(20, ack_every=8)
    assert ch.send() == list(range(20))
    assert ch.deliver_all() == [(ACK, 7), (ACK, 15), (ACK, 19)]
    assert ch.delivered == list(range(20))
    assert ch.rcv.done and ch.rcv.acks_sent == 3
    ch.respond()
    assert ch.snd.snd_una == 8 and not ch.snd.done
    ch.respond()
    assert ch.snd.snd_una == 16 and not ch.snd.done
    ch.respond()
    assert ch.snd.done
    assert ch.snd.retransmits == 0 and ch.snd.timeouts == 0
    assert ch.snd.next_psn() is None


@pytest.mark.parametrize("n", [1, 3])
def test_short_message_is_acked_on_last(n):
    ch = Channel(n, ack_every=8)
    ch.send()
    assert ch.deliver_all() == [(ACK, n - 1)]
    ch.respond_all()
    assert ch.snd.done and ch.rcv.done


def test_receiver_done_only_when_last_arrives_in_order():
    rcv = GbnReceiver(ack_every=8, nak_timeout_s=1.0)
    assert rcv.on_data(0, False, 0.0) == (True, None)
    assert rcv.on_data(2, True, 0.0) == (False, (NAK, 1))    # LAST, but out of order
    assert not rcv.done
    assert rcv.on_data(1, False, 0.0) == (True, None)
    assert rcv.on_data(2, True, 0.0) == (True, (ACK, 2))
    assert rcv.done


# --- loss: NAK and go-back -----------------------------------------------------------

def test_gap_sends_one_nak_drops_out_of_order_and_sender_goes_back():
    ch = Channel(10, ack_every=100, nak_timeout_s=1.0)
    ch.send()
    ch.drop(2)
    assert ch.deliver() is None and ch.deliver() is None          # 0, 1
    assert ch.deliver() == (NAK, 2)                               # 3: gap at 2
    assert ch.deliver_all() == []                                 # 4..9: NAK suppressed
    assert ch.delivered == [0, 1]
    assert ch.rcv.out_of_order == 7 and ch.rcv.naks_sent == 1
    assert not ch.rcv.done                                        # LAST 9 was dropped
    ch.respond()                                                  # NAK(2)
    assert ch.snd.next_psn() == 2
    assert ch.snd.snd_una == 2                                    # NAK: 0, 1 arrived
    assert ch.snd.naks == 1 and not ch.snd.done
    assert ch.send() == list(range(2, 10))
    assert ch.snd.retransmits == 8
    assert ch.deliver_all() == [(ACK, 9)]
    assert ch.delivered == list(range(10))
    ch.respond()
    assert ch.snd.done


def test_nak_suppression_expires_after_nak_timeout():
    rcv = GbnReceiver(ack_every=100, nak_timeout_s=1.0)
    rcv.on_data(0, False, 0.0)
    assert rcv.on_data(2, False, 0.0) == (False, (NAK, 1))
    assert rcv.on_data(3, False, 0.5) == (False, None)
    assert rcv.on_data(4, False, 0.999) == (False, None)
    assert rcv.on_data(5, False, 1.0) == (False, (NAK, 1))        # timeout passed
    assert rcv.on_data(6, False, 1.5) == (False, None)            # re-armed from 1.0
    assert rcv.naks_sent == 2 and rcv.out_of_order == 5


def test_filling_the_gap_rearms_the_nak_for_the_next_gap():
    rcv = GbnReceiver(ack_every=100, nak_timeout_s=10.0)
    assert rcv.on_data(1, False, 0.0) == (False, (NAK, 0))
    assert rcv.on_data(0, False, 0.1) == (True, None)             # gap filled
    assert rcv.on_data(3, False, 0.2) == (False, (NAK, 1))        # new gap: NAK at once
    assert rcv.naks_sent == 2


def test_nak_for_psn_beyond_anything_sent_is_ignored():
    snd = GbnSender(10, rto_s=1.0)
    for psn in range(5):
        snd.sent(psn, 0.0)
    snd.on_nak(7, 0.1)
    assert snd.snd_una == 0 and snd.next_psn() == 5


def test_reordered_data_is_recovered_with_each_psn_delivered_once():
    ch = Channel(6, ack_every=100, nak_timeout_s=10.0)
    ch.send()
    ch.data = [0, 1, 3, 2, 4, 5]                # 2 and 3 swapped in the network
    assert ch.deliver_all() == [(NAK, 2), (NAK, 3)]
    # 3 is dropped as out of order, 2 is delivered (and clears the NAK), 4 re-NAKs at 3
    assert ch.delivered == [0, 1, 2]
    assert ch.rcv.out_of_order == 3             # 3, 4, 5
    ch.respond()                                # NAK(2)
    assert ch.send() == [2, 3, 4, 5]
    assert ch.deliver_all() == [(ACK, 5)]       # 2 is a duplicate now; 3, 4, 5 in order
    assert ch.rcv.duplicates == 1
    ch.respond_all()                            # NAK(3) (late) then ACK(5)
    assert ch.delivered == list(range(6))
    assert ch.snd.done and ch.rcv.done


def test_two_reordered_naks_send_the_sender_to_the_later_nakd_psn():
    # Same network reordering as above, but both NAKs reach the sender before it
    # retransmits: NAK(2) rewinds snd_nxt to 2, then NAK(3) says 0..2 arrived.
    ch = Channel(6, ack_every=100, nak_timeout_s=10.0)
    ch.send()
    ch.data = [0, 1, 3, 2, 4, 5]
    ch.deliver_all()
    ch.respond()                                # NAK(2): snd_una = snd_nxt = 2
    ch.respond()                                # NAK(3): snd_una = 3
    assert ch.snd.snd_una == 3
    assert ch.snd.next_psn() == 3               # actual: 2


def test_late_nak_after_timeout_rewind_moves_sender_forward_to_nakd_psn():
    snd = GbnSender(10, rto_s=1.0)
    for psn in range(10):
        snd.sent(psn, 0.0)
    assert snd.check_timeout(1.0)               # no ACK at all: rewind to 0
    assert snd.next_psn() == 0
    snd.on_nak(5, 1.1)                          # the receiver had 0..4 and lost 5
    assert snd.snd_una == 5
    assert snd.next_psn() == 5                  # actual: 0


# --- duplicates and the lost final ACK -----------------------------------------------

def test_duplicates_not_delivered_and_reacked_every_ack_every_duplicates():
    ch = Channel(10, ack_every=4)
    ch.send(4)
    assert ch.deliver_all() == [(ACK, 3)]
    ch.data = [1, 2, 3, 0, 2, 1, 0, 3]          # eight duplicates
    assert [ch.deliver() for _ in range(3)] == [None, None, None]
    assert ch.deliver() == (ACK, 3)             # 4th duplicate: re-ACK highest in order
    assert [ch.deliver() for _ in range(3)] == [None, None, None]
    assert ch.deliver() == (ACK, 3)             # 8th
    assert ch.delivered == [0, 1, 2, 3]
    assert ch.rcv.duplicates == 8 and ch.rcv.expected == 4


def test_duplicated_packets_in_flight_are_delivered_once():
    ch = Channel(8, ack_every=4)
    ch.send()
    for psn in (0, 3, 3, 6):
        ch.duplicate(psn)
    assert ch.data == [0, 0, 1, 2, 3, 3, 3, 4, 5, 6, 6, 7]
    # ACK(3) after 0..3; the 4th duplicate (the copy of 6) re-ACKs 6; ACK(7) on LAST
    assert ch.deliver_all() == [(ACK, 3), (ACK, 6), (ACK, 7)]
    assert ch.delivered == list(range(8))
    assert ch.rcv.duplicates == 4 and ch.rcv.out_of_order == 0


def test_duplicate_last_is_reacked_immediately():
    rcv = GbnReceiver(ack_every=8, nak_timeout_s=1.0)
    for psn in range(3):
        rcv.on_data(psn, psn == 2, 0.0)
    assert rcv.done
    assert rcv.on_data(2, True, 1.0) == (False, (ACK, 2))
    assert rcv.on_data(2, True, 2.0) == (False, (ACK, 2))
    assert rcv.on_data(1, False, 3.0) == (False, None)     # not LAST, 3rd dup < 8


def test_lost_final_ack_is_recovered_by_sender_timeout_and_reack_of_last():
    ch = Channel(10, ack_every=4, rto_s=1.0)
    ch.send()
    assert ch.deliver_all() == [(ACK, 3), (ACK, 7), (ACK, 9)]
    ch.respond()
    ch.respond()
    ch.drop_response()                          # the final ACK(9) is lost
    assert ch.snd.snd_una == 8 and not ch.snd.done
    assert ch.rcv.done
    assert ch.advance(0.999) is False
    assert ch.advance(0.001) is True            # rto_s after the last progress (ACK 7)
    assert ch.snd.timeouts == 1
    assert ch.send() == [8, 9]
    assert ch.snd.retransmits == 2
    assert ch.deliver() is None                 # 8: duplicate, not LAST
    assert ch.deliver() == (ACK, 9)             # 9: duplicate LAST -> re-ACK
    ch.respond()
    assert ch.snd.done
    assert ch.delivered == list(range(10))


# --- randomized: loss, duplication, reordering ---------------------------------------

def perturb(rng, queue, p_loss=0.05, p_dup=0.05, p_swap=0.1):
    """Drop / duplicate each item independently, then occasionally swap two neighbours."""
    out = []
    for item in queue:
        if rng.random() < p_loss:
            continue
        out.append(item)
        if rng.random() < p_dup:
            out.append(item)
    for i in range(len(out) - 1):
        if rng.random() < p_swap:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


MAX_ROUNDS = 1000


@pytest.mark.parametrize("seed", range(12))
def test_random_loss_duplication_reordering_delivers_exactly_once_in_order(seed):
    rng = random.Random(seed)
    n = 60
    ch = Channel(n, ack_every=4, rto_s=6.0, nak_timeout_s=2.0, max_outstanding=16)
    stats = {"data_lost": 0, "rounds": 0}
    for rnd in range(1, MAX_ROUNDS + 1):
        fresh = ch.send(count=rng.randint(1, 8))
        perturbed = perturb(rng, fresh)
        stats["data_lost"] += len(fresh) - len(set(perturbed))
        # new packets join those still in flight; occasionally one overtakes an old one
        ch.data = perturb(rng, ch.data + perturbed, p_loss=0.0, p_dup=0.0)
        for _ in range(rng.randint(0, len(ch.data))):      # some packets stay in flight
            ch.deliver()
            assert ch.delivered == list(range(len(ch.delivered)))   # always a prefix
        ch.resp = perturb(rng, ch.resp)
        for _ in range(rng.randint(0, len(ch.resp))):
            ch.respond()
        ch.advance(1.0)
        if ch.snd.done:
            stats["rounds"] = rnd
            break
    assert ch.snd.done, f"seed {seed}: not complete after {MAX_ROUNDS} rounds"
    assert ch.rcv.done
    assert ch.delivered == list(range(n))
    assert stats["rounds"] <= 300, stats
    # the run really exercised the recovery paths
    assert ch.snd.retransmits > 0
    assert ch.rcv.duplicates + ch.rcv.out_of_order > 0
