"""Run host processes (``python -m hosts.host``) on a fabric: given messages between
hosts, with start times, DCQCN and transport parameters; collect their summaries and
per-flow telemetry. The paper's two-flow experiment (Fig 9) and the transport tests
run on this.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from hosts.dcqcn import DcqcnParams
from hosts.nic import TransportParams
from hosts.scale import DEFAULT as DEFAULT_SCALE, Scale
from topologies.fabric import REPO_ROOT


@dataclass(frozen=True)
class Message:
    src: str            # host name
    dst: str
    nbytes: int
    start_s: float = 0.0
    job: int = 1
    channel: int = 0
    step: int = 0


def default_dcqcn(line_rate_bps: float, variant: str = "paper",
                  scale: Scale = DEFAULT_SCALE) -> DcqcnParams:
    """DCQCN's real-scale reference values for a link of ``line_rate_bps`` (emulated)."""
    real = scale.real_rate_bps(line_rate_bps)
    base = DcqcnParams.paper(real) if variant == "paper" else DcqcnParams.mlx(real)
    return base.scaled(scale)


def run_messages(fab, messages: list[Message], rundir: str, *, dcqcn: DcqcnParams,
                 transport: TransportParams = TransportParams(), timeout_s: float = 120.0,
                 start_delay_s: float = 1.0, progress=None) -> dict[str, dict]:
    """Start one host process per host involved, all sharing t = 0; wait for them."""
    os.makedirs(rundir, exist_ok=True)
    names = sorted({m.src for m in messages} | {m.dst for m in messages})
    ips = {n: fab[n].IP() for n in names}
    start_at = time.monotonic() + start_delay_s
    procs = {}
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    for n in names:
        cfg = {"name": n, "ip": ips[n], "line_rate_bps": dcqcn.line_rate_bps,
               "dcqcn": asdict(dcqcn), "transport": asdict(transport), "start_at": start_at,
               "timeout_s": timeout_s, "telemetry_path": os.path.join(rundir, f"{n}.jsonl"),
               "sends": [{"peer": ips[m.dst], "bytes": m.nbytes, "start_s": m.start_s,
                          "job": m.job, "channel": m.channel, "step": m.step}
                         for m in messages if m.src == n],
               "receives": [{"peer": ips[m.src], "bytes": m.nbytes, "job": m.job,
                             "channel": m.channel, "step": m.step}
                            for m in messages if m.dst == n]}
        path = os.path.join(rundir, f"{n}.host.json")
        with open(path, "w") as f:
            json.dump(cfg, f, indent=1)
        log = open(os.path.join(rundir, f"{n}.host.log"), "w")
        procs[n] = fab[n].popen([sys.executable, "-m", "hosts.host", "--config", path],
                                stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                                cwd=REPO_ROOT)
        log.close()
    results = {}
    try:
        deadline = time.monotonic() + start_delay_s + timeout_s + 15
        while any(p.poll() is None for p in procs.values()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"host processes still running after {timeout_s} s")
            if progress is not None:
                progress(sum(p.poll() is not None for p in procs.values()), len(procs))
            time.sleep(0.1)
        for n, p in procs.items():
            out = p.stdout.read()
            lines = out.strip().splitlines()
            if not lines:
                with open(os.path.join(rundir, f"{n}.host.log")) as f:
                    raise RuntimeError(f"host {n} exited with {p.returncode} and no summary:\n"
                                       f"{f.read()[-3000:]}")
            results[n] = json.loads(lines[-1])
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
    return results


def read_flows(rundir: str, kind: str) -> list[dict]:
    """All ``send_flow`` or ``recv_flow`` records of a run folder's host telemetry."""
    out = []
    for name in sorted(os.listdir(rundir)):
        if name.endswith(".jsonl") and name.startswith("h"):
            with open(os.path.join(rundir, name)) as f:
                out += [r for r in map(json.loads, f) if r.get("type") == kind]
    return out
