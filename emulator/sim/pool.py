"""Many simulated runs at once: in this machine's processes, or on a Dask cluster.

A simulated run is one Python process's work from start to end (``run.run_sim``), so
runs scale by processes: ``jobs`` of them here (``concurrent.futures``), or as many as a
Dask cluster's workers (``address``, ``distributed``'s scheduler: past one machine, on an
engine our users may already run). A worker need not share this machine's disk: it
simulates into a folder of its own and sends the run folder back, packed, and the run is
unpacked where this process wanted it. Every worker must run this revision of the code;
one that does not refuses the run, naming both revisions."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import tarfile
import tempfile

from emulator import plan as planning
from emulator.plan import memory
from emulator.measurements import SimStats
from emulator.rundir import git_revision
from emulator.sim.run import SimError, run_sim, unfinished_folders


def run_many(tasks: list, jobs: int = 1, address: str | None = None) -> None:
    """Simulate (name, spec, scheme, seed, rundir, paths, repeat) runs, ``jobs``
    processes at once, or on the Dask scheduler at ``address`` (``host:port``), printing
    each as it ends. A run that cannot get memory, or whose worker process dies, is named
    in one line with its likely cause and the other runs are kept; SimError at the end
    says how many failed."""
    if address is not None:
        _on_dask(tasks, address)
        return
    failed = []
    jobs = jobs_for_memory(tasks, jobs)
    if jobs <= 1 or len(tasks) <= 1:
        for task in tasks:
            try:
                _say(task[0], _one(task))
            except MemoryError:
                failed.append(_failed(task[0], "could not get memory (MemoryError): its "
                                      "buffers need more than this machine has free"))
    else:
        failed = _in_processes(tasks, jobs)
    if failed:
        raise SimError(f"{len(failed)} of {len(tasks)} runs failed: "
                       f"{', '.join(failed)} (each named above); the others are kept")


def peak_bytes(spec, scheme: str, seed: int) -> int:
    """An estimate of a simulated run's peak memory, from its plan's ranks, buffers and
    how they verify (``emulator.plan.memory``)."""
    plan = planning.compile(spec, scheme, seed)
    return memory.peak_bytes(plan.layouts, plan.verify)


def free_bytes() -> int | None:
    """The kernel's estimate of the memory available to new work (MemAvailable)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def jobs_for_memory(tasks: list, jobs: int, free: int | None = None) -> int:
    """``jobs``, cut to as many runs as the free memory holds at once (one line says
    so); at least 1: a run too big for it alone still runs, and fails by name."""
    if jobs <= 1 or len(tasks) <= 1:
        return jobs
    free = free_bytes() if free is None else free
    if free is None:
        return jobs
    shapes = {}                        # a run set's runs share a few shapes: spec, scheme
    for _, spec, scheme, seed, *_ in tasks:
        if (id(spec), scheme) not in shapes:
            shapes[id(spec), scheme] = peak_bytes(spec, scheme, seed)
    peak = max(shapes.values())
    fits = max(1, int(free // peak))
    if fits >= min(jobs, len(tasks)):
        return jobs
    print(f"--jobs {jobs} cut to {fits}: a run here needs about {peak / 1e9:.1f} GB at "
          f"its peak (its ranks' buffers) and {free / 1e9:.1f} GB is free", flush=True)
    return fits


def _in_processes(tasks: list, jobs: int) -> list[str]:
    """The runs in ``jobs`` worker processes. A worker that dies breaks the whole pool
    (every run it still held fails with BrokenProcessPool, and which one killed it is not
    said), so the runs that did not end are each simulated again alone, in a pool of
    their own: a run that dies there is the one named."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool
    unfinished, failed = [], []
    with _workers(jobs, tasks) as pool:
        running = {pool.submit(_one, task): task for task in tasks}
        for fut in as_completed(running):
            task = running[fut]
            try:
                _say(task[0], fut.result())
            except BrokenProcessPool:
                unfinished.append(task)
            except MemoryError:
                failed.append(_failed(task[0], "could not get memory (MemoryError) in its "
                                      "worker: try fewer --jobs"))
    for task in sorted(unfinished, key=tasks.index):
        with _workers(1, [task]) as alone:
            try:
                _say(task[0], alone.submit(_one, task).result())
            except BrokenProcessPool:
                failed.append(_failed(task[0], "its worker process died (killed by a "
                                      "signal: most often the kernel's out-of-memory "
                                      "killer; see dmesg, try fewer --jobs)"))
            except MemoryError:
                failed.append(_failed(task[0], "could not get memory (MemoryError) in its "
                                      "worker"))
    return failed


@contextlib.contextmanager
def _workers(jobs: int, tasks: list):
    """A pool of ``jobs`` worker processes for ``tasks``. Interrupted (Ctrl-C, SIGTERM),
    it ends its workers at once; at its end, interrupted or not, it removes the run
    folders its workers left unfinished (a worker killed mid-run, by the interrupt or
    the kernel's out-of-memory killer, leaves its run's)."""
    from concurrent.futures import ProcessPoolExecutor
    pool = _Pool(ProcessPoolExecutor(max_workers=jobs, initializer=_worker_signals))
    try:
        yield pool
    except BaseException:
        _stop_workers(pool.executor)
        raise
    finally:
        pool.executor.shutdown(wait=True, cancel_futures=True)
        for parent in {os.path.dirname(os.path.abspath(t[4])) for t in tasks}:
            for pid in pool.pids:
                for folder in unfinished_folders(parent, pid):
                    shutil.rmtree(folder, ignore_errors=True)


class _Pool:
    """A ProcessPoolExecutor that remembers its workers' pids (whose run folders are
    theirs). Its ``_processes``: no public way to its workers before Python 3.14."""

    def __init__(self, executor):
        self.executor, self.pids = executor, set()

    def submit(self, fn, *args):
        fut = self.executor.submit(fn, *args)
        self.pids.update(getattr(self.executor, "_processes", None) or {})
        return fut


def _worker_signals() -> None:
    """A worker leaves interrupts to its parent: Ctrl-C (the whole terminal's process
    group gets it) is ignored, SIGTERM ends it at once. The command's own handlers,
    inherited by fork, would make either a KeyboardInterrupt, which concurrent.futures
    reports as the run's error before the worker takes the next run: it wrote on after
    the parent said all was removed, and the parent's shutdown waited for it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()


def _die_with_parent() -> None:
    """The kernel ends this worker when its parent dies, even by SIGKILL (Linux's
    PR_SET_PDEATHSIG; ctypes: the standard library has no prctl). A parent killed so
    left its workers waiting on their queue for ever (found: two, 50 min on)."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass                                # not Linux: the parent's own cleanup only
    import multiprocessing
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:   # it died before this began
        os._exit(1)


def _stop_workers(executor) -> None:
    """An interrupted parent's workers, ended (SIGKILL: mid-run, nothing of theirs is
    worth keeping)."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    for proc in procs:
        if proc.is_alive():
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for proc in procs:
        proc.join(5)


