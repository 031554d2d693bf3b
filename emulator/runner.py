"""Run an experiment spec: for each scheme and seed, build the fabric, start the switch
agents and one rank process per host, show progress, enforce the timeout, collect the
logs and tear down exactly what was created. Each run gets a folder::

    <out>/<scheme>-seed<seed>/
        manifest.json      spec, scheme, seed, scale, layouts, versions, git revision
        measurements.json  what only the live run can measure (CPU load, agent counters)
        h*.jsonl           host telemetry (flows, collectives, summaries)
        leaf*/spine*.jsonl agent telemetry
        *.host.json, *.agent.json, *.log   configs and logs

``emulator.report`` turns those into ``summary.json`` and plots (also later, from the
folder alone: ``symphony-emu report DIR``).
"""

from __future__ import annotations

import json
import os
import platform
import selectors
import subprocess
import sys
import time
from dataclasses import asdict

from emulator import jobs as joblib
from emulator.messages import default_dcqcn
from emulator.network import Fabric
from emulator.spec import Spec
from hosts.nic import TransportParams
from hosts.scale import Scale
from topologies import fabric
from topologies.dumbbell import DumbbellTopo
from topologies.leafspine import LeafSpineTopo


def scale_of(spec: Spec) -> Scale:
    return Scale(spec.scale.dilation)


def link_rate_bps(spec: Spec) -> float:
    return scale_of(spec).rate_bps(spec.topology.link_rate_gbps * 1e9)


def transport_params(spec: Spec) -> TransportParams:
    """The hosts' transport: the spec's real-scale timers dilated like every other timer."""
    tr, sc = spec.transport, scale_of(spec)
    return TransportParams(mtu_bytes=tr.mtu_bytes, ack_every=tr.ack_every,
                           per_step_sport=tr.per_step_sport, rto_s=sc.time_s(tr.rto_us * 1e-6),
                           nak_timeout_s=sc.time_s(tr.nak_timeout_us * 1e-6))


def layouts(spec: Spec) -> list[joblib.JobLayout]:
    sc = scale_of(spec)
    return [joblib.layout(j, spec.topology, sc.time_s) for j in spec.jobs]


def path_hops(spec: Spec) -> int:
    """Links on the longest host-to-host path."""
    t = spec.topology
    return 4 if t.kind == "leafspine" and t.leaves > 1 else 2


def agent_config(spec: Spec, scheme: str, seed: int) -> dict:
    """Agent settings of a scheme: ``symphony`` marks, ``pq`` prioritizes lagging flows,
    ``baseline`` runs RED/ECN only. A late start keeps Symphony off until its time."""
    sc = scale_of(spec)
    sw, sy = spec.switch, spec.symphony
    late = any(p.kind == "symphony_late_start" for p in spec.perturbations)
    return {"seed": seed, "pq": scheme == "pq",
            "red": {"enabled": sw.red, "kmin_bytes": sw.kmin_bytes, "kmax_bytes": sw.kmax_bytes,
                    "pmax": sw.pmax},
            "symphony": {"enabled": scheme == "symphony" and not late, "k": sy.k, "tau": sy.tau,
                         "t_win_s": sc.time_s(sy.t_win_us * 1e-6), "n_warmup": sy.n_warmup,
                         "n_sample": sy.n_sample}}


def port_toward(spec: Spec, switch: str, neighbor: str) -> str:
    """``switch``'s interface on its link to ``neighbor`` in this spec's fabric."""
    t = spec.topology
    pods = t.pods > 1
    return fabric.port_toward(switch, neighbor, t.per_leaf, t.leaves if pods else 0,
                              t.spines if pods else 0)


def port_rates(spec: Spec) -> dict[str, dict[str, float]]:
    """Slower hops of ``imbalance`` perturbations: {switch: {interface: rate}}."""
    out: dict[str, dict[str, float]] = {}
    for p in spec.perturbations:
        if p.kind == "imbalance":
            intf = port_toward(spec, p.switch, p.toward)
            out.setdefault(p.switch, {})[intf] = link_rate_bps(spec) / p.ratio
    return out


def topology(spec: Spec, scheme: str, seed: int, rundir: str):
    t = spec.topology
    opts = dict(rate_bps=link_rate_bps(spec), buffer_bytes=t.buffer_bytes, routing=t.routing,
                agent=agent_config(spec, scheme, seed), rundir=rundir,
                port_rates=port_rates(spec), pq=scheme == "pq")
    if t.kind == "dumbbell":
        return DumbbellTopo(t.hosts, **opts)
    return LeafSpineTopo(t.leaves, t.spines, t.hosts_per_leaf, pods=t.pods, cores=t.cores,
                         oversubscription=t.oversubscription, servers=t.servers, **opts)


