"""Shared helper for the go-back-N tests: a Channel joining a GbnSender and a GbnReceiver."""

from hosts.gbn import ACK, GbnReceiver, GbnSender


class Channel:
    """One GbnSender and one GbnReceiver connected by explicit in-flight lists."""

    def __init__(self, n, *, ack_every=4, rto_s=1.0, nak_timeout_s=0.5, max_outstanding=None):
        self.n = n
        self.now = 0.0
        self.snd = GbnSender(n, rto_s, 0.0, max_outstanding)
        self.rcv = GbnReceiver(ack_every, nak_timeout_s)
        self.data = []          # PSNs in flight sender -> receiver (front first)
        self.resp = []          # (ACK|NAK, psn) in flight receiver -> sender
        self.delivered = []     # PSNs the receiver handed to the layer above
        self.ack_results = []   # what on_ack returned, per ACK fed to the sender

    # sender side
    def send(self, count=None):
        """Transmit what the sender allows (at most ``count``); returns the PSNs sent."""
        out = []
        while count is None or len(out) < count:
            psn = self.snd.next_psn()
            if psn is None:
                break
            self.snd.sent(psn, self.now)
            self.data.append(psn)
            out.append(psn)
        return out

    # data path
    def deliver(self, psn=None):
        """Deliver the first packet in flight (or the first copy of ``psn``); returns the
        receiver's response (which is also queued towards the sender)."""
        p = self.data.pop(0 if psn is None else self.data.index(psn))
        ok, resp = self.rcv.on_data(p, p == self.n - 1, self.now)
        if ok:
            self.delivered.append(p)
        if resp is not None:
            self.resp.append(resp)
        return resp

    def deliver_all(self):
        out = []
        while self.data:
            r = self.deliver()
            if r is not None:
                out.append(r)
        return out

    def drop(self, psn):
        self.data.remove(psn)

    def duplicate(self, psn):
        self.data.insert(self.data.index(psn) + 1, psn)

    # response path
    def respond(self, i=0):
        kind, psn = self.resp.pop(i)
        if kind == ACK:
            self.ack_results.append(self.snd.on_ack(psn, self.now))
        else:
            self.snd.on_nak(psn, self.now)
        return kind, psn

    def respond_all(self):
        while self.resp:
            self.respond()

    def drop_response(self, i=0):
        return self.resp.pop(i)

    # clock
    def advance(self, dt):
        self.now += dt
        return self.snd.check_timeout(self.now)
