"""What a run made on this machine, written down before (or, for a process, the instant
after) it is made, so that whatever ends the run — Ctrl-C, SIGTERM, SIGKILL of the
runner, a crash — ``symphony-emu clean RUN_DIR`` can remove exactly that and say what
it removed (docs/architecture.md §12).

The ledger is ``<run>/ledger.jsonl``, one JSON object per line, each line flushed to
disk before the thing it names exists:

    {"kind": "owner", "pid": 4242, "start": 1234567}     the runner (start: its start
                                                         time, /proc/<pid>/stat field 22)
    {"kind": "node", "name": "h0"}                       a Mininet node about to start
    {"kind": "node", "name": "h0", "pid": .., "start": .., "netns": 4026532..}
    {"kind": "process", "name": "agent leaf0", "pid": .., "start": ..}
    {"kind": "netns", "name": "symu4242"}                a named namespace (ip netns)
    {"kind": "dir", "path": "/tmp/symphony-emu-ssh-..",  a folder outside the run folder
     "empty_only": false}                                (empty_only: remove it only if
                                                         empty -- a shared system folder)
    {"kind": "server", "name": "s0", "label": "root@10.0.0.2",   a real server the
     "ssh": [...], "clean": [...]}                       run reaches over ssh: how to
                                                         reach it, and the command that
                                                         cleans it there
    {"kind": "closed", "removed": [...]}                 torn down (by the run or clean)

**On each server** a fabric spans, the run keeps a ledger of the same form in its
folder there (``<run>/servers/s<i>/ledger.jsonl``): the node shells, agents and host
processes started there, with their pids and start times read there (this module is run
there as a script: ``note`` records running processes, ``exec`` makes a process record
itself before it becomes the command). ``clean`` of the run's folder reaches each real
server over ssh and runs ``clean`` of that ledger there, so a run whose coordinator died
while a server was cut off leaves nothing on it either.

Every process the run starts is also a child that dies with its parent (the nodes'
``PR_SET_PDEATHSIG``, ``topologies.fabric.OwnedNode``), and every node, interface and
iptables rule lives inside a node's network namespace, which the kernel deletes when
its last process ends. So after a SIGKILL of the runner there is usually nothing left
to remove; ``clean`` checks, by the exact identities recorded here: a process only if
its pid *and* its start time match (a reused pid is someone else's), any other
process only if it sits in one of the run's network namespaces (by inode). Never by
name pattern.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

LEDGER = "ledger.jsonl"


def start_ticks(pid: int) -> int | None:
    """A process's start time (clock ticks since boot), or None if it is gone (or a
    zombie, which holds no namespace and cannot be killed further)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(") ", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return None if rest[0] == "Z" else int(rest[19])


def netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def alive(pid: int, start: int | None) -> bool:
    """The very process recorded (same pid, same start time) still runs."""
    now = start_ticks(pid)
    return now is not None and (start is None or now == start)


class Ledger:
    """The append-only record of one run's machine resources."""

    def __init__(self, rundir: str):
        self.path = os.path.join(rundir, LEDGER)
        os.makedirs(rundir, exist_ok=True)
        self._f = open(self.path, "a")
        self.write({"kind": "owner", "pid": os.getpid(), "start": start_ticks(os.getpid()),
                    "t": time.time()})

    def write(self, rec: dict) -> None:
        if self._f is None:
            return
        self._f.write(json.dumps(rec) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def node(self, name: str, pid: int | None = None) -> None:
        rec = {"kind": "node", "name": name}
        if pid is not None:
            rec.update(pid=pid, start=start_ticks(pid), netns=netns_inode(pid))
        self.write(rec)

    def process(self, name: str, pid: int) -> None:
        self.write({"kind": "process", "name": name, "pid": pid, "start": start_ticks(pid),
                    "netns": netns_inode(pid)})

    def netns(self, name: str) -> None:
        self.write({"kind": "netns", "name": name})

    def dir(self, path: str, empty_only: bool = False) -> None:
        self.write({"kind": "dir", "path": os.path.abspath(path), "empty_only": empty_only})

    def server(self, name: str, label: str, ssh: list[str], clean: list[str]) -> None:
        self.write({"kind": "server", "name": name, "label": label, "ssh": list(ssh),
                    "clean": list(clean)})

    def close(self, removed: list[str] | None = None) -> None:
        if self._f is not None:
            self.write({"kind": "closed", "removed": list(removed or [])})
            self._f.close()
            self._f = None


# --- reading and cleaning -------------------------------------------------------------

class StillRunning(RuntimeError):
    """The run's owner is alive: cleaning would pull its fabric from under it."""


class ServersUnreached(RuntimeError):
    """``clean`` removed what it could, but could not reach some of the run's servers
    (``removed``: what it did remove)."""

    def __init__(self, message: str, removed: list[str]):
        super().__init__(message)
        self.removed = removed


def read(rundir: str) -> list[dict]:
    path = os.path.join(rundir, LEDGER)
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:      # a line cut by a kill mid-write
                    pass
    except FileNotFoundError:
        pass
    return out


def state(rundir: str) -> str:
    """``none`` (no ledger), ``running`` (its owner lives), ``closed`` (torn down by its
    run), ``killed`` (its owner died before tearing down: ``clean`` it) or ``cleaned``
    (killed, then cleaned: its folder holds an unfinished run)."""
    recs = read(rundir)
    if not recs:
        return "none"
    closed = [r for r in recs if r["kind"] == "closed"]
    if closed:
        return "cleaned" if all(r.get("by") == "clean" for r in closed) else "closed"
    owners = [r for r in recs if r["kind"] == "owner"]
    if owners and alive(owners[-1]["pid"], owners[-1].get("start")):
        return "running"
    return "killed"


def _processes_in(inodes: set[int]) -> list[int]:
    """Every live process whose network namespace is one of ``inodes``."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            ino = netns_inode(int(d))
            if ino in inodes and start_ticks(int(d)) is not None:
                found.append(int(d))
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:80]
    except OSError:
        return "?"


def clean(rundir: str, force: bool = False, wait_s: float = 5.0) -> list[str]:
    """Remove what the run in ``rundir`` left on this machine; returns one line per thing
    removed (empty: nothing was left). Raises StillRunning while its owner lives (unless
    ``force``)."""
    recs = read(rundir)
    if not recs:
        return []
    owners = [r for r in recs if r["kind"] == "owner"]
    if not force and owners and alive(owners[-1]["pid"], owners[-1].get("start")) \
            and owners[-1]["pid"] != os.getpid():
        raise StillRunning(f"{rundir}: its run is still going (pid {owners[-1]['pid']}); "
                           "stop it first (Ctrl-C or SIGTERM), or pass --force")
    removed, victims = [], {}
    for r in recs:
        if r["kind"] in ("process", "node") and r.get("pid") and alive(r["pid"], r.get("start")):
            victims[r["pid"]] = f"{r['kind']} {r['name']} (pid {r['pid']})"
    # A namespace is surely the run's while a process recorded in it still lives (an
    # inode number of a namespace that is gone may be reused by someone else's).
    inodes = {r["netns"] for r in recs if r["kind"] in ("process", "node") and r.get("netns")
              and r.get("pid") in victims}
    for pid in _processes_in(inodes):
        victims.setdefault(pid, f"process {pid} ({_cmdline(pid)}) in one of the run's "
                                "namespaces")
    for pid, what in victims.items():
        try:
            os.kill(pid, signal.SIGKILL)
            removed.append(what)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while any(start_ticks(p) is not None for p in victims) and time.monotonic() < deadline:
        time.sleep(0.02)
    for r in recs:
        if r["kind"] == "netns" and os.path.exists(f"/var/run/netns/{r['name']}"):
            res = subprocess.run(["ip", "netns", "del", r["name"]], capture_output=True,
                                 text=True)
            removed.append(f"namespace {r['name']}" + ("" if res.returncode == 0 else
                                                       f" (failed: {res.stderr.strip()})"))
    for r in recs:
        if r["kind"] == "dir" and os.path.isdir(r["path"]):
            removed += _remove_dir(r["path"], r.get("empty_only", False))
    unreached = []
    for r in recs:
        if r["kind"] == "server":
            try:
                removed += [f"{r['name']}: {x}" for x in _clean_server(r)]
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                unreached.append(f"server {r['name']} ({r['label']}): {e}")
    with open(os.path.join(rundir, LEDGER), "a") as f:
        f.write(json.dumps({"kind": "closed", "by": "clean", "removed": removed,
                            **({"unreached": unreached} if unreached else {})}) + "\n")
    if unreached:
        raise ServersUnreached(f"{rundir}: could not clean {'; '.join(unreached)}; run "
                               "`symphony-emu clean` again once the server is reachable",
                               removed)
    return removed


SERVER_CLEAN_TIMEOUT_S = 60.0


def _clean_server(rec: dict) -> list[str]:
    """``clean`` of a server's own ledger, run there over ssh; what it removed there."""
    r = subprocess.run([*rec["ssh"], shlex.join(rec["clean"])], capture_output=True,
                       timeout=SERVER_CLEAN_TIMEOUT_S)
    if r.returncode != 0:
        raise OSError(f"{shlex.join(rec['clean'])} exited {r.returncode}: "
                      f"{r.stderr.decode(errors='replace').strip()[-300:] or 'no message'}")
    lines = r.stdout.decode(errors="replace").strip().splitlines()
    return json.loads(lines[-1]) if lines else []


def _remove_dir(path: str, empty_only: bool) -> list[str]:
    """A folder the run made outside its run folder; ``empty_only``: left alone unless
    empty (a system folder something else may have filled since)."""
    try:
        if empty_only:
            os.rmdir(path)
        else:
            shutil.rmtree(path)
    except OSError:
        return []
    return [f"folder {path}"]


def run_dirs_with_ledgers(path: str) -> list[str]:
    """``path`` itself if it is a run folder with a ledger, else the run folders with
    ledgers up to two levels below it (an output folder, a sweep's points)."""
    if os.path.exists(os.path.join(path, LEDGER)):
        return [path]
    out = []
    for root, dirs, files in os.walk(path):
        if LEDGER in files:
            out.append(root)
            dirs[:] = []
        elif root.count(os.sep) - path.rstrip(os.sep).count(os.sep) >= 2:
            dirs[:] = []
        dirs.sort()
    return out


def reclaim(rundir: str, unfinished: bool = False) -> list[str] | None:
    """A killed run's folder made reusable: what it left on the machine removed
    (:func:`clean`) and its partial files deleted. With ``unfinished`` (the caller knows
    the run wrote no measurements), also a run that was interrupted and tore down
    (``closed``). None if there was nothing to take back (nothing done)."""
    st = state(rundir)
    if st not in ("killed", "cleaned") and not (unfinished and st == "closed"):
        return None
    removed = clean(rundir)
    import shutil
    for name in os.listdir(rundir):
        p = os.path.join(rundir, name)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    return removed


# --- on a server: this module run as a script (standard library only) ----------------

def main(argv: list[str]) -> int:
    """``note LEDGER`` (records ``{"kind", "name", "pid"}`` on stdin, one per line: their
    start times and namespaces read here), ``exec LEDGER NAME -- COMMAND...`` (record this
    process, then become COMMAND: same pid), ``clean DIR`` (print what was removed, as a
    JSON list)."""
    if len(argv) >= 2 and argv[0] == "note":
        os.makedirs(os.path.dirname(argv[1]) or ".", exist_ok=True)
        with open(argv[1], "a") as f:
            for line in sys.stdin:
                if line.strip():
                    r = json.loads(line)
                    pid = int(r["pid"])
                    r.update(start=start_ticks(pid), netns=netns_inode(pid))
                    f.write(json.dumps(r) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return 0
    if len(argv) >= 5 and argv[0] == "exec" and argv[3] == "--":
        os.makedirs(os.path.dirname(argv[1]) or ".", exist_ok=True)
        pid = os.getpid()
        # no namespace: the command may yet enter another (mnexec -a); the node's own
        # record holds the namespace
        with open(argv[1], "a") as f:
            f.write(json.dumps({"kind": "process", "name": argv[2], "pid": pid,
                                "start": start_ticks(pid)}) + "\n")
        os.execvp(argv[4], argv[4:])
    if len(argv) == 2 and argv[0] == "clean":
        print(json.dumps(clean(argv[1], force=True)))
        return 0
    print("usage: ledger.py note LEDGER | exec LEDGER NAME -- COMMAND... | clean DIR",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
