"""The agent's control channel: JSON commands on an abstract Unix datagram socket in the
switch's network namespace, reachable only from that namespace (docs/architecture.md §5).

Commands (each answered with ``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``,
the error naming the command, the key, the value and what is allowed):

    {"cmd": "stats"}                                  counters, per-job state, queues
    {"cmd": "symphony", "enabled": false}             switch Symphony off / on
    {"cmd": "symphony", "k": 0.001, "tau": 0.5, ...}  reconfigure (k, tau, t_win_s,
                                                      n_warmup, n_sample) while running
    {"cmd": "red", "enabled": true, "kmin_bytes": .., "kmax_bytes": .., "pmax": ..}
    {"cmd": "port_rate", "port": "leaf0-eth1", "rate_bps": 5e6}   a live imbalance
    {"cmd": "drop_fraction", "value": 0.01}           fault knob: drop 1 % of RoCE data

:func:`parse_command` checks a datagram's *shape* (one flat JSON object, a known command,
its known keys, scalar values); the values' ranges are the typed configs'
(``switch_agent.config``: ``RedParams``, ``SymphonyParams``, ``PortParams``,
``AgentConfig``), which the agent builds before it applies anything.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import socket
import threading

from runtime import netns
from switch_agent.config import RedParams

MAX_DATAGRAM_BYTES = 65536
MAX_STRING_CHARS = 256
MAX_INT = 2**63                # an integer of the JSON beyond it is not a count we keep
SYMPHONY_KEYS = ("k", "tau", "t_win_s", "n_warmup", "n_sample")   # live-reconfigurable
# command -> (its keys, of which required)
COMMANDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "stats": ((), ()),
    "symphony": (("enabled",) + SYMPHONY_KEYS, ()),
    "red": (tuple(f.name for f in dataclasses.fields(RedParams)), ()),
    "port_rate": (("port", "rate_bps"), ("port", "rate_bps")),
    "drop_fraction": (("value",), ("value",)),
}


class CommandError(ValueError):
    """A control datagram the agent will not apply; the message says why."""


def _json_type(value) -> str:
    if value is None:
        return "null"
    return {list: "an array", str: "a string", bool: "true/false", dict: "an object"}.get(
        type(value), "a number")


def _short(value, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise CommandError(f"number {text[:40]} is out of range: numbers must be finite")
    return v


def _bounded_int(text: str) -> int:
    v = int(text)
    if abs(v) > MAX_INT:
        raise CommandError(f"integer {text[:40]}... is out of range: at most 2**63")
    return v


def _no_constant(name: str):
    raise CommandError(f"{name} is not allowed: numbers must be finite")


def parse_command(data: bytes) -> tuple[str, dict]:
    """A datagram as (command, arguments); :class:`CommandError` if it is not one flat JSON
    object ``{"cmd": <command>, <key>: <number, string or true/false>, ...}`` naming a
    known command and only its keys."""
    if len(data) > MAX_DATAGRAM_BYTES:
        raise CommandError(f"a command is at most {MAX_DATAGRAM_BYTES} bytes, got {len(data)}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CommandError(f"a command is UTF-8 JSON; byte {e.start} is not UTF-8") from None
    try:
        cmd = json.loads(text, parse_float=_finite_float, parse_int=_bounded_int,
                         parse_constant=_no_constant)
    except RecursionError:
        raise CommandError("a command is one flat JSON object; this one nests too deeply") \
            from None
    except CommandError:
        raise
    except ValueError as e:                   # JSONDecodeError, an int of > 4300 digits
        raise CommandError(f"not JSON: {str(e)[:120]}") from None
    if not isinstance(cmd, dict):
        raise CommandError(f"a command is a JSON object like {{\"cmd\": \"stats\"}}, "
                           f"got {_json_type(cmd)}: {_short(cmd)}")
    kind = cmd.get("cmd")
    if not isinstance(kind, str) or kind not in COMMANDS:
        raise CommandError(f"cmd {_short(kind)} is not a command; allowed: "
                           f"{', '.join(COMMANDS)}")
    keys, required = COMMANDS[kind]
    args = {k: v for k, v in cmd.items() if k != "cmd"}
    unknown = [k for k in args if k not in keys]
    if unknown:
        raise CommandError(f"{kind}: unknown key {_short(unknown[0])}; allowed: "
                           f"{', '.join(keys) or 'none'}")
    missing = [k for k in required if k not in args]
    if missing:
        raise CommandError(f"{kind}: missing {missing[0]!r}; needs {', '.join(required)}")
    for k, v in args.items():
        if isinstance(v, str):
            if len(v) > MAX_STRING_CHARS:
                raise CommandError(f"{kind}: {k} is a string of {len(v)} characters; "
                                   f"at most {MAX_STRING_CHARS}")
        elif not isinstance(v, (bool, int, float)):
            raise CommandError(f"{kind}: {k} must be a number, a string or true/false, "
                               f"got {_json_type(v)}: {_short(v)}")
    return kind, args


# --- the channel ---------------------------------------------------------------------
#
# The agent binds an *abstract* Unix socket (no file: a name in the kernel, scoped to the
# network namespace of the socket that binds it) inside its switch's namespace. Only a
# socket of that namespace can send to it: not a host's process (hosts have their own
# namespaces), not one in the root namespace. The runner makes its client socket in the
# switch's namespace (netns_socket) without leaving its own.


def control_name(rundir: str, switch: str) -> str:
    """The abstract socket name of ``switch``'s agent (unique per run folder and switch)."""
    run = hashlib.sha1(os.path.abspath(rundir).encode()).hexdigest()[:12]
    return f"symphony-emu/{run}/{switch}"


