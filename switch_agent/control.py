"""The agent's control channel: JSON commands on a Unix datagram socket.

A filesystem path (not the abstract namespace, which is per network namespace) so
the orchestrator, tests and the interactive CLI reach an agent inside its switch's
namespace. Commands (each answered with ``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``):

    {"cmd": "stats"}                                  counters, per-job state, queues
    {"cmd": "symphony", "enabled": false}             switch Symphony off / on
    {"cmd": "symphony", "k": 0.001, "tau": 0.5, ...}  reconfigure (k, tau, t_win_s,
                                                      n_warmup, n_sample) while running
    {"cmd": "red", "enabled": true, "kmin_bytes": .., "kmax_bytes": .., "pmax": ..}
    {"cmd": "drop_fraction", "value": 0.01}           fault knob: drop 1 % of RoCE data
"""

from __future__ import annotations

import json
import os
import socket
import tempfile


def send_command(path: str, command: dict, timeout_s: float = 5.0) -> dict:
    """Send one command to the agent listening on ``path`` and return its reply."""
    tmpdir = tempfile.mkdtemp(prefix="symctl-")
    me = os.path.join(tmpdir, "c")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        s.bind(me)
        s.settimeout(timeout_s)
        s.sendto(json.dumps(command).encode(), path)
        reply = json.loads(s.recv(1 << 20))
    finally:
        s.close()
        try:
            os.unlink(me)
        except FileNotFoundError:
            pass
        os.rmdir(tmpdir)
    return reply