def iperf3_server(dst, port: int, log, once: bool = False):
    """An iperf3 server on host ``dst`` (``once``: exits after one test)."""
    return dst.popen(["iperf3", "-s", *(["-1"] if once else []), "-B", dst.IP(),
                      "-p", str(port)], stdout=log, stderr=subprocess.STDOUT)


def iperf3_udp_client(src, dst, port: int, rate_bps: float, log, nbytes: int | None = None):
    """UDP background traffic from ``src`` to ``dst`` at ``rate_bps`` (emulated), 1400-byte
    datagrams: ``nbytes`` in all, or until stopped."""
    amount = ["-n", str(nbytes)] if nbytes is not None else ["-t", "86400"]
    return src.popen(["iperf3", "-c", dst.IP(), "-B", src.IP(), "-p", str(port), "-u",
                      "-b", str(int(rate_bps)), "-l", "1400", *amount],
                     stdout=log, stderr=subprocess.STDOUT)


class Perturbations:
    """The time-driven perturbations of a run: set up before the ranks start, then fired
    by :meth:`due` from the runner's loop (times relative to the shared start)."""

    def __init__(self, spec: Spec, scheme: str, fab, rundir: str):
        self.spec, self.fab, self.rundir = spec, fab, rundir
        sc = scale_of(spec)
        self.actions: list[tuple[float, str, object]] = []
        self.procs: list = []
        self.log: list[dict] = []
        for i, p in enumerate(spec.perturbations):
            if p.kind == "loss":
                fab.agent(p.switch, {"cmd": "drop_fraction", "value": p.fraction})
                self.log.append({"t_s": 0.0, "what": f"{p.switch} drops {p.fraction:.2%}"})
            elif p.kind == "symphony_late_start" and scheme == "symphony":
                self._at(sc.time_s(p.at_ms * 1e-3), "symphony on everywhere",
                         lambda: fab.agents({"cmd": "symphony", "enabled": True}))
            elif p.kind == "link_down":
                sw, intf = fab[p.switch], port_toward(spec, p.switch, p.toward)
                self._at(sc.time_s(p.at_ms * 1e-3), f"{p.switch}:{intf} down",
                         lambda sw=sw, intf=intf: sw.set_link(intf, False))
                if p.up_ms >= 0:
                    self._at(sc.time_s(p.up_ms * 1e-3), f"{p.switch}:{intf} up",
                             lambda sw=sw, intf=intf: sw.set_link(intf, True))
            elif p.kind == "background":
                self._background(i, p, sc)

    def _at(self, t_s: float, what: str, fn) -> None:
        self.actions.append((t_s, what, fn))
        self.actions.sort(key=lambda a: a[0])

    def _background(self, i: int, p, sc) -> None:
        """iperf3 UDP from src to dst: a server now, the client at start_ms."""
        src, dst = self.fab[p.src], self.fab[p.dst]
        port = 5201 + i
        log = open(os.path.join(self.rundir, f"background{i}.log"), "w")
        self.procs.append(iperf3_server(dst, port, log, once=True))
        rate = sc.rate_bps(p.rate_gbps * 1e9)
        nbytes = int(rate / 8 * sc.time_s(p.duration_ms * 1e-3))

        def start():
            self.procs.append(iperf3_udp_client(src, dst, port, rate, log, nbytes))
        self._at(sc.time_s(p.start_ms * 1e-3), f"background {p.src}->{p.dst} "
                 f"{rate / 1e6:g} Mbit/s for {sc.time_s(p.duration_ms * 1e-3):g} s", start)

    def next_time(self) -> float | None:
        return self.actions[0][0] if self.actions else None

    def due(self, t_rel_s: float) -> None:
        while self.actions and self.actions[0][0] <= t_rel_s:
            t, what, fn = self.actions.pop(0)
            fn()
            self.log.append({"t_s": t, "fired_s": t_rel_s, "what": what})

    def close(self) -> None:
        for p in self.procs:
            fabric.stop_process(p, 5)


