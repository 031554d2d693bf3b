"""Run plain messages on a fabric one has built by hand (the transport's emulation
tests): host configs from ``emulator.plan.messages``, processes from the one launcher."""

from __future__ import annotations

import os

from emulator.launch.launcher import HostProcesses
from emulator.plan.messages import Message, host_configs
from emulator.rundir import RunFolder
from hosts.cc import CcConfig
from hosts.config import TransportParams

__all__ = ["Message", "run_messages", "read_flows"]


def run_messages(fab, messages: list[Message], rundir: str, *, cc: CcConfig,
                 transport: TransportParams, timeout_s: float = 120.0) -> dict[str, dict]:
    """Every host involved sends and receives its messages from a shared t = 0; their
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


def read_flows(rundir: str, kind: str) -> list[dict]:
    """All ``send_flow`` or ``recv_flow`` records of a run folder's host telemetry."""
    return RunFolder(rundir).host_records(kind)
