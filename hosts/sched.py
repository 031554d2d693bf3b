"""How the emulator's own processes ask the kernel for prompt wake-ups.

A host process sleeps until its next pacing deadline and an agent until its next packet;
what matters is how soon after the deadline it runs. On two cores with more runnable
processes than cores, a woken process waits for the one running to use up its time
slice (the EEVDF scheduler's base slice is a few milliseconds) -- several frame times at
D = 250. Since Linux 6.12 a SCHED_OTHER process may ask for a shorter slice
(``sched_attr.sched_runtime``), which gives it an earlier virtual deadline and lets its
wake-up preempt a process with a longer slice. It needs no privilege and takes no CPU
from anyone: a process that runs long is still charged its share.

Python has no binding for ``sched_setattr(2)``; this is the one system call, by ctypes.
"""

from __future__ import annotations

import ctypes
import os
import platform

SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(platform.machine())
SCHED_OTHER = 0


class _SchedAttr(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("sched_policy", ctypes.c_uint32),
                ("sched_flags", ctypes.c_uint64), ("sched_nice", ctypes.c_int32),
                ("sched_priority", ctypes.c_uint32), ("sched_runtime", ctypes.c_uint64),
                ("sched_deadline", ctypes.c_uint64), ("sched_period", ctypes.c_uint64),
                ("sched_util_min", ctypes.c_uint32), ("sched_util_max", ctypes.c_uint32)]


def set_slice(slice_s: float) -> bool:
    """Ask for a time slice of ``slice_s`` for this process (SCHED_OTHER, its nice value
    kept). False where the kernel or machine does not offer it (the process then runs
    with the default slice)."""
    if SYS_SCHED_SETATTR is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _SchedAttr(size=ctypes.sizeof(_SchedAttr), sched_policy=SCHED_OTHER,
                      sched_nice=os.getpriority(os.PRIO_PROCESS, 0),
                      sched_runtime=int(slice_s * 1e9))
    return libc.syscall(SYS_SCHED_SETATTR, 0, ctypes.byref(attr), 0) == 0


PR_SET_TIMERSLACK = 29


def set_timer_slack(slack_s: float) -> bool:
    """Let the kernel fire this process's sleeps at most ``slack_s`` late (``prctl(2)``
    PR_SET_TIMERSLACK; the default of 50 µs is added to every timed sleep to batch
    wake-ups, which a pacing loop pays on every packet). False if refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(max(1, int(slack_s * 1e9))), 0, 0, 0) == 0