def rank_configs(spec: Spec, lays: list[joblib.JobLayout], seed: int, ips: dict[str, str],
                 start_at: float, rundir: str, timeout_s: float) -> dict[str, dict]:
    rate = link_rate_bps(spec)
    dcqcn = default_dcqcn(rate, spec.dcqcn.variant, scale_of(spec))
    transport = transport_params(spec)
    sc = scale_of(spec)
    delays = {p.host: sc.time_s(p.delay_us * 1e-6) for p in spec.perturbations
              if p.kind == "straggler"}
    cfgs: dict[str, dict] = {}
    for lay in lays:
        rank_ips = {str(r): ips[h] for r, h in enumerate(lay.hosts)}
        for rank, host in enumerate(lay.hosts):
            ring_idx = next(i for i, r in enumerate(lay.rings) if rank in r)
            cfg = cfgs.setdefault(host, {
                "name": host, "ip": ips[host], "line_rate_bps": rate, "dcqcn": asdict(dcqcn),
                "transport": asdict(transport), "start_at": start_at, "timeout_s": timeout_s,
                "telemetry_path": os.path.join(rundir, f"{host}.jsonl"), "ranks": []})
            cfg["ranks"].append({
                "job": lay.job, "rank": rank, "algorithm": lay.algorithm,
                "rings": [list(lay.rings[ring_idx])],
                "grid": [list(r) for r in lay.grid] if lay.grid else None,
                "channel": 0 if lay.grid else ring_idx, "rank_ips": rank_ips,
                "nbytes": lay.nbytes, "passes": lay.passes, "compute_gap_s": lay.compute_gap_s,
                "start_s": lay.start_s, "steps_per_collective": lay.steps, "seed": seed,
                "program": [list(c) for c in lay.program] if lay.program else None,
                "after_job": lay.after_job,
                "step_delay_s": delays.get(host, 0.0)})
    return cfgs


def _run_messages(spec: Spec, scheme: str, seed: int, rundir: str, meas: dict, cpu,
                  progress) -> dict:
    """A spec of [[messages]]: one ``hosts.host`` process per host involved."""
    from emulator.messages import Message, run_messages
    sc = scale_of(spec)
    msgs = [Message(m.src, m.dst, m.bytes, sc.time_s(m.start_ms * 1e-3), m.job, m.channel, m.step)
            for m in spec.messages]
    dcqcn = default_dcqcn(link_rate_bps(spec), spec.dcqcn.variant, sc)
    transport = transport_params(spec)
    t_begin = time.monotonic()
    with Fabric(topology(spec, scheme, seed, rundir)) as fab:
        perts = Perturbations(spec, scheme, fab, rundir)
        start_delay = 1.0
        t_start = time.monotonic() + start_delay
        cpu.start()

        def tick(done, total):
            perts.due(time.monotonic() - t_start)
            if progress is not None:
                progress(done, total, time.monotonic() - t_begin)
        try:
            results = run_messages(fab, msgs, rundir, dcqcn=dcqcn, transport=transport,
                                   timeout_s=spec.run.timeout_s, start_delay_s=start_delay,
                                   progress=tick)
        except TimeoutError:
            results = {}
            meas["timed_out"] = True
        finally:
            perts.close()
        meas["cpu_busy"] = cpu.stop()
        meas["wall_s"] = time.monotonic() - t_begin
        meas["agents"] = {name: {"counters": s["counters"]["total"], "nfqueue": s["nfqueue"],
                                  "fidelity": s.get("fidelity", {})}
                          for name, s in fab.agents({"cmd": "stats"}).items()}
        meas["rank_summaries"] = results
        meas["host_exit"] = {h: 0 if r.get("ok") else 1 for h, r in results.items()}
        meas["perturbations"] = perts.log
        meas["t_start"] = t_start
    meas["teardown_leftovers"] = fab.leftovers
    with open(os.path.join(rundir, "measurements.json"), "w") as f:
        json.dump(meas, f, indent=1)
    return meas


class CpuMeter:
    """Busy share of all CPUs between start() and stop(), from /proc/stat."""

    @staticmethod
    def _read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v), idle

    def start(self):
        self._t0 = self._read()

    def stop(self) -> float:
        total, idle = self._read()
        dt, di = total - self._t0[0], idle - self._t0[1]
        return 1 - di / dt if dt else 0.0