def address(name: str) -> str:
    """The socket address of an abstract name (a leading NUL byte: no file)."""
    return "\0" + name


def netns_socket(pid: int) -> socket.socket:
    """A Unix datagram socket of the network namespace of process ``pid``. A socket keeps
    the namespace it was created in, and setns() moves only the calling thread: a
    short-lived thread enters the namespace, creates the socket and ends, so no other
    thread of this process ever leaves its namespace."""
    out: list = []

    def make():
        try:
            fd = netns.open_netns(pid)
            try:
                netns.setns(fd)
            finally:
                os.close(fd)
            out.append(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
        except BaseException as e:                 # handed to the caller's thread
            out.append(e)

    t = threading.Thread(target=make, name=f"netns-socket-{pid}", daemon=True)
    t.start()
    t.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def client_socket(netns_pid: int | None = None) -> socket.socket:
    """A socket to talk to agents with: in the network namespace of ``netns_pid`` (a
    switch's shell) or in this one; autobound to an abstract address for the replies."""
    s = (netns_socket(netns_pid) if netns_pid is not None
         else socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
    s.bind("")
    return s


def send_command(name: str, command: dict, timeout_s: float = 5.0, *,
                 netns_pid: int | None = None) -> dict:
    """Send one command to the agent bound to the abstract ``name`` and return its reply.
    ``netns_pid``: a process in the agent's network namespace (the switch's shell); the
    client socket is made there, as no other namespace can reach the agent. OSError if no
    agent listens there (ConnectionRefusedError) or none answers in time (TimeoutError)."""
    with client_socket(netns_pid) as s:
        s.settimeout(timeout_s)
        s.sendto(json.dumps(command).encode(), address(name))
        return json.loads(s.recv(1 << 20))


def main(argv: list[str] | None = None) -> int:
    """``python -m switch_agent.control NAME JSON [--timeout S]``: send one command from
    this namespace and print the reply (one JSON line); exit 1 with a one-line reason if
    no agent answers. How a switch on a server reached over ssh is controlled: the command
    runs in the switch's own shell there (``cluster.remote``)."""
    import argparse
    import sys
    ap = argparse.ArgumentParser(prog="python -m switch_agent.control",
                                 description=main.__doc__.split("\n")[0])
    ap.add_argument("name", help="the agent's abstract socket name")
    ap.add_argument("command", help='one JSON command, e.g. \'{"cmd": "stats"}\'')
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds (default 5)")
    args = ap.parse_args(argv)
    try:
        command = json.loads(args.command)
    except ValueError as e:
        print(f"not JSON: {e}", file=sys.stderr)
        return 2
    try:
        reply = send_command(args.name, command, args.timeout)
    except OSError as e:
        print(json.dumps({"unreachable": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps(reply))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
