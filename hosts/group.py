"""A host process: one event loop serving one or several emulated hosts.

    python -m hosts.group --config h0.group.json

The configuration (``hosts.config.GroupConfig``, written by the launcher) lists the
hosts: each one's ``HostConfig`` file, the file its protocol lines go to, and a process
in its network namespace. Each host keeps everything it has on its own -- its NIC (queue
pairs, pacing clocks, congestion control, notification point), its sockets, created in
its own namespace (``runtime.netns``), so its packets leave through its own interface and
qdisc, its ranks or messages and its telemetry file. What the hosts share is the
process: one sleep on all their sockets until the soonest of their pacing deadlines,
timers and program times, so the machine runs one wake-up where it ran one per host
(docs/architecture.md §3.4; on two cores a wake-up costs more CPU than the packet).

The protocol, per host (docs/architecture.md §9): set-up (schedules, expected results,
sockets) for all of them, then ``{"ready": true}`` in each host's file; t = 0 from stdin
(in ``CLOCK_REALTIME``, converted to this process's monotonic clock: ``hosts.clock``); ``{"progress": n, "of": m}`` lines while it runs;
``{"finished": true}`` once it has finished (or timed out); then it lingers, serving its
NIC so that a peer whose last ACK was lost and who sends again is ACKed, until ``end``
on stdin (the launcher writes it once every host of the run has finished: then nobody
waits for anything) or its ``linger_limit_s``; then its summary (a JSON object with
``"type"``). The process exits 0 only if every host's summary is ok.

``SYMPHONY_EMU_PROFILE_DIR=DIR``: write a cProfile of the process to
``DIR/<first host>.prof`` (``benchmarks/host_cpu.py``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import select
import signal
import sys
import time
from dataclasses import replace

from hosts import clock
from hosts.config import STDOUT, GroupConfig, HostConfig, MemberConfig
from hosts.host import MessageHost
from hosts.rank import RankHost, udp_counters
from runtime import netns, sched
from runtime.records import encode

PROFILE_ENV = "SYMPHONY_EMU_PROFILE_DIR"
TIMER_SLACK_S = 1e-6               # sleeps end on time (runtime.sched)


class _Tagged:
    """A host's protocol lines on the process's stdout, each ``@<host> <line>``: where the
    process runs on a server reached over ssh, its stdout is the one channel back, and
    the launcher sorts the lines into each host's file (``emulator.launch.launcher``)."""

    def __init__(self, host: str):
        self.prefix = f"@{host} "

    def write(self, text: str) -> None:
        for line in text.splitlines():
            sys.stdout.write(self.prefix + line + "\n")
        sys.stdout.flush()

    def flush(self) -> None:
        sys.stdout.flush()

    def close(self) -> None:
        sys.stdout.flush()


class Member:
    """One host of the process: its program (``RankHost`` or ``MessageHost``), its clock
    of deadlines, and its protocol file."""

    def __init__(self, mc: MemberConfig, clock):
        with open(mc.config) as f:
            self.cfg = HostConfig.from_dict(json.load(f))
        self.out = _Tagged(self.cfg.name) if mc.out == STDOUT else open(mc.out, "a", buffering=1)
        self.ns = netns.Namespace(mc.netns_pid or None)
        kind = RankHost if self.cfg.ranks else MessageHost
        nic_args = {"socket_factory": self.ns.socket}
        if self.cfg.pfc:
            nic_args["pfc"] = True
        self.host = kind(self.cfg, nic_args, self.say, clock)
        self.fds = self.host.nic.fds       # its UDP socket (and its PAUSE socket)
        self.due = 0.0                     # when the host next needs a turn
        self.deadline = math.inf           # t0 + its timeout
        self.linger_until: float | None = None
        self.timed_out = False
        self.clock: dict | None = None     # what the start line showed (hosts.clock)

    def say(self, msg: dict) -> None:
        self.out.write(json.dumps(msg) + "\n")

    def finish(self, group_size: int) -> bool:
        """Write the host's summary (telemetry and protocol file), close it; ok?"""
        host = self.host
        try:
            summary = host.summary(self.timed_out, udp_counters(self.ns.proc_path("snmp")))
            if self.cfg.pfc and (host.nic.pause.pauses or host.nic.pause.resumes):
                host.tele.write(host.nic.pause_record(f"{self.cfg.name}-eth0"))
        finally:
            host.nic.close()
            self.ns.close()
        use = resource.getrusage(resource.RUSAGE_SELF)
        cpu = use.ru_utime + use.ru_stime
        # CPU and memory are the process's; a host's share of the CPU is an even split.
        # The summary is its telemetry's last line, and counts itself among them.
        summary = replace(summary, cpu_s=cpu / group_size, max_rss_bytes=use.ru_maxrss * 1024,
                          process={"pid": os.getpid(), "hosts": group_size, "cpu_s": cpu,
                                   "sys_s": use.ru_stime}, clock=self.clock,
                          records=host.tele.records + 1)
        host.tele.write(summary)
        host.tele.close()
        self.say(encode(summary))
        self.out.close()
        return summary.ok


