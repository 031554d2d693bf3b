"""The one launcher of host processes, for ``run``, the live CLI and message runs.

    procs = HostProcesses(fab, plan.hosts, rundir)
    procs.start()                      # the processes that serve the hosts (hosts.group)
    t0 = procs.go()                    # ready barrier, then the shared t = 0
    while procs.running: procs.poll(0.25); print(procs.progress)
    procs.stop()                       # SIGTERM, then SIGKILL; every exit code recorded

The protocol (docs/architecture.md §9): the launcher writes each ``HostConfig`` as
``<host>.host.json`` and, per process, the hosts it serves as ``<first>.group.json``
(``hosts.config.GroupConfig``). The process (``python -m hosts.group``), started in its
first host's namespace, sets up every host (imports, sockets in each host's namespace,
schedules, expected results), writes ``{"ready": true}`` for each, reads t = 0 (in
``CLOCK_REALTIME``, ``hosts.clock``) from its stdin, runs, writing ``{"progress": n, "of": m}``
lines and ``{"finished": true}`` when a host has finished, lingers (serving its NIC for
peers that send again) until the launcher, having seen every host finished, writes
``end`` on each process's stdin, and ends each host with its summary (a JSON object with
``"type"``). A host's
lines go to ``<host>.host.out``; the process's stdout and stderr to
``<first>.host.log``, so a crashed or killed process leaves its last words behind and a
caller that does not read for a while (the interactive CLI) never blocks a host on a
full pipe. The launcher owns every process it starts: nothing it started outlives
:meth:`stop`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace

from emulator.launch.capacity import default_processes
from hosts import clock
from hosts.config import STDOUT, GroupConfig, HostConfig, MemberConfig
from runtime import sched
from topologies import fabric, wiring

READY_TIMEOUT_S = 120.0           # set-up: imports and expected results of every host
START_DELAY_S = 0.2               # from the last "ready" to t = 0


class HostProcesses:
    def __init__(self, fab, configs: dict[str, HostConfig], rundir: str,
                 processes: int = 0, pin: bool = True):
        self.fab, self.rundir = fab, rundir
        self.pin = pin
        self.configs = dict(configs)
        self.processes = processes or default_processes(len(configs))
        self.groups: list[tuple[tuple[str, ...], subprocess.Popen]] = []
        self.procs: dict[str, subprocess.Popen] = {}     # host -> the process serving it
        self.ready: set[str] = set()
        self.finished: set[str] = set()       # hosts that said they need nothing more
        self.ended = False                    # the processes were told: all finished
        self.done: dict[str, int] = {h: 0 for h in configs}
        self.summaries: dict[str, dict] = {}
        self.exit_codes: dict[str, int] = {}
        self.t_start: float | None = None
        self._offsets: dict[str, int] = {}
        self._partial: dict[str, str] = {}
        self._readers: list[threading.Thread] = []    # remote processes' line sorters
        self._answers: dict[tuple[str, int], tuple[float, float]] = {}   # clock probes
        self.clocks: list[dict] = []      # each process's clock against this one's

    @property
    def total(self) -> int:
        return sum(c.total_steps for c in self.configs.values())

    @property
    def progress(self) -> tuple[int, int]:
        """(steps applied, steps in all) over every host."""
        return sum(self.done.values()), self.total

    @property
    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs.values())

    def _path(self, host: str, suffix: str) -> str:
        return os.path.join(self.rundir, f"{host}.{suffix}")

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        """Write each host's configuration and start the processes that serve them (not
        yet at t = 0): ``processes`` of them, each serving a contiguous share of the hosts
        from the namespace of its first (``hosts.group``)."""
        # numpy's BLAS thread pool is of no use to a rank (elementwise sums only) and costs
        # each process ~0.1 CPU-s of start-up on this machine (issue 15)
        env = dict(os.environ, PYTHONPATH=wiring.REPO_ROOT, OPENBLAS_NUM_THREADS="1")
        try:
            shares = self._shares()
            for i, hosts in enumerate(shares):
                node = self.fab[hosts[0]]
                # on a server reached over ssh: files in its folder there, protocol lines
                # back on the process's stdout (cluster.remote)
                remote = getattr(node, "access", None) is not None
                members = []
                for host in hosts:
                    cfg = replace(self.configs[host],
                                  telemetry_path=node.there(self._path(host, "jsonl")))
                    self.configs[host] = cfg
                    with open(self._path(host, "host.json"), "w") as f:
                        json.dump(cfg.to_dict(), f, indent=1)
                    open(self._path(host, "host.out"), "w").close()
                    self._offsets[host] = 0
                    self._partial[host] = ""
                    members.append(MemberConfig(
                        node.deliver(self._path(host, "host.json")),
                        STDOUT if remote else self._path(host, "host.out"),
                        0 if host == hosts[0] else self.fab[host].pid))
                group = self._path(hosts[0], "group.json")
                with open(group, "w") as f:
                    json.dump(GroupConfig(tuple(members), self._cpu(i, len(shares))).to_dict(),
                              f, indent=1)
                group = node.deliver(group)
                with open(self._path(hosts[0], "host.log"), "w") as log:
                    proc = node.popen(
                        [sys.executable, "-m", "hosts.group", "--config", group],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE if remote else log, stderr=subprocess.STDOUT,
                        env=env, cwd=wiring.REPO_ROOT)
                if remote:
                    t = threading.Thread(target=self._sort_lines, args=(proc, hosts[0]),
                                         name=f"lines-{hosts[0]}", daemon=True)
                    t.start()
                    self._readers.append(t)
                self.groups.append((tuple(hosts), proc))
                for host in hosts:
                    self.procs[host] = proc
        except BaseException:
            self.stop()
            raise

    def _shares(self) -> list[list[str]]:
        """The hosts in ``processes`` contiguous shares (:func:`split`), a process serving
        hosts of one server only on a fabric over several servers reached over ssh."""
        return fabric.per_server(list(self.configs),
                                 lambda h: getattr(self.fab[h], "server", None),
                                 self.processes, split)

    def _sort_lines(self, proc: subprocess.Popen, first: str) -> None:
        """A remote host process's stdout (its ssh session's terminal): each host's
        ``@<host>`` protocol line into that host's file, the rest into the log."""
        with open(self._path(first, "host.log"), "a") as log:
            for raw in proc.stdout:
                line = raw.decode(errors="replace").rstrip("\r\n")
                host, _, rest = line[1:].partition(" ") if line.startswith("@") else ("", "", "")
                if host in self.configs:
                    with open(self._path(host, "host.out"), "a") as f:
                        f.write(rest + "\n")
                else:
                    log.write(line + "\n")
                    log.flush()

    def _cpu(self, index: int, processes: int) -> int | None:
        """The CPU of the ``index``-th process: round-robin when pinning (``pin``), and
        only when there are at least as many processes as CPUs -- fewer are left free to
        run anywhere (runtime.sched)."""
        if not self.pin or processes < len(sched.cpus()):
            return None
        return sched.cpu_for(index)

    def go(self, ready_timeout_s: float = READY_TIMEOUT_S) -> float:
        """Wait until every process is ready, then give them all the same t = 0 (returned).
        A process that dies during set-up, or a set-up longer than ``ready_timeout_s``,
        raises RuntimeError naming the host and quoting its log."""
        deadline = time.monotonic() + ready_timeout_s
        while len(self.ready) < len(self.procs):
            self.poll(0.05)
            dead = [h for h, p in self.procs.items() if p.poll() is not None and h not in self.ready]
            if dead:
                raise RuntimeError(f"the process of host {dead[0]} exited during set-up with "
                                   f"{self.procs[dead[0]].returncode}: {self.log_tail(dead[0])}")
            if time.monotonic() > deadline:
                slow = sorted(set(self.procs) - self.ready)
                raise RuntimeError(f"hosts {slow} not ready after {ready_timeout_s:g} s")
        self.clocks = [self._probe(hosts, p) for hosts, p in self.groups]
        # t = 0 in CLOCK_REALTIME, the one clock servers share (docs/architecture.md §9);
        # each process converts it to its own monotonic clock and records the offset it saw
        now_real, now = time.time(), time.monotonic()
        self.t_start = now + START_DELAY_S
        for _, p in self.groups:
            p.stdin.write(clock.start_line(now_real + START_DELAY_S, time.time()).encode())
            p.stdin.flush()
        return self.t_start

    def _probe(self, hosts: tuple[str, ...], p: subprocess.Popen,
               timeout_s: float = 2.0) -> dict:
        """The process's clock against this one's (``hosts.clock.estimate``): probe lines
        on its stdin, each answer read back as soon as it is in its first host's file."""
        samples = []
        for seq in range(clock.PROBES):
            sent = time.time()
            p.stdin.write(clock.probe_line(seq, sent).encode())
            p.stdin.flush()
            deadline = time.monotonic() + timeout_s
            while (hosts[0], seq) not in self._answers and time.monotonic() < deadline:
                time.sleep(0.0002)
                self._read(hosts[0])
            if (hosts[0], seq) in self._answers:
                seen, read = self._answers[(hosts[0], seq)]
                samples.append((sent, seen, read))
        return {"hosts": list(hosts), **(clock.estimate(samples) or {"probes": 0})}

    def poll(self, timeout_s: float = 0.0) -> None:
        """Read what the processes printed since the last poll (sleeps ``timeout_s``
        first when there is nothing new)."""
        if timeout_s > 0:
            time.sleep(timeout_s)
        for host in self.procs:
            self._read(host)
        if not self.ended and self.procs and self.finished >= set(self.procs):
            self._end()

    def _end(self) -> None:
        """Every host has finished: no peer will send again, so no host need linger."""
        self.ended = True
        for _, p in self.groups:
            try:
                p.stdin.write(b"end\n")
                p.stdin.flush()
            except (OSError, ValueError):      # it has exited (or its stdin is closed)
                pass

    def _read(self, host: str) -> None:
        """The lines ``host``'s file got since the last read."""
        try:
            with open(self._path(host, "host.out")) as f:
                f.seek(self._offsets[host])
                chunk = f.read()
                self._offsets[host] = f.tell()
        except FileNotFoundError:
            return
        *lines, self._partial[host] = (self._partial[host] + chunk).split("\n")
        for line in lines:
            self._line(host, line)

    def _line(self, host: str, line: str) -> None:
        line = line.strip()
        if not line.startswith("{"):
            return
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            return
        if "probe" in msg:                 # a clock probe's answer: when it is read here
            self._answers[(host, msg["probe"])] = (msg.get("seen_realtime"), time.time())
        elif msg.get("ready"):
            self.ready.add(host)
        elif "progress" in msg:
            self.done[host] = msg["progress"]
        elif msg.get("finished"):
            self.finished.add(host)
        elif "type" in msg:
            self.summaries[host] = msg

    def wait(self, deadline: float, tick=None, step_s=0.25) -> bool:
        """Poll until every process ended or ``deadline`` (monotonic); ``tick()`` after
        each poll (perturbations, progress; returning False stops the wait);
        ``step_s``: seconds between polls, or a function giving them. True if all ended."""
        while self.running:
            if time.monotonic() > deadline:
                return False
            self.poll(step_s() if callable(step_s) else step_s)
            if tick is not None and tick() is False:
                return False
        self.poll()
        return True

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """End every process still running (SIGTERM, then SIGKILL) and reap all; the exit
        code of each host's process, by host."""
        for hosts, p in self.groups:
            code = fabric.stop_process(p, timeout_s)
            self.exit_codes.update({h: code for h in hosts})
            if p.stdin:
                try:
                    p.stdin.close()
                except OSError:
                    pass
        for t in self._readers:
            t.join(timeout_s)
        self._readers = []
        for hosts, _ in self.groups:         # telemetry written on a server, back here
            node = self.fab[hosts[0]]
            for h in hosts:
                there = self.configs[h].telemetry_path
                if there and there != self._path(h, "jsonl"):
                    try:
                        node.fetch(there, self._path(h, "jsonl"))
                    except (RuntimeError, subprocess.SubprocessError) as e:   # its server
                        # no longer answers, or the host never wrote it
                        with open(self.log_path(h), "a") as log:
                            log.write(f"symphony-emu: could not collect {there}: {e}\n")
        self.poll()
        return self.exit_codes

    def log_path(self, host: str) -> str:
        """The log of the process serving ``host`` (``<its first host>.host.log``)."""
        first = next((hs[0] for hs, _ in self.groups if host in hs), host)
        return self._path(first, "host.log")

    def log_tail(self, host: str, nbytes: int = 3000) -> str:
        try:
            with open(self.log_path(host)) as f:
                return f.read()[-nbytes:]
        except FileNotFoundError:
            return ""


def split(hosts: list[str], processes: int) -> list[list[str]]:
    """``hosts`` in ``processes`` contiguous shares as even as can be (in their order)."""
    k = max(1, min(processes, len(hosts)))
    q, r = divmod(len(hosts), k)
    out, i = [], 0
    for j in range(k):
        n = q + (j < r)
        out.append(hosts[i:i + n])
        i += n
    return out
