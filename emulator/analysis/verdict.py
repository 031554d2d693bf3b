"""The run's fidelity verdict: every way an emulated run can be trusted less, each with
a threshold, judged from the run's measurements alone (so ``symphony-emu report DIR``
judges an old folder as a new one).

Fidelity thresholds (docs/architecture.md §8; a run over any is flagged, not silently reported):
CPU busy above 90 % (timers and pacing slip; what a hypervisor took of it, its *steal*,
is counted as busy and named), any NFQUEUE drop (packets the agents never
saw), mean pacing lateness above 25 % of a frame time, a port whose queue model is on
average more than 2 frames off the kernel's backlog, a port that sent at less than 90 % or
more than 110 % of its rate while certainly busy (Mininet-HiFi's invariant; judged from
>= 3 such sampling intervals; see switch_agent/fidelity.py), a collective faster than the
theoretical lockstep bound (a broken measurement), a packet a host's socket dropped for
want of buffer (the rank process fell behind), a retransmission timeout in a run
where no switch dropped or lost a packet (go-back-N resent data that was only late: the
emulation stalled longer than ``transport.rto_us``; not judged for ``pq``, whose strict
priority can starve the low class that long for real), a run that timed out, and any
collective whose result was wrong (that one is an error, not just unfaithful).
"""

from __future__ import annotations

from dataclasses import replace

from cluster import placement
from emulator.analysis.summary import Fidelity, Transport
from emulator.measurements import AgentMeasurements, Measurements
from emulator.plan.layout import wire_bytes
from topologies.wiring import L2_BURST_BYTES

CPU_BUSY_MAX = 0.90
PACING_LATE_MAX_FRAMES = 0.25
CCT_RATIO_MIN = 0.95
QUEUE_ERR_MAX_FRAMES = 2.0          # mean |queue model - kernel backlog| per port
BUSY_UTIL_RANGE = (0.90, 1.10)      # a busy port's sent bytes / (rate x time)
BUSY_INTERVALS_MIN = 3              # judge a port's utilization from this many intervals
# A process's view of t = 0 against the coordinator's (hosts.clock): an upper bound on
# its start's skew, the start line's transit included (on one machine that is all of it:
# ~0.05 ms by pipe, 0.4-1.1 ms over ssh). A frame late, a host's first packets leave one
# frame late: less than the one burst per step the CCT floor already allows.
START_OFFSET_MAX_FRAMES = 1.0
# Static routing, no congestion in the flow-level model on the run's own paths
# (analysis.split.static_error_x): the job's emulated time over the model's
STATIC_ERROR_MAX = 1.05
# A server's underlay busier than this on average over the run (bytes either way over
# its capacity, when known): frames between servers queue in the servers' network,
# outside the emulated fabric (an average: the bursts run higher)
UNDERLAY_BUSY_MAX = 0.8


def switch_losses(meas: Measurements) -> int:
    """Packets the switches dropped (model buffer overflow, injected loss) or never saw."""
    n = 0
    for a in meas.agents.values():
        c = a.counters                               # the agent's totals over its ports
        n += c.get("model_drops", 0) + c.get("fault_drops", 0)
        n += _nfqueue_drops(a)
    return n


def _nfqueue_drops(a: AgentMeasurements) -> int:
    """Packets an agent never saw: NFQUEUE's queue or the agent's socket dropped them."""
    q = a.nfqueue
    return q.get("queue_dropped", 0) + q.get("user_dropped", 0) + q.get("agent_enobufs", 0)


def _queue_err_detail(f: dict, t0: float) -> str:
    """How many samples a port's queue-model error is the mean of, and its worst (at
    ``t0`` + its time: the agents' clock is the coordinator's): which side held more says
    what went wrong (a summary written before either was kept: "")."""
    n, w = f.get("queue_samples"), f.get("queue_err_worst")
    if not n or not w:
        return ""
    m, k = w["model_bytes"], w["kernel_bytes"]
    why = "the kernel's shaper sent late" if k > m else "the kernel sent what the model holds"
    return (f" over {n} sample{'s' if n > 1 else ''}; the worst at t = {w['t_s'] - t0:.2f} s: "
            f"model {m / 1e3:.1f} KB, kernel {k / 1e3:.1f} KB ({why})")


