"""The fabric demonstration: real packets through the switch agents, baseline vs Symphony.

Until the reliable transport and the collectives exist (issues 3 and 4), the main job
shows the in-network half on its own: a leaf-spine comes up, every host streams
RoCE-framed packets to its ring successor (ring r = host r of every leaf, as in the
paper's Fig 1a), and half the hosts run one step ahead of the others: besides their
step-0 flow they already send their step-1 flow. The same traffic is run twice, with
Symphony off (baseline: RED/ECN only) and on, and the agents' telemetry is turned into
a table and plots: CE marks by cause and by step, queue occupancy of the busiest
ports, and Symphony's per-job state (step_min, alpha) over time.

The senders here have no congestion control (``hosts.blast``): marks are counted,
not reacted to. The reaction (DCQCN) arrives with the transport.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace, asdict, dataclass

from emulator.launch.fabric import Fabric
from switch_agent.config import default_agent
from runtime.telemetry import read_records
from topologies import fabric
from topologies.leafspine import LeafSpineTopo

SCHEMES = ("baseline", "symphony")


@dataclass(frozen=True)
class DemoConfig:
    leaves: int = 4
    spines: int = 4
    hosts_per_leaf: int = 4
    routing: str = "ecmp"
    rate_bps: float = fabric.DEFAULT_RATE_BPS
    packets_per_flow: int = 200
    load: float = 0.5               # each host's send rate as a fraction of its link rate
    k: float = 0.01
    seed: int = 1


_last_msg = [None]


def _progress(msg: str, t0: float) -> None:
    """One updating line on a terminal; one line per change in a log."""
    line = f"[{time.monotonic() - t0:6.1f}s] {msg}"
    if sys.stdout.isatty():
        print(f"\r{line:<78}", end="", flush=True)
    elif msg != _last_msg[0]:
        print(line, flush=True)
    _last_msg[0] = msg


def _traffic(fab: Fabric, cfg: DemoConfig, t0: float, label: str) -> dict:
    """Every host: step 0 to its ring successor; even ring positions also step 1."""
    env = dict(os.environ, PYTHONPATH=fabric.REPO_ROOT)
    H, T = cfg.hosts_per_leaf, cfg.leaves
    receivers, senders = [], []
    for t in range(T):
        for i in range(H):
            host = fab[fabric.host_name(t, i, H)]
            receivers.append(host.popen([sys.executable, "-m", "hosts.blast", "recv", "--bind",
                                         fabric.host_ip(t, i), "--idle", "2", "--timeout", "120"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=env, cwd=fabric.REPO_ROOT))
    for p in receivers:
        p.stdout.readline()
    for t in range(T):
        for i in range(H):
            succ = (t + 1) % T
            ahead = t % 2 == 0
            steps = (0, 1) if ahead else (0,)
            for step in steps:
                args = ["--src", fabric.host_ip(t, i), "--dst", fabric.host_ip(succ, i),
                        "--job", "1", "--channel", str(i), "--step", str(step),
                        "--packets", str(cfg.packets_per_flow),
                        "--rate-bps", str(cfg.load * cfg.rate_bps / len(steps)),
                        "--sport", str(49152 + 256 * step + 16 * i + t)]
                senders.append(fab[fabric.host_name(t, i, H)].popen(
                    [sys.executable, "-m", "hosts.blast", "send", *args],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                    cwd=fabric.REPO_ROOT))
    total = len(senders)
    while any(p.poll() is None for p in senders):
        done = sum(p.poll() is not None for p in senders)
        _progress(f"{label}: {done}/{total} flows sent", t0)
        time.sleep(0.25)
    _progress(f"{label}: waiting for receivers", t0)
    results = []
    for p in senders + receivers:
        out, err = p.communicate(timeout=180)
        if p.returncode != 0:
            raise RuntimeError(f"traffic process failed: {err}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    per_step = {}
    for r in results[total:]:
        for key, st in r["steps"].items():
            step = key.split("/")[1]
            agg = per_step.setdefault(step, {"pkts": 0, "ce": 0})
            agg["pkts"] += st["pkts"]
            agg["ce"] += st["ce"]
    sent = sum(r["sent"] for r in results[:total])
    return {"sent": sent, "received": sum(s["pkts"] for s in per_step.values()),
            "bad_icrc": sum(r["bad_icrc"] for r in results[total:]), "per_step": per_step}


def run_scheme(cfg: DemoConfig, scheme: str, rundir: str, t0: float) -> dict:
    os.makedirs(rundir, exist_ok=True)
    names = [fabric.leaf_name(t) for t in range(cfg.leaves)] + \
        [fabric.spine_name(g) for g in range(cfg.spines)]
    agents = {}
    for name in names:
        a = default_agent(name)
        agents[name] = replace(a, seed=cfg.seed, scheme=scheme,
                               symphony=replace(a.symphony, k=cfg.k))
    topo = LeafSpineTopo(cfg.leaves, cfg.spines, cfg.hosts_per_leaf, rate_bps=cfg.rate_bps,
                         routing=cfg.routing, agents=agents, rundir=rundir)
    _progress(f"{scheme}: building {cfg.leaves}x{cfg.spines} leaf-spine, "
              f"{cfg.leaves * cfg.hosts_per_leaf} hosts", t0)
    with Fabric(topo) as fab:
        traffic = _traffic(fab, cfg, t0, scheme)
        stats = fab.agents({"cmd": "stats"})
    counters = {k: sum(s["counters"]["total"][k] for s in stats.values())
                for k in ("pkts", "roce_pkts", "marks_red", "marks_symphony", "marks_both",
                          "model_drops", "fault_drops")}
    nfq_drops = sum(s["nfqueue"].get("queue_dropped", 0) + s["nfqueue"].get("user_dropped", 0)
                    for s in stats.values())
    return {"scheme": scheme, "traffic": traffic, "agents": counters, "nfqueue_drops": nfq_drops,
            "leftovers": fab.leftovers, "rundir": rundir}


def plot(results: list[dict], out_dir: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    # 1. CE-marked share per step and scheme, marks by cause.
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.35
    for j, r in enumerate(results):
        steps = sorted(r["traffic"]["per_step"])
        share = [100 * r["traffic"]["per_step"][s]["ce"] / max(1, r["traffic"]["per_step"][s]["pkts"])
                 for s in steps]
        bars = ax1.bar([int(s) + (j - 0.5) * width for s in steps], share, width,
                       label=r["scheme"])
        ax1.bar_label(bars, fmt="%.1f")
        a = r["agents"]
        bars = ax2.bar([j - width / 2], [a["marks_red"] + a["marks_both"]], width,
                       color="tab:gray", label="RED" if j == 0 else None)
        ax2.bar_label(bars)
        bars = ax2.bar([j + width / 2], [a["marks_symphony"] + a["marks_both"]], width,
                       color="tab:green", label="Symphony" if j == 0 else None)
        ax2.bar_label(bars)
    ax1.set_xticks([0, 1], ["step 0 (lagging)", "step 1 (outpacing)"])
    ax1.set_ylabel("packets CE-marked at the receivers (%)")
    ax1.set_title("Who gets marked")
    ax1.legend()
    ax2.set_xticks(range(len(results)), [r["scheme"] for r in results])
    ax2.set_ylabel("marks set by the switch agents")
    ax2.set_title("Marks by cause (summed over switches)")
    ax2.legend()
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "marks.png"))
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    # 2. Queue occupancy of the three busiest ports, and Symphony state at one leaf.
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    base = next(r for r in results if r["scheme"] == "baseline")
    ports = {}
    for name in os.listdir(base["rundir"]):
        if name.endswith(".jsonl"):
            for rec in read_records(os.path.join(base["rundir"], name), "port"):
                if rec["pkts"] > 0:     # from the port's first packet on
                    ports.setdefault(rec["port"], []).append((rec["t_s"], rec["max_q_bytes"]))
    busiest = sorted(ports, key=lambda p: -max(q for _, q in ports[p]))[:3]
    t_start = min(t for series in ports.values() for t, _ in series) if ports else 0
    for p in busiest:
        ts, qs = zip(*ports[p])
        axes[0].plot([t - t_start for t in ts], [q / 1000 for q in qs], label=p)
    axes[0].axhline(50, color="k", ls=":", lw=1)
    axes[0].axhline(100, color="k", ls="--", lw=1)
    axes[0].set_xlabel("time (s, emulated)")
    axes[0].set_ylabel("queue (KB); RED Kmin/Kmax dotted/dashed")
    axes[0].set_title("Busiest egress queues (baseline)")
    axes[0].legend(fontsize=8)
    sym = next((r for r in results if r["scheme"] == "symphony"), None)
    if sym is not None:
        wins = read_records(os.path.join(sym["rundir"], f"{fabric.leaf_name(0)}.jsonl"), "window")
        if wins:
            t_w = wins[0]["t_s"]
            axes[1].step([w["t_s"] - t_w for w in wins], [w["alpha"] for w in wins], where="post",
                         label="alpha")
            axes[1].step([w["t_s"] - t_w for w in wins], [w["step_min"] for w in wins],
                         where="post", label="step_min")
            axes[1].plot([w["t_s"] - t_w for w in wins],
                         [w["cnt_op"] / max(1, w["cnt_total"]) for w in wins], ".",
                         label="outpacing share (cnt_op/cnt_total)")
            axes[1].legend(fontsize=8)
    axes[1].set_xlabel("time (s, emulated)")
    axes[1].set_title(f"Symphony state of job 1 at {fabric.leaf_name(0)}")
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "queues_and_state.png"))
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def run(cfg: DemoConfig, out_dir: str) -> dict:
    t0 = time.monotonic()
    os.makedirs(out_dir, exist_ok=True)
    results = [run_scheme(cfg, s, os.path.join(out_dir, s), t0) for s in SCHEMES]
    if sys.stdout.isatty():
        print()
    paths = plot(results, out_dir)
    summary = {"config": asdict(cfg), "runs": results, "plots": paths}
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    _print_table(results)
    return summary


def _print_table(results: list[dict]) -> None:
    print(f"\n{'scheme':<10}{'sent':>8}{'lost':>8}{'CE step0':>10}{'CE step1':>10}"
          f"{'RED':>8}{'Symph.':>8}{'both':>6}{'NFQ drops':>11}")
    for r in results:
        ps = r["traffic"]["per_step"]
        ce = {s: f"{100 * ps[s]['ce'] / max(1, ps[s]['pkts']):.1f}%" for s in ps}
        a = r["agents"]
        lost = r["traffic"]["sent"] - r["traffic"]["received"]
        print(f"{r['scheme']:<10}{r['traffic']['sent']:>8}{lost:>8}"
              f"{ce.get('0', '-'):>10}{ce.get('1', '-'):>10}{a['marks_red']:>8}"
              f"{a['marks_symphony']:>8}{a['marks_both']:>6}{r['nfqueue_drops']:>11}")
    for r in results:
        if r["traffic"]["bad_icrc"]:
            print(f"WARNING: {r['scheme']}: {r['traffic']['bad_icrc']} packets with a bad ICRC")
        if r["nfqueue_drops"]:
            print(f"WARNING: {r['scheme']}: NFQUEUE dropped {r['nfqueue_drops']} packets: the "
                  f"agents could not keep up; this run's marks are not faithful")
        if r["leftovers"]:
            print(f"WARNING: {r['scheme']}: teardown removed {r['leftovers']}")
