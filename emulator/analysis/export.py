"""A run in the formats researchers' tools read (issue 16): long-format tables for pandas
(``flows.csv``, ``steps.csv``, ``ports.csv``), a timeline for Perfetto or
chrome://tracing (``trace.json``, Chrome's trace-event format), and nccl-tests' output
(their text columns and their ``-J`` JSON) for their analysis scripts.

Times in the tables are emulated seconds since the run's t = 0 (``*_s``); the trace's
timestamps are emulated microseconds since t = 0, the dilation in its ``otherData``
(real-scale time = emulated / D). nccl-tests' columns are real-scale equivalents, as their
tool would print them on the paper's 10 Gb/s fabric. Everything comes from a run folder's
files and its analysis (``report.analyze_run``); written by ``run`` and ``report``.

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
"""

from __future__ import annotations

import csv
import json
import os
import time

from emulator.analysis.split import recorded_paths, recorded_ports
from emulator.rundir import RunFolder
from runtime.records import (CollectiveDone, Control, FlowReceived, FlowSent, KernelQueue,
                             PortSample, Window)
from runtime.scale import Scale
from topologies import wiring

FLOW_COLUMNS = ("job", "ring", "pass", "step", "rank", "src", "dst", "path", "egress_ports",
                "start_s", "end_s", "bytes", "packets", "retransmits", "timeouts", "cnps",
                "ce_marks")
STEP_COLUMNS = ("job", "rank", "host", "pass", "step", "ring", "start_s", "end_s")
PORT_COLUMNS = ("switch", "port", "t_s", "q_bytes", "max_q_bytes", "pkts", "bytes",
                "marks_red", "marks_symphony", "marks_both", "model_drops", "fault_drops")
KERNEL_QUEUE_COLUMNS = ("switch", "port", "t_s", "model_bytes", "kernel_bytes", "sent_bytes",
                        "drops")
COLLECTIVE_COLUMNS = ("job", "pass", "ranks", "bytes", "start_s", "end_s", "cct_s", "bound_s",
                      "cct_over_bound", "verified")
NCCL_TYPE = {"ring_allgather": "none"}          # nccl-tests' redop column for all-gather


class _Run:
    """What every export needs of one run: its records, t = 0, hosts by IP, paths."""

    def __init__(self, rundir: str):
        self.folder = RunFolder(rundir)
        self.man = self.folder.manifest
        self.meas = self.folder.measurements
        self.plan = self.folder.plan
        self.sends = self.folder.host_records(FlowSent)
        self.recvs = self.folder.host_records(FlowReceived)
        self.t0 = self.meas.get("t_start", min((s.start_s for s in self.sends), default=0.0))
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

def flow_rows(r: _Run) -> list[dict]:
    recvs = {(x.job, x.channel, x.step, x.src, x.dst): x for x in r.recvs}
    rows = []
    for s in r.sends:
        key = (s.job, s.channel, s.step, s.src, s.dst)
        rv = recvs.get(key)
        p, st = r.pass_step(s.job, s.step)
        src = r.host_of.get(s.src, s.src)
        path = r.paths.get(key, ())
        rows.append({"job": s.job, "ring": s.channel, "pass": p, "step": st,
                     "rank": r.ranks.get(s.job, {}).get(src), "src": src,
                     "dst": r.host_of.get(s.dst, s.dst),
                     "path": ">".join(path),
                     "egress_ports": ">".join(r.ports[key][n] for n in path
                                              if n in r.ports.get(key, {})),
                     "start_s": r.rel(s.start_s), "end_s": r.rel(rv and rv.end_s),
                     "bytes": s.bytes, "packets": s.packets, "retransmits": s.retransmits,
                     "timeouts": s.timeouts, "cnps": s.cnps, "ce_marks": rv.ce if rv else 0})
    rows.sort(key=lambda x: (x["job"], x["start_s"] if x["start_s"] is not None else 0.0))
    return rows


def step_rows(r: _Run) -> list[dict]:
    rows = []
    for x in r.recvs:
        host = r.host_of.get(x.dst, x.dst)
        p, st = r.pass_step(x.job, x.step)
        rows.append({"job": x.job, "rank": r.ranks.get(x.job, {}).get(host), "host": host,
                     "pass": p, "step": st, "ring": x.channel,
                     "start_s": r.rel(x.start_s), "end_s": r.rel(x.end_s)})
    rows.sort(key=lambda x: (x["job"], x["rank"] if x["rank"] is not None else -1,
                             x["pass"], x["step"]))
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


def kernel_queue_rows(r: _Run) -> list[dict]:
    return [{"switch": sw, "port": x.port, "t_s": r.rel(x.t_s),
             **{k: getattr(x, k) for k in KERNEL_QUEUE_COLUMNS[3:]}}
            for sw in r.switches for x in r.agent(sw, KernelQueue)]