def _git_revision() -> str:
    try:
        return subprocess.run(["git", "-C", fabric.REPO_ROOT, "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _versions() -> dict:
    out = {"python": platform.python_version(), "kernel": platform.release()}
    for mod in ("numpy", "scapy", "matplotlib"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:           # noqa: BLE001 - a version is informational only
            out[mod] = None
    try:
        import mininet.net
        out["mininet"] = getattr(mininet.net, "VERSION", None)
    except ImportError:
        out["mininet"] = None
    return out


def write_manifest(rundir: str, spec: Spec, scheme: str, seed: int,
                   lays: list[joblib.JobLayout], **extra) -> None:
    """``manifest.json``: what ran (spec, scheme, seed, scale, layouts, versions)."""
    manifest = {"spec_path": spec.path, "spec": spec.raw, "name": spec.name, "scheme": scheme,
                "seed": seed, "scale": {"dilation": scale_of(spec).dilation},
                "link_rate_bps": link_rate_bps(spec), "mtu_bytes": spec.transport.mtu_bytes,
                "path_hops": path_hops(spec), "layouts": [asdict(x) for x in lays],
                "versions": _versions(), "git_revision": _git_revision(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "machine": {"cpus": os.cpu_count(), "node": platform.node()}, **extra}
    with open(os.path.join(rundir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def run_one(spec: Spec, scheme: str, seed: int, rundir: str, progress=None) -> dict:
    """One (scheme, seed) run into ``rundir``; returns the live measurements."""
    os.makedirs(rundir, exist_ok=True)
    lays = layouts(spec)
    write_manifest(rundir, spec, scheme, seed, lays)
    timeout_s = spec.run.timeout_s
    meas = {"timed_out": False, "host_exit": {}}
    cpu = CpuMeter()
    if spec.messages:
        return _run_messages(spec, scheme, seed, rundir, meas, cpu, progress)
    with Fabric(topology(spec, scheme, seed, rundir)) as fab:
        ips = {h.name: h.IP() for h in fab.hosts}
        cfgs = rank_configs(spec, lays, seed, ips, None, rundir, timeout_s)
        perts = Perturbations(spec, scheme, fab, rundir)
        procs = {}
        env = dict(os.environ, PYTHONPATH=fabric.REPO_ROOT)
        for host, cfg in cfgs.items():
            path = os.path.join(rundir, f"{host}.host.json")
            with open(path, "w") as f:
                json.dump(cfg, f, indent=1)
            log = open(os.path.join(rundir, f"{host}.host.log"), "w")
            procs[host] = fab[host].popen([sys.executable, "-m", "hosts.rank", "--config", path],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=log, env=env, cwd=fabric.REPO_ROOT)
            log.close()
        total = sum(lay.passes * lay.steps * len(lay.hosts) for lay in lays)
        done = {h: 0 for h in procs}
        summaries = {}
        sel = selectors.DefaultSelector()
        buffers = {}
        for h, p in procs.items():
            os.set_blocking(p.stdout.fileno(), False)
            sel.register(p.stdout, selectors.EVENT_READ, h)
            buffers[h] = b""
        t_begin = time.monotonic()
        ready: set[str] = set()
        started = False
        deadline = t_begin + 120          # for set-up; the run's own timeout once started
        try:
            while sel.get_map():
                if not started and len(ready) == len(procs):
                    start_at = time.monotonic() + 0.2
                    for p in procs.values():
                        p.stdin.write(f"{start_at}\n".encode())
                        p.stdin.flush()
                    started = True
                    meas["t_start"] = start_at     # t = 0 of every job's start_s
                    cpu.start()                # the run itself, not the set-up
                    t_begin = time.monotonic()
                    deadline = start_at + timeout_s + 10   # the ranks time out first
                                                           # and report their open flows
                if time.monotonic() > deadline:
                    meas["timed_out"] = True
                    meas["timed_out_in"] = "run" if started else "set-up"
                    break
                wait = 0.25
                if started:
                    perts.due(time.monotonic() - start_at)
                    nxt = perts.next_time()
                    if nxt is not None:
                        wait = max(0.0, min(wait, start_at + nxt - time.monotonic()))
                for key, _ in sel.select(timeout=wait):
                    h = key.data
                    chunk = key.fileobj.read()
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    buffers[h] += chunk
                    *lines, buffers[h] = buffers[h].split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        msg = json.loads(line)
                        if msg.get("ready"):
                            ready.add(h)
                        elif "progress" in msg:
                            done[h] = msg["progress"]
                        elif msg.get("type") == "rank_summary":
                            summaries[h] = msg
                if progress is not None and started:
                    progress(sum(done.values()), total, time.monotonic() - t_begin)
        finally:
            for h, p in procs.items():
                meas["host_exit"][h] = fabric.stop_process(p, 10)
                p.stdout.close()
                p.stdin.close()
            sel.close()
            perts.close()
        meas["perturbations"] = perts.log
        meas["cpu_busy"] = cpu.stop() if started else None
        meas["wall_s"] = time.monotonic() - t_begin
        meas["agents"] = {name: {"counters": s["counters"]["total"], "nfqueue": s["nfqueue"],
                                  "fidelity": s.get("fidelity", {})}
                          for name, s in fab.agents({"cmd": "stats"}).items()}
        meas["rank_summaries"] = summaries
        if fab.overlay is not None:          # what crossed between (stand-in) servers
            meas["underlay"] = fab.overlay.counters()
    meas["teardown_leftovers"] = fab.leftovers
    with open(os.path.join(rundir, "measurements.json"), "w") as f:
        json.dump(meas, f, indent=1)
    return meas