def _failed(name: str, why: str) -> str:
    print(f"{name}: failed: {why}", flush=True)
    return name


def _say(name: str, m: SimStats) -> None:
    print(f"{name}: simulated {m.end_s:.2f} s in {m.wall_s:.1f} s "
          f"({m.data_packets} data packets)", flush=True)


def _one(task) -> SimStats:
    name, spec, scheme, seed, rundir, paths, repeat = task
    m = run_sim(spec, scheme, seed, rundir, paths, repeat=repeat,
                progress=lambda line: print(f"{name}: {line}", flush=True)).sim
    _export(rundir)
    return m


def _export(rundir: str) -> None:
    """The run's tables and trace (``export.write_run``), made where it was simulated,
    beside the other workers' runs: left to the summary after the sweep, one process
    read every run's records again (80 runs of 128 hosts: past 10 min, silent). The
    summary keeps them, as they are newer than the run's measurements."""
    from emulator.analysis import export
    export.write_run(rundir)


CONNECT_TIMEOUT_S = 10


def reach(address: str) -> None:
    """Raise SimError, one line, unless a Dask scheduler answers at ``address`` (checked
    before anything is written)."""
    _client(address).close()


def _client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise SimError("--dask needs Dask's distributed package: pip install "
                       "'symphony-emu[dask]' (or distributed)") from None
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError, ValueError) as e:
        raise SimError(f"--dask {address}: no Dask scheduler answers there "
                       f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def _on_dask(tasks: list, address: str) -> None:
    from distributed import as_completed
    client = _client(address)
    try:
        revision = git_revision()
        futures = {client.submit(_packed, task, revision, pure=False): task for task in tasks}
        for fut in as_completed(futures):
            task = futures[fut]
            m, packed, worker = fut.result()
            _unpack(packed, task[4])
            _say(f"{task[0]} (on {worker})", m)
    finally:
        client.close()


def _packed(task, revision: str) -> tuple[SimStats, bytes, str]:
    """On a worker: the run, simulated into a folder of the worker's own, packed."""
    import platform
    mine = git_revision()
    if mine != revision:
        raise SimError(f"the Dask worker on {platform.node()} runs revision {mine}; this "
                       f"sweep needs {revision}: install the same code on every worker")
    name, spec, scheme, seed, _, paths, repeat = task
    with tempfile.TemporaryDirectory(prefix="symphony-sim-") as tmp:
        rundir = os.path.join(tmp, "run")
        m = run_sim(spec, scheme, seed, rundir, paths, repeat=repeat).sim
        _export(rundir)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(rundir, arcname=".")
    return m, buf.getvalue(), platform.node()


def _unpack(packed: bytes, rundir: str) -> None:
    """The worker's run folder into ``rundir``: written beside it, then moved in whole,
    so that an interrupted copy never looks like a finished run."""
    parent = os.path.dirname(os.path.abspath(rundir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=parent)
    try:
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
            tar.extractall(tmp, members=_plain(tar))
        if os.path.exists(rundir):
            shutil.rmtree(rundir)
        os.replace(tmp, rundir)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)


def _plain(tar: tarfile.TarFile):
    """The archive's files and folders, refusing anything else or any name that would land
    outside the run folder (tarfile's own ``filter="data"`` is Python 3.11.4 and later;
    Debian 12 ships 3.11.2)."""
    for m in tar.getmembers():
        parts = os.path.normpath(m.name).split(os.sep)
        if os.path.isabs(m.name) or ".." in parts or not (m.isfile() or m.isdir()):
            raise SimError(f"a Dask worker sent back {m.name!r}: not a plain file of a run "
                           "folder")
        yield m
