"""Helpers for emulation tests: start RoCE probe streams in hosts and collect results."""

import json
import os
import subprocess
import sys
import time

from topologies.fabric import REPO_ROOT

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