def _readable(fds: list[int]):
    """``wait(timeout_s)`` -> the fds of ``fds`` that have something to read: by select(),
    whose timeout is in microseconds (epoll's and poll()'s round up to a whole
    millisecond: at D = 250 that is more than a frame); poll() if an fd is beyond
    select()'s FD_SETSIZE."""
    if max(fds, default=0) < 1024:
        return lambda timeout_s: select.select(fds, (), (), timeout_s)[0]
    p = select.poll()
    for fd in fds:
        p.register(fd, select.POLLIN)
    return lambda timeout_s: [fd for fd, _ in p.poll(math.ceil(timeout_s * 1e3))]


class Lines:
    """The lines of a file descriptor (the launcher's stdin), read without a buffer of
    Python's in between: what the event loop's select() says is readable is all here."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buf = b""
        self.eof = False

    def readline(self) -> str:
        """The next line, blocking ("" at the end)."""
        while b"\n" not in self._buf and not self.eof:
            self._read()
        return self._take()

    def ready(self) -> list[str]:
        """The whole lines there are after one read (select() said it is readable)."""
        if b"\n" not in self._buf:
            self._read()
        out = []
        while b"\n" in self._buf or (self.eof and self._buf):
            out.append(self._take())
        return out

    def _read(self) -> None:
        chunk = os.read(self.fd, 4096)
        self.eof = not chunk
        self._buf += chunk

    def _take(self) -> str:
        line, sep, rest = self._buf.partition(b"\n")
        self._buf = rest
        return (line + sep).decode()


END = "end"                      # the launcher's line: every host of the run has finished


def serve(members: list[Member], t0: float, clock=time.monotonic,
          control: Lines | None = None) -> bool:
    """Run every member from t = ``t0`` until it finished (or timed out) and lingered:
    served its NIC (so a peer's retransmission after our last ACK's loss is re-ACKed)
    until ``control`` said :data:`END` or its ``linger_limit_s`` passed. True if all ok."""
    for m in members:
        m.host.start(t0)
        m.deadline = t0 + m.cfg.timeout_s
        m.due = t0
    by_fd = {fd: m for m in members for fd in m.fds}
    ctl = control.fd if control is not None else None

    def watched():                     # the members' sockets, and the launcher's line
        return _readable(list(by_fd) + ([ctl] if ctl is not None else []))

    readable = watched()
    ok, n = True, len(members)
    live = list(members)
    ended = False                      # END came: nobody needs a finished host any more

    def linger(m: Member, now: float) -> None:
        m.linger_until = now if ended else now + m.cfg.linger_limit_s
        m.say({"finished": True})

    while live:
        now = clock()
        wake = math.inf
        gone = None
        for m in live:
            if m.linger_until is None:
                if now > m.deadline:
                    m.timed_out = True
                    linger(m, now)
                elif m.due <= now:
                    m.due = m.host.service(now)
                    if m.host.finished:
                        linger(m, now)
            if m.linger_until is not None:
                if now >= m.linger_until:
                    gone = (gone or []) + [m]
                    continue
                if m.due <= now:
                    m.due = m.host.nic.service(now)
                wake = min(wake, m.due, m.linger_until)
            else:
                wake = min(wake, m.due, m.deadline)
        for m in gone or ():
            live.remove(m)
            for fd in m.fds:
                del by_fd[fd]
            readable = watched()
            ok &= m.finish(n)
        if not live:
            break
        wait = wake - clock()
        for fd in readable(wait if wait > 0 else 0):
            if fd == ctl:
                assert control is not None
                if any(line.strip() == END for line in control.ready()):
                    ended = True
                    for m in live:
                        if m.linger_until is not None:
                            m.linger_until = min(m.linger_until, now)
                if control.eof:        # the launcher closed it: lingers end by their limit
                    ctl = None
                    readable = watched()
                continue
            m = by_fd[fd]
            m.host.nic.receive()
            # What arrived may have made something due. (Giving the host a turn only after
            # an ACK or a delivered message was measured slower: 8-12 % more CPU per data
            # packet, from more and shorter sleeps -- a wake-up costs more than a turn.)
            m.due = -math.inf
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hosts.group", description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="the process's hosts (a GroupConfig, JSON)")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        group = GroupConfig.from_dict(json.load(f))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sched.set_timer_slack(TIMER_SLACK_S)
    if group.cpu is not None:
        sched.pin(group.cpu)
    members = [Member(mc, time.monotonic) for mc in group.members]
    for m in members:
        m.say({"ready": True})
    stdin = Lines(sys.stdin.fileno())
    line = stdin.readline()
    while (reply := clock.answer(line, time.time())) is not None:   # the clock's probes
        members[0].say(reply)
        members[0].out.flush()
        line = stdin.readline()
    if not line.strip():
        raise SystemExit("no start time on stdin")
    try:
        t0, seen = clock.parse_start(line, time.time(), time.monotonic())
    except clock.StartError as e:
        raise SystemExit(str(e))
    for m in members:
        m.clock = seen
    profile_dir = os.environ.get(PROFILE_ENV)
    if profile_dir:
        import cProfile
        prof = cProfile.Profile()
        ok = prof.runcall(serve, members, t0, time.monotonic, stdin)
        prof.dump_stats(os.path.join(profile_dir, f"{members[0].cfg.name}.prof"))
    else:
        ok = serve(members, t0, control=stdin)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