def _blank(x):
    return "" if x is None else x


def write_tables(rundir: str, r: _Run | None = None) -> list[str]:
    """``flows.csv``, ``steps.csv``, ``ports.csv`` and ``kernel_queues.csv`` in the run
    folder; their paths."""
    r = r or _Run(rundir)
    out = []
    for name, cols, rows in (("flows.csv", FLOW_COLUMNS, flow_rows(r)),
                             ("steps.csv", STEP_COLUMNS, step_rows(r)),
                             ("ports.csv", PORT_COLUMNS, port_rows(r)),
                             ("kernel_queues.csv", KERNEL_QUEUE_COLUMNS,
                              kernel_queue_rows(r))):
        path = os.path.join(rundir, name)
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
        out.append(path)
    return out


def write_collectives(run: dict) -> str:
    """``collectives.csv`` in the run folder from its analysis (``report.analyze_run``):
    a row per collective, times from the run's t = 0 as in summary.json and the other
    tables; a collective that never completed has no times and ``verified`` false."""
    path = os.path.join(run["rundir"], "collectives.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLLECTIVE_COLUMNS)
        w.writeheader()
        for j in run["jobs"]:
            for c in j["collectives"]:
                done = c["cct_s"] is not None
                w.writerow({"job": j["job"], "pass": c["pass"], "ranks": j["ranks"],
                            "bytes": c["nbytes"],
                            "start_s": round(c["start_s"], 9) if done else "",
                            "end_s": round(c["start_s"] + c["cct_s"], 9) if done else "",
                            "cct_s": c["cct_s"] if done else "",
                            "bound_s": c["theoretical_cct_s"],
                            "cct_over_bound": c["cct_ratio"] if done else "",
                            "verified": c["verified"]})
    return path


# --- the timeline ------------------------------------------------------------------------

SWITCH_PID0 = 1000            # trace process ids: jobs 1..; switches from here


def trace(r: _Run) -> dict:
    """Chrome trace-event JSON: a process per job with, per (rank, ring), one async slice
    per flow the rank sent (a rank sends step s+1 while step s is in flight, so its flows
    overlap without nesting: as complete ("X") events on one thread they would break the
    importer's stack; async slices, one id per flow, may overlap); a process per switch
    with counters per port (queue, marks by cause) and per job (the tracker's step_min
    and alpha); instant events for perturbations and for control commands (Symphony
    switched on or off)."""
    us = 1e6
    ev: list[dict] = []
    tracks: dict[tuple, int] = {}
    for n, row in enumerate(flow_rows(r)):
        if row["start_s"] is None or row["end_s"] is None:
            continue
        job = row["job"]
        rank = r.ranks.get(job, {}).get(row["src"], 0)
        tid = tracks.setdefault((job, row["src"], row["ring"]), rank * 64 + row["ring"])
        common = {"name": f"job {job} ring {row['ring']} pass {row['pass']} step "
                          f"{row['step']}", "cat": f"h{rank} ring {row['ring']}",
                  "id": n + 1, "pid": job, "tid": tid}
        ev.append({**common, "ph": "b", "ts": row["start_s"] * us,
                   "args": {k: row[k] for k in ("src", "dst", "path", "bytes", "retransmits",
                                                "cnps", "ce_marks")}})
        ev.append({**common, "ph": "e", "ts": row["end_s"] * us})
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
            ev.append({"name": f"job {x.job} tracker", "ph": "C", "pid": pid,
                       "ts": r.rel(x.t_s) * us,
                       "args": {"step_min": x.step_min, "alpha": x.alpha}})
        for x in r.agent(sw, Control):
            cmd = x.command if isinstance(x.command, dict) else {}
            if cmd.get("cmd") == "symphony":
                what = ("on" if cmd["enabled"] else "off") if "enabled" in cmd else "set " + \
                    " ".join(f"{k}={v}" for k, v in cmd.items() if k != "cmd")
                ev.append({"name": f"symphony {what}", "ph": "i", "s": "p", "pid": pid,
                           "ts": r.rel(x.t_s) * us, "args": {"reply_ok": bool(
                               (x.reply or {}).get("ok"))}})
    for p in r.meas.get("perturbations", []):
        if "fired_s" in p:
            ev.append({"name": p["what"], "cat": "perturbation", "ph": "i", "s": "g",
                       "pid": 0, "ts": p["fired_s"] * us})
    return {"traceEvents": ev, "displayTimeUnit": "ms",
            "otherData": {"run": r.man["name"], "scheme": r.man["scheme"],
                          "seed": r.man["seed"], "dilation": r.plan.scale.dilation,
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


# --- nccl-tests ----------------------------------------------------------------------------

def nccl_rows(summary: dict) -> list[dict]:
    """One row per completed collective of every faithful run: nccl-tests' fields, at real
    scale (their time in µs, bandwidths in GB/s); a wrong result counts 1 in #wrong."""
    sc = Scale(summary["scale"]["dilation"])
    rows = []
    for run in summary["runs"]:
        for j in run["jobs"]:
            for c in j["collectives"]:
                if c["cct_s"] is None:
                    continue
                rows.append({
                    "size": c["nbytes"], "count": c["nbytes"] // 4, "type": "float",
                    "redop": NCCL_TYPE.get(j.get("algorithm"), "sum"), "root": -1,
                    "time": sc.real_time_s(c["cct_s"]) * 1e6,
                    "alg_bw": sc.real_rate_bps(c["algbw_bps"]) / 8 / 1e9,
                    "bus_bw": sc.real_rate_bps(c["busbw_bps"]) / 8 / 1e9,
                    "nwrong": 0 if c["verified"] else 1,
                    "experiment_name": f"{summary['name']}/{run['scheme']}/seed{run['seed']}"
                                       f"/job{j['job']}/pass{c['pass']}",
                    "faithful": run["fidelity"]["faithful"]})
    return rows


def _num(value: float, width: int) -> str:
    """A number in ``width`` characters the way nccl-tests prints its columns: 2, 1 or 0
    decimals as the integer part grows, then exponent notation."""
    digits = len(str(int(abs(value)))) if abs(value) >= 1 else 0
    if digits < width - 2:
        return f"{value:{width}.2f}"
    if digits < width - 1:
        return f"{value:{width}.1f}"
    if digits < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def nccl_tests_text(summary: dict) -> str:
    """nccl-tests' result table and footer, one block per scheme (as if their test ran
    once per scheme; a row per collective of each faithful run). The emulator has one
    buffer mode, so the in-place columns repeat the out-of-place ones (their parsers read
    either). Unfaithful runs are left out, as everywhere (counted in a comment line)."""
    every = nccl_rows(summary)
    out = [f"# symphony-emu: {summary['name']}, real-scale equivalent times "
           f"(emulated / D = {summary['scale']['dilation']:g})"]
    for scheme in dict.fromkeys(x["experiment_name"].split("/")[1] for x in every):
        mine = [x for x in every if x["experiment_name"].split("/")[1] == scheme]
        rows = [x for x in mine if x["faithful"]]
        out += ["#", f"# scheme: {scheme} ({len(rows)} collective(s) of faithful runs)",
                "#",
                f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place"
                f"                       in-place          ",
                f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  "
                f"{'time':>7}  {'algbw':>6}  {'busbw':>6}  {'#wrong':>6}  {'time':>7}  "
                f"{'algbw':>6}  {'busbw':>6}  {'#wrong':>6} ",
                f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  {'(us)':>7}  "
                f"{'(GB/s)':>6}  {'(GB/s)':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  "
                f"{'(GB/s)':>6}  {'':>6} "]
        for x in rows:
            body = f"  {_num(x['time'], 7)}  {_num(x['alg_bw'], 6)}  {_num(x['bus_bw'], 6)}" \
                   f"  {x['nwrong']:>6}"
            out.append(f"{x['size']:>12}  {x['count']:>12}  {x['type']:>8}  {x['redop']:>6}  "
                       f"{x['root']:>6}{body}{body}")
        wrong = sum(x["nwrong"] for x in rows)
        avg = sum(x["bus_bw"] for x in rows) / len(rows) if rows else 0.0
        if len(mine) > len(rows):
            out.append(f"# {len(mine) - len(rows)} collective(s) of unfaithful runs left out")
        out += [f"# {'Out of bounds values':<20} : {wrong} {'FAILED' if wrong else 'OK'}",
                f"# {'Avg bus bandwidth':<20} : {avg:g} ", "#"]
    return "\n".join(out) + "\n"


def rank_times(rundir: str) -> dict:
    """{(job, pass): {rank: seconds}} from a run's per-rank ``collective`` records: each
    rank's end less the pass's earliest start, so that the largest is the pass's CCT (as
    nccl-tests' per-iteration time is the largest over its processes)."""
    out: dict = {}
    for c in RunFolder(rundir).host_records(CollectiveDone):
        out.setdefault((c.job, c.pass_index), []).append(c)
    return {k: {c.rank: c.end_s - min(x.start_s for x in cs) for c in cs}
            for k, cs in out.items()}


def _iter_stats(times: list[float]) -> dict:
    avg = sum(times) / len(times)
    std = (sum((t - avg) ** 2 for t in times) / (len(times) - 1)) ** 0.5 if len(times) > 1 \
        else 0.0
    ordered = sorted(times)
    return {"avg_us": avg, "min_us": ordered[0], "max_us": ordered[-1],
            "p99_us": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "cv_pct": std / avg * 100 if avg else 0.0}


def nccl_tests_json(summary: dict, scheme: str, argv: list[str] | None = None,
                    ranks: dict | None = None) -> dict:
    """One scheme's results in the shape of nccl-tests' ``-J`` file with per-iteration
    timing (``-I 1``): a result per (seed, job, size), its iterations the job's passes of
    that size, its processes the job's ranks (``ranks``: each faithful run's
    :func:`rank_times`, by run folder; without them, no per-iteration data). Times in
    µs and bandwidths in GB/s at real scale; both placements carry the same numbers (the
    emulator has one buffer mode). nccl-tests' ``analyze_perf_json.py`` reads it."""
    sc = Scale(summary["scale"]["dilation"])
    us = sc.real_time_s(1.0) * 1e6                 # emulated seconds -> real-scale µs
    results, wrong_total, nranks = [], 0, 0
    for run in summary["runs"]:
        if run["scheme"] != scheme or not run["fidelity"]["faithful"]:
            continue
        per_rank = (ranks or {}).get(run["rundir"], {})
        for j in run["jobs"]:
            by_size: dict = {}
            for c in j["collectives"]:
                if c["cct_s"] is not None:
                    by_size.setdefault(c["nbytes"], []).append(c)
            for size, cs in by_size.items():
                avg_s = sum(c["cct_s"] for c in cs) / len(cs)
                alg = size / sc.real_time_s(avg_s) / 1e9
                bus = alg * (cs[0]["busbw_bps"] / cs[0]["algbw_bps"])
                wrong = sum(0 if c["verified"] else 1 for c in cs)
                wrong_total += wrong
                placed = {"time": avg_s * us, "alg_bw": alg, "bus_bw": bus, "nwrong": wrong}
                result = {"size": size, "count": size // 4, "type": "float",
                          "redop": NCCL_TYPE.get(j.get("algorithm"), "sum"),
                          "root": f"{-1:6d}", "out_of_place": placed, "in_place": placed,
                          "actual_iterations": len(cs),
                          "experiment_name": f"{summary['name']}/{scheme}/seed{run['seed']}"
                                             f"/job{j['job']}"}
                rows = [per_rank.get((j["job"], c["pass"]), {}) for c in cs]
                members = sorted(set().union(*rows)) if rows else []
                if members and all(set(r) == set(members) for r in rows):
                    nranks = max(nranks, len(members))
                    per_process = [[r[m] * us for r in rows] for m in members]
                    per_iter = {"times_us": [max(col) for col in zip(*per_process)],
                                "per_process_max_times_us": per_process}
                    per_iter.update(_iter_stats(per_iter["times_us"]))
                    result["out_of_place_per_iter"] = result["in_place_per_iter"] = per_iter
                results.append(result)
    now = time.strftime("%Y-%m-%d %H:%M:%S")
    avg_bus = sum(r["out_of_place"]["bus_bw"] for r in results) / len(results) if results \
        else 0.0
    sizes = [r["size"] for r in results]
    return {"version": 2, "start_time": now, "args": list(argv or []), "env": [],
            "nccl_version": 0, "symphony_emu": {"scheme": scheme, "ranks": nranks,
                                                "real_scale": True,
                                                "dilation": summary["scale"]["dilation"]},
            "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": min(sizes, default=0),
                       "maximum_bytes": max(sizes, default=0), "step_bytes": 0,
                       "warmup_iters": 0,
                       "iterations": max((r["actual_iterations"] for r in results),
                                         default=0),
                       "aggregated_iterations": 1, "validation": 1, "graph": 0,
                       "blocking_collectives": "false", "per_iter_timing": "true",
                       "parallel_init": "false",
                       "devices": [{"rank": k, "hostname": f"rank{k}"} for k in range(nranks)]},
            "results": results,
            "out_of_bounds": {"count": wrong_total, "okay": "true" if not wrong_total
                              else "false"},
            "average_bus_bandwidth": {"bandwidth": avg_bus, "okay": "unchecked"},
            "errors": [], "end_time": now}


def write_nccl_tests_json(out_dir: str, summary: dict) -> list[str]:
    """``nccl-tests-<scheme>.json`` per scheme (one file mixing schemes would average their
    bandwidths together); a mixed ``nccl-tests.json`` of an older report is removed."""
    ranks = {r["rundir"]: rank_times(r["rundir"]) for r in summary["runs"]
             if r["fidelity"]["faithful"] and os.path.isdir(r["rundir"])}
    paths = []
    for scheme in dict.fromkeys(r["scheme"] for r in summary["runs"]):
        path = os.path.join(out_dir, f"nccl-tests-{scheme}.json")
        with open(path, "w") as f:
            json.dump(nccl_tests_json(summary, scheme, ranks=ranks), f, indent=1)
        paths.append(path)
    old = os.path.join(out_dir, "nccl-tests.json")
    if os.path.exists(old):
        os.remove(old)
    return paths
