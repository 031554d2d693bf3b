"""Helpers for emulation tests: start RoCE probe streams in hosts and collect results;
run plain messages on a fabric built by hand (the transport's emulation tests)."""

import json
import os
import subprocess
import sys
import time

from emulator.launch.launcher import HostProcesses
from emulator.plan.messages import Message, host_configs
from emulator.rundir import RunFolder
from hosts.cc import CcConfig
from hosts.config import TransportParams
from topologies.wiring import REPO_ROOT

ENV = dict(os.environ, PYTHONPATH=REPO_ROOT)


def blast(host, *args, **popen_kw):
    return host.popen([sys.executable, "-m", "hosts.blast", *map(str, args)],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                      cwd=REPO_ROOT, **popen_kw)


def start_receiver(host, ip, timeout_s=30, idle_s=1.5):
    proc = blast(host, "recv", "--bind", ip, "--timeout", timeout_s, "--idle", idle_s)
    line = proc.stdout.readline()
    assert json.loads(line) == {"ready": True}, line + proc.stderr.read()
    return proc


def finish(proc, timeout_s=60):
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def run_streams(receivers, senders, timeout_s=60):
    """receivers: [(host, ip)], senders: [(host, [blast send args])] -> (recv results, send results)"""
    rprocs = [start_receiver(h, ip) for h, ip in receivers]
    sprocs = [blast(h, "send", *args) for h, args in senders]
    sres = [finish(p, timeout_s) for p in sprocs]
    rres = [finish(p, timeout_s) for p in rprocs]
    return rres, sres


def wait_until(pred, timeout_s=10, interval_s=0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval_s)
    return False


def run_messages(fab, messages: list[Message], rundir: str, *, cc: CcConfig,
                 transport: TransportParams, timeout_s: float = 120.0) -> dict[str, dict]:
    """Every host involved sends and receives its messages from a shared t = 0 (host
    configs from ``emulator.plan.messages``, processes from the one launcher); their
    summaries by host. TimeoutError if they are still running after ``timeout_s``."""
    os.makedirs(rundir, exist_ok=True)
    cfgs = host_configs(messages, lambda h: fab[h].IP(), cc.params.line_rate_bps, cc,
                        transport, timeout_s)
    procs = HostProcesses(fab, cfgs, rundir)
    try:
        procs.start()
        t0 = procs.go()
        if not procs.wait(t0 + timeout_s + 15):
            raise TimeoutError(f"host processes still running after {timeout_s} s")
    finally:
        procs.stop()
    missing = [h for h in cfgs if h not in procs.summaries]
    if missing:
        raise RuntimeError(f"host {missing[0]} exited with {procs.exit_codes[missing[0]]} "
                           f"and no summary:\n{procs.log_tail(missing[0])}")
    return procs.summaries


def read_flows(rundir: str, kind: type) -> list:
    """All ``FlowSent`` or ``FlowReceived`` records of a run folder's host telemetry."""
    return RunFolder(rundir).host_records(kind)
