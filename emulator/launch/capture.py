"""Packet captures of one run (``symphony-emu run --pcap h0,leaf1-eth3``): one pcapng file
per point in the run folder, started before the job and stopped cleanly after it.

A point is a host (its NIC, ``h0`` -> ``h0-eth0``) or a switch port (``leaf1-eth3``: the
interface of that name in switch ``leaf1``'s namespace). Each capture is Wireshark's
``dumpcap`` (what tshark itself captures with; it writes pcapng) run inside the node's
namespace by the node, so it is in the run's ledger and dies with the run like any other
process of it (docs/architecture.md §12); ``tcpdump`` (pcap) when dumpcap is missing.
The files dissect as RoCEv2 in Wireshark and tshark: UDP port 4791 is RoCEv2's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

START_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0


class CaptureError(ValueError):
    """A capture point that names nothing in this fabric, or a capture that did not start."""


def parse_points(text: str | None) -> list[str]:
    """``"h0,leaf1-eth3"`` -> ``["h0", "leaf1-eth3"]`` (empty items and repeats dropped)."""
    return list(dict.fromkeys(p.strip() for p in (text or "").split(",") if p.strip()))


def check_points(points: list[str], hosts: list[str], switches: list[str]) -> None:
    """CaptureError naming the first point that is neither a host nor ``<switch>-eth<N>``."""
    for p in points:
        node = p.rsplit("-eth", 1)[0] if "-eth" in p else p
        if p in hosts or (node in switches and p != node and p[len(node) + 4:].isdigit()):
            continue
        raise CaptureError(f"--pcap {p!r}: not a host ({hosts[0]}..{hosts[-1]}) or a switch "
                           f"port (<switch>-eth<N>, switches {', '.join(switches)})")


def tool() -> tuple[list[str], str]:
    """The capture command (before ``-i IFACE -w FILE``) and the file suffix."""
    if shutil.which("dumpcap"):
        return ["dumpcap", "-q"], ".pcapng"
    if shutil.which("tcpdump"):
        return ["tcpdump", "-U", "-s", "0"], ".pcap"
    raise CaptureError("--pcap needs dumpcap (Debian: apt-get install tshark; "
                       "scripts/setup.sh installs it) or tcpdump")


class Captures:
    """The run's captures: :meth:`start` before the job, :meth:`stop` after it."""

    def __init__(self, fab, points: list[str], rundir: str):
        self.fab, self.points, self.rundir = fab, points, rundir
        self.procs: list[tuple[str, str, subprocess.Popen]] = []

    def _where(self, point: str) -> tuple[object, str]:
        net = self.fab.net
        if point in net:                                  # a host: its NIC
            node = net[point]
            intf = next((i for i in node.intfNames() if i != "lo"), None)
        else:
            node = net[point.rsplit("-eth", 1)[0]]
            intf = point if point in node.intfNames() else None
        if intf is None:
            raise CaptureError(f"--pcap {point!r}: {node.name} has no such interface "
                               f"(has {', '.join(i for i in node.intfNames() if i != 'lo')})")
        return node, intf

    def start(self) -> None:
        cmd, suffix = tool()
        try:
            for p in self.points:
                node, intf = self._where(p)
                path = os.path.join(self.rundir, f"{p}{suffix}")
                log = open(os.path.join(self.rundir, f"{p}.capture.log"), "w")
                proc = node.popen(cmd + ["-i", intf, "-w", path], stdout=log,
                                  stderr=subprocess.STDOUT)
                log.close()
                self.procs.append((p, path, proc))
            deadline = time.monotonic() + START_TIMEOUT_S
            for p, path, proc in self.procs:          # capturing once the file has a header
                while not (os.path.exists(path) and os.path.getsize(path) > 0):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise CaptureError(f"--pcap {p!r}: the capture did not start (see "
                                           f"{p}.capture.log)")
                    time.sleep(0.02)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> list[str]:
        """Stop every capture cleanly (SIGINT: the tool flushes and closes its file, as on
        Ctrl-C), killing one that does not end in time; the files written."""
        for _, _, proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for _, _, proc in self.procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        files = [path for _, path, _ in self.procs if os.path.exists(path)]
        self.procs = []
        return files