def fastest_cct_s(lay, theo_s: float, rate_bps: float) -> float:
    """The shortest time a collective can take on token-bucket-shaped links: the lockstep
    bound less one full bucket per step (``L2_BURST_BYTES``, refilled while a rank
    waits between steps, leaves at once). For short steps that is well below the bound
    (a 32 KB step: 27 %); a CCT under this is broken measurement, not a burst."""
    return max(theo_s - lay.steps * L2_BURST_BYTES * 8 / rate_bps, 0.5 * theo_s)


def server_of_hosts(fabric) -> dict | None:
    """host -> server of a fabric (``emulator.plan.FabricPlan``) placed on several
    servers (cluster.overlay)."""
    if fabric.servers <= 1:
        return None
    return placement.server_of_nodes(fabric.leaves, fabric.spines, fabric.hosts_per_leaf,
                                   fabric.pods, fabric.cores, fabric.servers)


def _on(node: str, server_of: dict | None) -> str:
    """`` (server i)`` after a switch's name on a fabric over several servers."""
    return f" (server {server_of[node]})" if server_of and node in server_of else ""


def fidelity(meas: Measurements, rate_bps: float, mtu: int, ratios: list, wrong: list,
             transport: Transport | None = None, lossy: bool = False,
             floors: list | None = None, server_of: dict | None = None,
             lossless=None) -> Fidelity:
    """The run's verdict: a reason for each way its emulation can be trusted less
    (``server_of``: host -> server, when the fabric spans several; ``lossless``: a
    lossless fabric's ``summary.Lossless``)."""
    reasons = []
    if lossless is not None and lossless.drops:
        reasons.append(f"a lossless fabric dropped {lossless.drops} frames: a switch buffer "
                       f"too small for its ports' headroom ([pfc] buffer_bytes, "
                       f"headroom_bytes)")
    cpu = meas.cpu_busy
    steal = meas.cpu_steal                 # counted in cpu: CPU time a hypervisor took
    stolen = f"; the hypervisor took {steal:.0%} of the CPUs' time" if steal else ""
    if cpu is not None and cpu > CPU_BUSY_MAX:
        reasons.append(f"CPU {cpu:.0%} busy (> {CPU_BUSY_MAX:.0%}{stolen}): timers and "
                       f"pacing slip")
    for u in meas.underlay or []:          # the tunnels of the links cut between servers
        lost = u.tx_dropped + u.tx_errors + u.rx_dropped + u.rx_errors
        if lost:
            reasons.append(f"server s{u.server}: its underlay dropped or garbled {lost} "
                           f"frames (tx dropped {u.tx_dropped}, errors "
                           f"{u.tx_errors}; rx dropped {u.rx_dropped}, "
                           f"errors {u.rx_errors}): a link cut between servers "
                           f"lost what the spec's link would not")
        use = u.utilisation
        if use is not None and use > UNDERLAY_BUSY_MAX:
            reasons.append(f"server s{u.server}: its underlay carried {use:.0%} of its "
                           f"{u.capacity_bps / 1e9:.3g} Gb/s on average (> "
                           f"{UNDERLAY_BUSY_MAX:.0%}): frames between servers queued outside "
                           f"the emulated fabric")
    for server, busy in sorted((meas.cpu_busy_servers or {}).items()):
        if busy is not None and busy > CPU_BUSY_MAX:     # its own CPU, read over its ssh
            reasons.append(f"server {server}: CPU {busy:.0%} busy (> {CPU_BUSY_MAX:.0%}): "
                           f"timers and pacing slip there")
    drops = {}
    for name, a in meas.agents.items():
        n = _nfqueue_drops(a)                        # none: the agent died (an error)
        drops[name] = n
        if n:
            reasons.append(f"{name}{_on(name, server_of)}: NFQUEUE dropped {n} packets the "
                           "agent never saw")
    frame_bytes = wire_bytes(mtu, mtu)
    queue_err, queue_fid, utils = {}, {}, {}
    for name, a in meas.agents.items():
        for port, f in a.fidelity.items():
            if f.get("queue_err_mean_bytes") is not None:
                queue_err[f"{name}:{port}"] = f["queue_err_mean_bytes"]
                queue_fid[f"{name}:{port}"] = f
            if f.get("busy_intervals", 0) >= BUSY_INTERVALS_MIN:
                utils[f"{name}:{port}"] = f["busy_util"]
    worst = max(queue_err, key=queue_err.get, default=None)
    if worst and queue_err[worst] > QUEUE_ERR_MAX_FRAMES * frame_bytes:
        reasons.append(f"{worst}{_on(worst.split(':')[0], server_of)}: the queue model is "
                       f"{queue_err[worst] / 1e3:.1f} KB off the "
                       f"kernel's backlog on average (> {QUEUE_ERR_MAX_FRAMES:g} frames)"
                       + _queue_err_detail(queue_fid[worst], meas.t_start or 0.0))
    lo, hi = BUSY_UTIL_RANGE
    for port, u in sorted(utils.items()):
        if not lo <= u <= hi:
            reasons.append(f"{port}{_on(port.split(':')[0], server_of)}: a busy port sent at "
                           f"{u:.0%} of its rate (Mininet-HiFi "
                           f"invariant: {lo:.0%}-{hi:.0%})")
    frame_s = frame_bytes * 8 / rate_bps
    late = [s.pacing["mean_late_s"] for s in meas.rank_summaries.values()]
    pacing = max(late) if late else None
    if pacing is not None and pacing > PACING_LATE_MAX_FRAMES * frame_s:
        reasons.append(f"pacing: a host sends {pacing * 1e3:.2f} ms late on average "
                       f"(> {PACING_LATE_MAX_FRAMES:.0%} of a {frame_s * 1e3:.2f} ms frame)")
    # each host process's clock against the coordinator's (hosts.clock): from probe round
    # trips before t = 0, how far apart the two can be at most
    probed = [c for c in meas.clocks if c.probes]
    farthest = max(probed, key=lambda c: c.bound_s, default=None)
    if farthest is not None and farthest.bound_s > START_OFFSET_MAX_FRAMES * frame_s:
        h = farthest.hosts[0]
        where = f"server {server_of[h]}" if server_of and h in server_of else "this machine"
        hosts = farthest.hosts
        who = f"hosts {hosts[0]}-{hosts[-1]}" if len(hosts) > 1 else f"host {h}"
        reasons.append(f"clocks: the process of {who} ({where}) runs "
                       f"{farthest.offset_s * 1e3:+.2f} ms off the coordinator's clock, give "
                       f"or take {farthest.rtt_s * 1e3 / 2:.2f} (half the shortest of "
                       f"{farthest.probes} round trips): up to {farthest.bound_s * 1e3:.2f} ms "
                       f"(> {START_OFFSET_MAX_FRAMES:g} frame of {frame_s * 1e3:.2f} ms at this "
                       f"dilation): its records are not on the others' timeline")
    # runs from before the probes: t = 0 as each host process saw it, its realtime at the
    # start line minus the coordinator's when sending (the offset plus the line's transit)
    seen = {h: s.clock for h, s in meas.rank_summaries.items() if s.clock}
    start_offset = max((abs(c["offset_s"]) for c in seen.values()), default=None)
    if not probed and start_offset is not None and \
            start_offset > START_OFFSET_MAX_FRAMES * frame_s:
        h = max(seen, key=lambda h: abs(seen[h]["offset_s"]))
        where = f"server {server_of[h]}" if server_of and h in server_of else "this machine"
        reasons.append(f"clocks: host {h} ({where}) saw t = 0 "
                       f"{seen[h]['offset_s'] * 1e3:+.2f} ms off the coordinator's clock (> "
                       f"{START_OFFSET_MAX_FRAMES:g} frame of {frame_s * 1e3:.2f} ms at this "
                       f"dilation): its records are not on the others' timeline")
    floors = ratios if floors is None else floors
    if floors and min(floors) < CCT_RATIO_MIN:
        i = floors.index(min(floors))
        reasons.append(f"a collective took {ratios[i]:.2f}x the theoretical lockstep time, "
                       f"{floors[i]:.2f}x the fastest its shaped links allow (one burst per "
                       f"step): faster than the link allows, the measurement is broken")
    host_drops = sum(s.udp.get("RcvbufErrors", 0) for s in meas.rank_summaries.values())
    if host_drops:
        reasons.append(f"hosts' sockets dropped {host_drops} packets (a rank process fell "
                       f"behind reading them: CPU)")
    if transport and transport.timeouts and not lossy and not switch_losses(meas) \
            and not host_drops:
        reasons.append(f"{transport.timeouts} retransmission timeouts although no switch "
                       f"dropped a packet: go-back-N resent {transport.retransmits} packets "
                       f"that were only late (delayed past transport.rto_us: an emulation stall, or "
                       f"an RTO below the queueing delay)")
    if meas.unfinished_flows:
        reasons.append(f"{len(meas.unfinished_flows)} flows were never delivered in the "
                       f"model (no live route: a link down with nothing to re-route to)")
    if meas.timed_out:
        reasons.append("the run timed out")
    bad_exit = {h: rc for h, rc in meas.host_exit.items() if rc != 0}
    if bad_exit:
        reasons.append(f"host processes failed: {bad_exit}")
    if meas.teardown_leftovers:
        reasons.append(f"teardown had to remove {meas.teardown_leftovers}")
    # what the emulation adds to every hop: the wait for the agent (not judged yet: see
    # journal@827c2ab, "Faster emulation"; reported beside the verdict)
    holds = {name: (a.nfqueue.get("held_mean_s"), a.nfqueue.get("held_packets", 0))
             for name, a in meas.agents.items()}
    timed = sum(n for _, n in holds.values() if n)
    hold = (sum(m * n for m, n in holds.values() if m is not None and n) / timed
            if timed else None)
    # ... and at the hosts: a datagram's wait between its arrival and its process reading it
    lags = [s.rx_lag for s in meas.rank_summaries.values() if s.rx_lag]
    lagged = sum(x["packets"] for x in lags)
    rx_lag = sum(x["mean_s"] * x["packets"] for x in lags) / lagged if lagged else None
    return Fidelity(
        faithful=not reasons and not wrong, reasons=reasons, errors=wrong,
        cpu_busy=cpu, cpu_steal=steal, cpu_busy_servers=meas.cpu_busy_servers,
        nfqueue_drops=drops, pacing_mean_late_s=pacing, start_offset_max_s=start_offset,
        clock_bound_max_s=farthest.bound_s if farthest is not None else None,
        agent_hold_mean_s=hold, agent_hold_frames=hold / frame_s if hold is not None else None,
        host_rx_lag_mean_s=rx_lag,
        host_rx_lag_frames=rx_lag / frame_s if rx_lag is not None else None,
        cct_ratio_min=min(ratios) if ratios else None,
        cct_ratio_max=max(ratios) if ratios else None,
        queue_err_mean_bytes_max=queue_err[worst] if worst else None,
        busy_util_min=min(utils.values()) if utils else None,
        busy_util_max=max(utils.values()) if utils else None,
        perturbations=[e.what for e in meas.perturbations],
        perturbation_effects=list(meas.perturbation_effects))


def judge_emulation_error(fid: Fidelity, err: float | None) -> Fidelity:
    """A verdict made by :func:`fidelity` with the emulation-error check: ``err`` is the
    replay's emulated / fluid time where the model saw no congestion (None: it saw some
    everywhere, or routing was not static)."""
    fid = replace(fid, judged_emulation=True, emulation_error_x=err)
    if err is None or err <= STATIC_ERROR_MAX:
        return fid
    return replace(fid, faithful=False, reasons=fid.reasons + [
        f"static routing, no congestion in the flow-level model, yet the job took "
        f"{err:.2f}x its fluid time on the same paths (> {STATIC_ERROR_MAX:g}): "
        f"emulation error (the model has no per-hop frame delay: it counts where steps "
        f"are a few frames long)"])
