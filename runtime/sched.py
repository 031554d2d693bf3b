"""How the emulator's own processes ask the kernel for prompt, steady service.

* **Timer slack.** The kernel may end a timed sleep up to the process's timer slack late
  (50 µs by default) to batch wake-ups; a pacing loop would pay it on every packet.
  ``prctl(PR_SET_TIMERSLACK)``, through ctypes: the standard library has no binding.
* **One CPU each.** A host process or an agent process that stays on one CPU keeps its
  caches and is woken there without moving; the launcher and the fabric spread them over
  the CPUs this process may use (``os.sched_setaffinity``). Measured on Table 1's fabric
  at D = 500, static routing: 1.065x the lockstep bound unpinned, 1.041-1.044x pinned,
  and 12 % less host CPU per packet (``benchmarks/host_cpu.py``).
"""

from __future__ import annotations

import ctypes
import os

PR_SET_TIMERSLACK = 29


def set_timer_slack(slack_s: float) -> bool:
    """Let the kernel end this process's sleeps at most ``slack_s`` late. False if refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(max(1, int(slack_s * 1e9))), 0, 0, 0) == 0


def cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def cpu_for(index: int) -> int:
    """The CPU for the ``index``-th process of a kind: round-robin over :func:`cpus`."""
    c = cpus()
    return c[index % len(c)]


def pin(cpu: int) -> None:
    """Run this process on ``cpu`` only."""
    os.sched_setaffinity(0, {cpu})
