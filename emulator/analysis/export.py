"""A run in the formats researchers' tools read: long-format tables for pandas
(``flows.csv``, ``steps.csv``, ``ports.csv``, ``kernel_queues.csv``, ``pauses.csv``,
``collectives.csv``)
and a timeline for Perfetto or chrome://tracing (``trace.json``, Chrome's trace-event
format); nccl-tests' output is ``emulator.analysis.nccl``'s.

Times in the tables are emulated seconds since the run's t = 0 (``*_s``); the trace's
timestamps are emulated microseconds since t = 0, the dilation in its ``otherData``
(real-scale time = emulated / D). Everything comes from a run folder's records and its
analysis (``report.analyze_run``); written by ``run`` and ``report``.

Columns (docs/architecture.md §6 has what each metric means):

flows.csv  job, ring (the flow's channel: its ring; 2D: 0 rows, 1 columns), pass, step
           (within the pass), src, dst (host names), path (the nodes its packets took,
           from the agents' records; empty if none recorded), start_s (first packet
           sent), end_s (last byte received), bytes, packets, retransmits, timeouts,
           cnps (received by the sender), ce_marks (CE-marked packets the receiver saw)
steps.csv  job, rank, host, pass, step, ring, start_s, end_s: the step's data arriving
           at that rank (its first and last byte): the rank may apply it at end_s
ports.csv  switch, port, t_s, q_bytes (the queue model's backlog), max_q_bytes (since the
           last sample), pkts, bytes, marks_red, marks_symphony, marks_both (cumulative;
           older runs: marks, all causes), model_drops, fault_drops. A port is sampled
           (every ``sample_interval_s``, 10 ms emulated) only when it had traffic or a
           queue since its last sample: a port with no row at a time was idle, its
           queue zero and its counters where its last row left them
kernel_queues.csv  switch, port, t_s, model_bytes (the agent's queue model), kernel_bytes
           (the kernel qdisc's backlog, ``tc -s``), sent_bytes, drops (the qdisc's,
           cumulative): the kernel's queue beside the model, every
           ``kernel_sample_interval_s`` (100 ms emulated), ports with a queue in either
           only (emulated runs; the simulator has no kernel)
pauses.csv node, port, priority, start_s, end_s: each time a lossless fabric's PAUSE
           stopped that port's priority (``topology.flow_control = "pfc"``; the first
           10000 a port; empty on a drop-tail fabric). A host's port is its NIC's
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from dataclasses import dataclass

from emulator.analysis.split import recorded_paths, recorded_ports
from emulator.analysis.summary import RunResult
from emulator.rundir import RunFolder
from runtime.records import (Control, FlowReceived, FlowSent, KernelQueue,
                             PortPause, PortSample, Window)
from topologies import wiring



@dataclass(frozen=True)
class FlowRow:
    """A row of ``flows.csv`` (the module's docstring; ``pass_index`` is column ``pass``)."""
    job: int
    ring: int
    pass_index: int
    step: int
    rank: int | None
    src: str
    dst: str
    path: str
    egress_ports: str
    start_s: float | None
    end_s: float | None
    bytes: int
    packets: int
    retransmits: int
    timeouts: int
    cnps: int
    ce_marks: int


@dataclass(frozen=True)
class StepRow:
    """A row of ``steps.csv``."""
    job: int
    rank: int | None
    host: str
    pass_index: int
    step: int
    ring: int
    start_s: float | None
    end_s: float | None


def _column(name: str) -> str:
    return "pass" if name == "pass_index" else name


def _columns(row_type) -> tuple[str, ...]:
    return tuple(_column(f.name) for f in dataclasses.fields(row_type))


def _csv_row(row) -> dict:
    return {_column(k): v for k, v in vars(row).items()}


FLOW_COLUMNS = _columns(FlowRow)
STEP_COLUMNS = _columns(StepRow)
PORT_COLUMNS = ("switch", "port", "t_s", "q_bytes", "max_q_bytes", "pkts", "bytes",
                "marks_red", "marks_symphony", "marks_both", "model_drops", "fault_drops")
PAUSE_COLUMNS = ("node", "port", "priority", "start_s", "end_s")
KERNEL_QUEUE_COLUMNS = ("switch", "port", "t_s", "model_bytes", "kernel_bytes", "sent_bytes",
                        "drops")
COLLECTIVE_COLUMNS = ("job", "pass", "ranks", "bytes", "start_s", "end_s", "cct_s", "bound_s",
                      "cct_over_bound", "verified")


class _Run:
    """What every export needs of one run: its records, t = 0, hosts by IP, paths."""

    def __init__(self, rundir: str):
        self.folder = RunFolder(rundir)
        self.man = self.folder.manifest
        self.meas = self.folder.measurements
        self.plan = self.folder.plan
        self.sends = self.folder.host_records(FlowSent)
        self.recvs = self.folder.host_records(FlowReceived)
        self.t0 = (self.meas.t_start if self.meas.t_start is not None
                   else min((s.start_s for s in self.sends), default=0.0))
        self.host_of = {c.ip: h for h, c in self.plan.hosts.items()}
        self.ports = recorded_ports(self.folder, self.plan)
        self.paths = recorded_paths(self.folder, self.plan, self.ports)
        self.steps = {x.job: x.steps for x in self.plan.layouts}
        self.ranks = {x.job: {h: i for i, h in enumerate(x.hosts)} for x in self.plan.layouts}
        self.switches = wiring.switch_names(self.plan.fabric)
        self._agent: dict[str, list] = {}

    def agent(self, switch: str, kind: type) -> list:
        """A switch's records of one type (its file read once)."""
        if switch not in self._agent:
            self._agent[switch] = self.folder.agent_records(switch)
        return [x for x in self._agent[switch] if type(x) is kind]

    def rel(self, t: float | None) -> float | None:
        return None if t is None else round(t - self.t0, 9)

    def pass_step(self, job: int, wire_step: int) -> tuple[int, int]:
        """(pass, step) of a flow's 16-bit wire step (pass x steps + step): right for the
        first 65536 steps of a job, which every spec here stays below."""
        n = self.steps.get(job) or 1
        return wire_step // n, wire_step % n


# --- tables ------------------------------------------------------------------------------

def flow_rows(r: _Run) -> list[FlowRow]:
    recvs = {(x.job, x.channel, x.step, x.src, x.dst): x for x in r.recvs}
    rows = []
    for s in r.sends:
        key = (s.job, s.channel, s.step, s.src, s.dst)
        rv = recvs.get(key)
        p, st = r.pass_step(s.job, s.step)
        src = r.host_of.get(s.src, s.src)
        path = r.paths.get(key, ())
        rows.append(FlowRow(
            job=s.job, ring=s.channel, pass_index=p, step=st,
            rank=r.ranks.get(s.job, {}).get(src), src=src, dst=r.host_of.get(s.dst, s.dst),
            path=">".join(path),
            egress_ports=">".join(r.ports[key][n] for n in path if n in r.ports.get(key, {})),
            start_s=r.rel(s.start_s), end_s=r.rel(rv and rv.end_s), bytes=s.bytes,
            packets=s.packets, retransmits=s.retransmits, timeouts=s.timeouts, cnps=s.cnps,
            ce_marks=rv.ce if rv else 0))
    rows.sort(key=lambda x: (x.job, x.start_s if x.start_s is not None else 0.0))
    return rows


def step_rows(r: _Run) -> list[StepRow]:
    rows = []
    for x in r.recvs:
        host = r.host_of.get(x.dst, x.dst)
        p, st = r.pass_step(x.job, x.step)
        rows.append(StepRow(job=x.job, rank=r.ranks.get(x.job, {}).get(host), host=host,
                            pass_index=p, step=st, ring=x.channel,
                            start_s=r.rel(x.start_s), end_s=r.rel(x.end_s)))
    rows.sort(key=lambda x: (x.job, x.rank if x.rank is not None else -1, x.pass_index,
                             x.step))
    return rows


def port_rows(r: _Run) -> list[dict]:
    rows = []
    for sw in r.switches:
        for x in r.agent(sw, PortSample):
            rows.append({"switch": sw, "port": x.port, "t_s": r.rel(x.t_s),
                         "q_bytes": x.q_bytes, "max_q_bytes": x.max_q_bytes,
                         "pkts": x.pkts, "bytes": x.bytes, "marks_red": x.marks_red,
                         "marks_symphony": _blank(x.marks_symphony),
                         "marks_both": _blank(x.marks_both),
                         "model_drops": x.model_drops, "fault_drops": x.fault_drops})
    return rows


def pauses(r: _Run) -> list[tuple[str, PortPause]]:
    """(node, record) of every port a lossless fabric paused or that paused its link."""
    return [(x.port.rsplit("-", 1)[0], x) for x in r.folder.host_records(PortPause)] + \
        [(sw, x) for sw in r.switches for x in r.agent(sw, PortPause)]


def pause_rows(r: _Run) -> list[dict]:
    return [{"node": node, "port": x.port, "priority": x.priority, "start_s": r.rel(a),
             "end_s": r.rel(b)} for node, x in pauses(r) for a, b in x.intervals]


def kernel_queue_rows(r: _Run) -> list[dict]:
    return [{"switch": sw, "port": x.port, "t_s": r.rel(x.t_s),
             **{k: getattr(x, k) for k in KERNEL_QUEUE_COLUMNS[3:]}}
            for sw in r.switches for x in r.agent(sw, KernelQueue)]


def _blank(x):
    return "" if x is None else x


def write_tables(rundir: str, r: _Run | None = None) -> list[str]:
    """``flows.csv``, ``steps.csv``, ``ports.csv``, ``pauses.csv`` and
    ``kernel_queues.csv`` in the run folder; their paths."""
    r = r or _Run(rundir)
    out = []
    for name, cols, rows in (("flows.csv", FLOW_COLUMNS, map(_csv_row, flow_rows(r))),
                             ("steps.csv", STEP_COLUMNS, map(_csv_row, step_rows(r))),
                             ("ports.csv", PORT_COLUMNS, port_rows(r)),
                             ("pauses.csv", PAUSE_COLUMNS, pause_rows(r)),
                             ("kernel_queues.csv", KERNEL_QUEUE_COLUMNS,
                              kernel_queue_rows(r))):
        path = os.path.join(rundir, name)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        out.append(path)
    return out


def write_collectives(run: RunResult) -> str:
    """``collectives.csv`` in the run folder from its analysis (``report.analyze_run``):
    a row per collective, times from the run's t = 0 as in summary.json and the other
    tables; a collective that never completed has no times and ``verified`` false."""
    path = os.path.join(run.rundir, "collectives.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLLECTIVE_COLUMNS)
        w.writeheader()
        for j in run.jobs:
            for c in j.collectives:
                done = c.cct_s is not None
                w.writerow({"job": j.job, "pass": c.pass_index, "ranks": j.ranks,
                            "bytes": c.nbytes,
                            "start_s": round(c.start_s, 9) if done else "",
                            "end_s": round(c.start_s + c.cct_s, 9) if done else "",
                            "cct_s": c.cct_s if done else "",
                            "bound_s": c.theoretical_cct_s,
                            "cct_over_bound": c.cct_ratio if done else "",
                            "verified": c.verified})
    return path


# --- the timeline ------------------------------------------------------------------------

SWITCH_PID0 = 1000            # trace process ids: jobs 1..; switches from here
PAUSE_PID = SWITCH_PID0 - 1   # the ports a lossless fabric paused


def trace(r: _Run) -> dict:
    """Chrome trace-event JSON: a process per job with, per (rank, ring), one async slice
    per flow the rank sent (a rank sends step s+1 while step s is in flight, so its flows
    overlap without nesting: as complete ("X") events on one thread they would break the
    importer's stack; async slices, one id per flow, may overlap); a process per switch
    with counters per port (queue, marks by cause) and per job (the tracker's step_min
    and alpha); on a lossless fabric a process with a track per paused port, a slice per
    pause; instant events for perturbations and for control commands (Symphony switched
    on or off)."""
    us = 1e6
    ev: list[dict] = []
    tracks: dict[tuple, int] = {}
    for n, row in enumerate(flow_rows(r)):
        if row.start_s is None or row.end_s is None:
            continue
        job = row.job
        rank = r.ranks.get(job, {}).get(row.src, 0)
        tid = tracks.setdefault((job, row.src, row.ring), rank * 64 + row.ring)
        common = {"name": f"job {job} ring {row.ring} pass {row.pass_index} step "
                          f"{row.step}", "cat": f"h{rank} ring {row.ring}",
                  "id": n + 1, "pid": job, "tid": tid}
        ev.append({**common, "ph": "b", "ts": row.start_s * us,
                   "args": {"src": row.src, "dst": row.dst, "path": row.path,
                            "bytes": row.bytes, "retransmits": row.retransmits,
                            "cnps": row.cnps, "ce_marks": row.ce_marks}})
        ev.append({**common, "ph": "e", "ts": row.end_s * us})
    for (job, host, ring), tid in tracks.items():
        ev.append({"name": "thread_name", "ph": "M", "pid": job, "tid": tid,
                   "args": {"name": f"{host} ring {ring}"}})
    for job in sorted({j for j, _, _ in tracks}):
        ev.append({"name": "process_name", "ph": "M", "pid": job, "args": {"name": f"job {job}"}})
    for i, sw in enumerate(r.switches):
        pid = SWITCH_PID0 + i
        ev.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": sw}})
        for x in r.agent(sw, PortSample):
            ts = r.rel(x.t_s) * us
            ev.append({"name": f"{x.port} queue (B)", "ph": "C", "pid": pid, "ts": ts,
                       "args": {"q_bytes": x.q_bytes}})
            if x.marks_symphony is not None:        # None: a run from before marks by cause
                ev.append({"name": f"{x.port} marks", "ph": "C", "pid": pid, "ts": ts,
                           "args": {"red": x.marks_red, "symphony": x.marks_symphony,
                                    "both": x.marks_both}})
        for x in r.agent(sw, Window):
            ring = "" if x.ring is None else f" ring {x.ring}"
            ev.append({"name": f"job {x.job}{ring} tracker", "ph": "C", "pid": pid,
                       "ts": r.rel(x.t_s) * us,
                       "args": {"step_min": x.step_min, "alpha": x.alpha}})
        for x in r.agent(sw, Control):
            # a control command and its reply as the agent's protocol has them (free-form)
            cmd = x.command if isinstance(x.command, dict) else {}
            if cmd.get("cmd") == "symphony":
                what = ("on" if cmd["enabled"] else "off") if "enabled" in cmd else "set " + \
                    " ".join(f"{k}={v}" for k, v in cmd.items() if k != "cmd")
                ev.append({"name": f"symphony {what}", "ph": "i", "s": "p", "pid": pid,
                           "ts": r.rel(x.t_s) * us, "args": {"reply_ok": bool(
                               (x.reply or {}).get("ok"))}})
    paused = [(node, x) for node, x in pauses(r) if x.intervals]
    if paused:                      # a lossless fabric: a track per paused port
        ev.append({"name": "process_name", "ph": "M", "pid": PAUSE_PID,
                   "args": {"name": "PFC pauses"}})
    for tid, (node, x) in enumerate(paused):
        ev.append({"name": "thread_name", "ph": "M", "pid": PAUSE_PID, "tid": tid,
                   "args": {"name": f"{x.port} priority {x.priority}"}})
        ev += [{"name": "paused", "cat": "pfc", "ph": "X", "pid": PAUSE_PID, "tid": tid,
                "ts": r.rel(a) * us, "dur": (b - a) * us} for a, b in x.intervals]
    for p in r.meas.perturbations:
        if p.fired_s is not None:           # None: at set-up, before t = 0
            ev.append({"name": p.what, "cat": "perturbation", "ph": "i", "s": "g",
                       "pid": 0, "ts": p.fired_s * us})
    return {"traceEvents": ev, "displayTimeUnit": "ms",
            "otherData": {"run": r.man.name, "scheme": r.man.scheme,
                          "seed": r.man.seed, "dilation": r.plan.scale.dilation,
                          "time": "emulated microseconds since t = 0; real-scale time = "
                                  "emulated / dilation"}}


def write_trace(rundir: str, r: _Run | None = None) -> str:
    path = os.path.join(rundir, "trace.json")
    with open(path, "w") as f:
        f.write(json.dumps(trace(r or _Run(rundir))))   # dumps: the C encoder
    return path


def write_run(rundir: str, force: bool = False) -> list[str]:
    """Every per-run export (tables and trace); their paths. Kept if already newer than
    the run's measurements (a sweep summarizes its runs again after each one), unless
    ``force``."""
    trace_path = os.path.join(rundir, "trace.json")
    meas = os.path.join(rundir, "measurements.json")
    if not force and os.path.exists(trace_path) and os.path.exists(meas) \
            and os.path.getmtime(trace_path) >= os.path.getmtime(meas):
        return [os.path.join(rundir, n) for n in ("flows.csv", "steps.csv", "ports.csv")] \
            + [trace_path]
    r = _Run(rundir)
    return write_tables(rundir, r) + [write_trace(rundir, r)]
