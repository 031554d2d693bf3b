"""Experiment specs: TOML files read, overridden (``--set``, profiles) and validated into
the frozen dataclasses of ``emulator.schema`` (which documents every key) before anything
starts.

A bad spec raises :class:`SpecError` naming the file, the key, the value and what is
allowed. Every number is finite and in the range declared with its field (a
:class:`Range`); every time is at real scale and, once dilated, at most
:data:`MAX_RUN_S`. The ``name`` (and every variant's) becomes a folder name, so it is one
path component. The file itself is read by ``emulator.specfile`` (a regular UTF-8 file
of at most 1 MiB). What is valid but cannot do what it says -- a perturbation after the
run's timeout, jobs whose lockstep bound outlasts it -- is found by
``emulator.plan.timing.warnings``, which the command line prints.
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace

from cluster import servers
from emulator import jobstream, paper, profiles, rings as ring_layouts, specfile
from emulator.perturbations import KINDS as PERTURBATION_KINDS
from emulator.workloads import WORKLOAD_NAMES
from hosts.collectives import ALGORITHMS
from hosts.config import CONGESTION_FLAGS, TransportParams
from hosts.collectives.order import ORDERS
from runtime.codec import ConfigError
from runtime.scale import DEFAULT_DILATION, Scale
from runtime.wire import MAX_JOB
from switch_agent.config import RedParams, SymphonyParams
from topologies import wiring
from topologies.wiring import neighbors, switch_names  # noqa: F401  (part of the spec API)
from emulator.schema import (  # noqa: F401  (the schema is part of the spec API)
    SCHEMES, PERTURBATIONS, TOPOLOGY_KINDS, ROUTINGS, ALGORITHM_NAMES, GRID_ALGORITHMS,
    DCQCN_VARIANTS, CONGESTION_CONTROLS, MAX_RUN_S, MAX_SEED, MAX_BYTES_PER_RANK,
    MAX_PASSES, SpecError, Range, ScaleSpec, TopologySpec, SwitchSpec, SymphonySpec,
    DcqcnSpec, TransportSpec, CollectiveSpec, JobSpec, PerturbationSpec, PERTURBATION_KEYS,
    MessageSpec, PRIMARY_METRICS,
    RunSpec, Spec, SECTIONS, TOP_KEYS)


def variants(spec: Spec) -> list[tuple[str, list[str]]]:
    """The spec's ``[[variants]]``: (name, overrides) pairs; ``symphony-emu sweep`` runs
    each (e.g. Fig 2's baseline / imbalance / transient congestion)."""
    return [(v["name"], list(v.get("set", []))) for v in spec.raw.get("variants", [])]


def load(path: str, overrides: list[str] = ()) -> Spec:
    """Read, override (``key=value``, dotted keys) and validate a spec file."""
    try:
        raw = specfile.parse(specfile.read_text(path))
    except specfile.UnreadableSpec as e:
        raise SpecError(f"{path}: {e}") from None
    if "profile" in raw:                       # the file's own profile, before any --set
        _apply_profile(raw, raw["profile"], path)
    for item in overrides:
        apply_override(raw, item, path)
    spec = validate(raw, path)
    for name, sets in variants(spec):          # every variant must validate too
        v = copy.deepcopy(raw)
        v.pop("variants", None)
        v.pop("paper", None)                   # checked above, against every variant name
        try:
            for item in sets:
                apply_override(v, item, path)
            validate(v, path)
        except SpecError as e:
            raise SpecError(f"variant {name!r}: {e}") from None
    return spec


def _apply_profile(raw: dict, name, path: str) -> None:
    """A transport profile's settings (``emulator.profiles``), as --set items, here."""
    _need(isinstance(name, str) and name in profiles.PROFILES, path, "profile", name,
          f"allowed: {', '.join(profiles.PROFILES)}")
    raw["profile"] = name
    for item in profiles.overrides(name):
        apply_override(raw, item, path)


def apply_override(raw: dict, item: str, path: str = "--set") -> None:
    """``symphony.k=0.001``, ``jobs.0.passes=2``, ``run.schemes=["symphony"]``;
    ``profile=hpcc`` applies that profile's settings here (``emulator.profiles``)."""
    if "=" not in item:
        raise SpecError(f"--set {item!r}: expected key=value, e.g. symphony.k=0.001")
    key, text = item.split("=", 1)
    value = parse_value(text, f"--set {key.strip()}")
    if key.strip() == "profile":
        _apply_profile(raw, value, path)
        return
    try:
        specfile.set_value(raw, key.strip(), value)
    except specfile.UnreadableSpec as e:
        raise SpecError(str(e)) from None


def parse_value(text: str, what: str):
    """A value written after ``key=`` (``--set``, the live CLI): ``specfile.parse_value``."""
    try:
        return specfile.parse_value(text, what)
    except specfile.UnreadableSpec as e:
        raise SpecError(str(e)) from None


def _section(cls, data, where: str, path: str, dilation: float = DEFAULT_DILATION):
    """A table as ``cls``: known keys, each of its field's type and in its :class:`Range`
    (times: once dilated by ``dilation``, too)."""
    if not isinstance(data, dict):
        raise SpecError(f"{path}: [{where}] must be a table, got {_show(data)}")
    fields = cls.__dataclass_fields__
    for k in data:
        if k not in fields:
            raise SpecError(f"{path}: unknown key {where}.{k}; allowed: {', '.join(fields)}")
    out = {}
    for k, v in data.items():
        out[k] = v = _typed(v, fields[k].default, f"{where}.{k}", path)
        rng = fields[k].metadata.get("range")
        allowed = rng.allowed(v, dilation) if rng is not None and v is not None else None
        if allowed:
            raise SpecError(f"{path}: {where}.{k} = {_show(v)}: {allowed}")
    return cls(**out)


def _typed(v, default, key, path):
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise SpecError(f"{path}: {key} = {_show(v)}: must be true or false")
        return v
    if isinstance(default, int) and default is not None and not isinstance(default, bool):
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"{path}: {key} = {_show(v)}: must be an integer")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"{path}: {key} = {_show(v)}: must be a number")
        return float(v)
    if isinstance(default, str):
        if not isinstance(v, str):
            raise SpecError(f"{path}: {key} = {_show(v)}: must be a string")
        return v
    return v


def _server_lists(raw: dict, path: str) -> tuple[dict, dict]:
    """``topology.servers`` as a list (real servers) and ``topology.underlay``, as tuples,
    and the ``[topology]`` table with a count in their place (for the section's own
    checks); ``raw`` itself keeps the lists (the manifest's copy of the spec)."""
    t = raw.get("topology", {})
    if not isinstance(t, dict):
        return {}, t                     # the section's check says what it must be
    if "server_targets" in t:            # a field, but not a key: servers = [...] sets it
        raise SpecError(f"{path}: unknown key topology.server_targets; real servers are "
                        "given as topology.servers = [\"root@host\", ...]")
    out, t = {}, dict(t)
    if isinstance(t.get("servers"), list):
        out["server_targets"] = tuple(t["servers"])
        t["servers"] = len(t["servers"])
    if "underlay" in t:
        _need(isinstance(t["underlay"], list), path, "topology.underlay", t["underlay"],
              "a list of addresses, one per server")
        out["underlay"] = tuple(t.pop("underlay"))
    return out, t


def _need(cond: bool, path: str, key: str, value, allowed: str) -> None:
    if not cond:
        raise SpecError(f"{path}: {key} = {_show(value)}: {allowed}")


def _show(value, limit: int = 120) -> str:
    """A value as the spec's reader wrote it (repr), cut short if long."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _reuse(path: str, section: str, values, build, keys: dict | None = None,
           unit: str = ""):
    """Run a process-config type's own range check (``build``) on a spec section's values;
    its ``ConfigError`` names a field, reported here as the spec's key (``keys`` maps
    fields whose spec key differs, e.g. emulated ``t_win_s`` -> real-scale ``t_win_us``)
    with the spec's own value, and ``unit`` after the words of a renamed key)."""
    try:
        return build()
    except ConfigError as e:
        key = (keys or {}).get(e.field, e.field)
        value = getattr(values, key, e.value)
        note = unit if key != e.field else ""
        raise SpecError(f"{path}: {section}.{key} = {_show(value)}: {e.allowed}{note}") \
            from None


def validate(raw: dict, path: str) -> Spec:
    raw = copy.deepcopy(raw)
    for k in raw:
        if k not in TOP_KEYS:
            raise SpecError(f"{path}: unknown key {k!r}; allowed: {', '.join(TOP_KEYS)}")
    name = raw.get("name", os.path.splitext(os.path.basename(path))[0])
    _need(isinstance(name, str) and name != "", path, "name", name, "must be a non-empty string")
    _folder_name(name, path, "name")
    _need(isinstance(raw.get("description", ""), str), path, "description",
          raw.get("description"), "must be a string")
    sc = _section(ScaleSpec, raw.get("scale", {}), "scale", path)
    lists, topology = _server_lists(raw, path)
    sections = {k: _section(cls, topology if k == "topology" else raw.get(k, {}), k, path,
                            sc.dilation)
                for k, cls in SECTIONS.items() if k != "run"}
    run_raw = raw.get("run", {})
    if not isinstance(run_raw, dict):
        raise SpecError(f"{path}: [run] must be a table, got {_show(run_raw)}")
    run_raw = dict(run_raw)
    if isinstance(run_raw.get("seeds"), int) and not isinstance(run_raw.get("seeds"), bool):
        _need(1 <= run_raw["seeds"] <= 10_000, path, "run.seeds", run_raw["seeds"],
              "a count must be >= 1 (or give a list of seeds), and at most 10000")
        run_raw["seeds"] = list(range(1, run_raw["seeds"] + 1))
    run = _section(RunSpec, run_raw, "run", path)

    topo, sw, sy, dc, tr = (sections[k] for k in
                            ("topology", "switch", "symphony", "dcqcn", "transport"))
    topo = sections["topology"] = replace(topo, **lists)
    _need(topo.kind in TOPOLOGY_KINDS, path, "topology.kind", topo.kind,
          f"allowed: {', '.join(TOPOLOGY_KINDS)}")
    if topo.kind == "leafspine":
        _reuse(path, "topology", topo, lambda: wiring.check_shape(
            topo.leaves, topo.spines, topo.hosts_per_leaf, topo.routing))
    else:
        _reuse(path, "topology", topo, lambda: wiring.check_shape(1, 0, 1, topo.routing))
    _need(2 <= topo.hosts <= 254, path, "topology.hosts", topo.hosts, "must be in 2..254")
    _need(topo.pods == 1 or topo.kind == "leafspine", path, "topology.pods", topo.pods,
          "several pods: leafspine only")
    _reuse(path, "topology", topo, lambda: wiring.check_pods(
        topo.pods, topo.cores, topo.leaves, topo.spines, topo.routing, topo.oversubscription))
    _need(1 <= topo.servers <= topo.pods and (topo.servers == 1 or topo.kind == "leafspine"),
          path, "topology.servers", list(topo.server_targets) or topo.servers,
          f"must be in 1..pods ({topo.pods}): whole pods go to one server each")
    _need(isinstance(topo.ssh, bool) and (not topo.ssh or topo.servers > 1
                                          or topo.server_targets), path,
          "topology.ssh", topo.ssh, "true or false; true only with servers > 1")
    bad = servers.spec_problem(topo.server_targets, topo.kind, topo.ssh_config, topo.underlay)
    if bad:                                   # real servers (cluster.servers)
        _need(False, path, f"topology.{bad[0]}", *bad[1:])
    _need(16_384 <= topo.buffer_bytes <= 1 << 30, path, "topology.buffer_bytes",
          topo.buffer_bytes, "must be >= 16384 (a few 4 KB frames) and <= 2**30")
    _reuse(path, "switch", sw, lambda: RedParams(sw.red, sw.kmin_bytes, sw.kmax_bytes, sw.pmax),
           {"enabled": "red"})
    for key in ("red_scale_with_rate", "trace_arrivals"):
        _need(isinstance(getattr(sw, key), bool), path, f"switch.{key}", getattr(sw, key),
              "must be true or false")
    scale = Scale(sc.dilation)
    _reuse(path, "symphony", sy, lambda: SymphonyParams(
        scale.time_s(sy.t_win_us * 1e-6), sy.k, sy.tau, sy.n_warmup, sy.n_sample, sy.tracking),
        {"t_win_s": "t_win_us"})
    _need(dc.variant in DCQCN_VARIANTS, path, "dcqcn.variant", dc.variant,
          f"allowed: {', '.join(DCQCN_VARIANTS)}")
    _need(tr.congestion_control in CONGESTION_CONTROLS, path, "transport.congestion_control",
          tr.congestion_control, f"allowed: {', '.join(CONGESTION_CONTROLS)}")
    _need(dc.min_rate_gbps <= topo.link_rate_gbps, path, "dcqcn.min_rate_gbps",
          dc.min_rate_gbps, f"must be at most the link rate ({topo.link_rate_gbps:g} Gb/s)")
    _need(tr.congestion_flag in CONGESTION_FLAGS, path, "transport.congestion_flag",
          tr.congestion_flag, f"allowed: {', '.join(CONGESTION_FLAGS)}")
    _reuse(path, "transport", tr, lambda: TransportParams(
        mtu_bytes=tr.mtu_bytes, ack_every=tr.ack_every, rto_s=scale.time_s(tr.rto_us * 1e-6),
        nak_timeout_s=scale.time_s(tr.nak_timeout_us * 1e-6)),
        {"rto_s": "rto_us", "nak_timeout_s": "nak_timeout_us"}, " (µs, real scale)")
    frame_us = tr.mtu_bytes * 8 / (topo.link_rate_gbps * 1e3)
    for key in ("rto_us", "nak_timeout_us"):
        _need(getattr(tr, key) >= frame_us, path, f"transport.{key}", getattr(tr, key),
              f"must be >= {frame_us:.3g} µs, one {tr.mtu_bytes}-byte frame's time at "
              f"{topo.link_rate_gbps:g} Gb/s (a shorter timer fires before a frame is sent)")
    order = sections["collective"].order
    _need(order in ORDERS, path, "collective.order", order, f"allowed: {', '.join(ORDERS)}")
    schemes = run.schemes
    _need(isinstance(schemes, (list, tuple)) and len(schemes) > 0
          and all(s in SCHEMES for s in schemes), path, "run.schemes", schemes,
          f"a non-empty list of: {', '.join(SCHEMES)}")
    seeds = run.seeds
    _need(isinstance(seeds, (list, tuple)) and len(seeds) > 0
          and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds), path,
          "run.seeds", seeds, "a list of integers or a count")
    bad = [s for s in seeds if not 0 <= s <= MAX_SEED]
    _need(not bad, path, "run.seeds", seeds,
          f"seed {bad[0] if bad else ''} out of range: seeds are integers in 0..{MAX_SEED} "
          "(numpy's generators take no negative seed)")
    _need(run.primary in PRIMARY_METRICS, path, "run.primary", run.primary,
          f"allowed: {', '.join(PRIMARY_METRICS)}")
    run = RunSpec(tuple(schemes), tuple(seeds), run.primary, run.timeout_s)

    jobs_raw = raw.get("jobs", [])
    if "job_stream" in raw:
        _need(not jobs_raw and isinstance(raw["job_stream"], dict), path, "job_stream",
              raw["job_stream"], "a table, instead of [[jobs]] (it generates them)")

        def stream_error(key, value, allowed):
            _need(False, path, key, value, allowed)
        jobs_raw = jobstream.expand(raw["job_stream"], stream_error)
    msgs_raw = raw.get("messages", [])
    _need(isinstance(msgs_raw, list), path, "messages", msgs_raw,
          "must be a list of [[messages]] tables")
    _need(isinstance(jobs_raw, list) and (len(jobs_raw) > 0) != (len(msgs_raw) > 0), path,
          "jobs", jobs_raw, "give [[jobs]] (collectives) or [[messages]] (single flows), "
          "exactly one of the two")
    messages = tuple(_validate_message(_section(MessageSpec, m, f"messages[{i}]", path,
                                                sc.dilation), f"messages[{i}]", path, topo)
                     for i, m in enumerate(msgs_raw))
    keys = [(m.src, m.dst, m.job, m.channel, m.step) for m in messages]
    dup = next((k for k in keys if keys.count(k) > 1), None)
    _need(dup is None, path, "messages", dup,
          "two messages with the same (src, dst, job, channel, step)")
    jobs = []
    used_hosts: dict[str, list[int]] = {}
    follows: dict[int, set[int]] = {}          # job id -> ids it (transitively) runs after
    for i, j in enumerate(jobs_raw):
        where = f"jobs[{i}]"
        if isinstance(j, dict) and "hosts" in j and isinstance(j["hosts"], list):
            j = dict(j, hosts=tuple(j["hosts"]))
        if isinstance(j, dict) and isinstance(j.get("grid"), list):
            j = dict(j, grid=tuple(j["grid"]))
        job = _section(JobSpec, j, where, path, sc.dilation)
        job = _validate_job(job, where, path, topo, tr)
        follows[job.id] = set()
        if job.after_job:
            prev = next((x for x in jobs if x.id == job.after_job), None)
            _need(prev is not None, path, f"{where}.after_job", job.after_job,
                  "must be the id of a job listed before this one")
            missing = set(_job_hosts(job, topo)) - set(_job_hosts(prev, topo))
            _need(not missing, path, f"{where}.after_job", job.after_job,
                  f"each rank starts after job {prev.id}'s rank on its host, so the hosts must "
                  f"be a subset of job {prev.id}'s; not in it: {', '.join(sorted(missing))}")
            follows[job.id] = {prev.id} | follows[prev.id]
        for h in _job_hosts(job, topo):
            clash = [x for x in used_hosts.get(h, []) if x not in follows[job.id]]
            _need(not clash, path, f"{where}.hosts", list(job.hosts),
                  f"host {h} is already in job {clash[0] if clash else ''}; jobs need disjoint "
                  "hosts unless one runs after the other (after_job)")
            used_hosts.setdefault(h, []).append(job.id)
        _need(job.id not in [x.id for x in jobs], path, f"{where}.id", job.id,
              "job ids must be unique")
        jobs.append(job)
    vs = raw.get("variants", [])
    _need(isinstance(vs, list) and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                       and v["name"] and set(v) <= {"name", "set"}
                                       and isinstance(v.get("set", []), list)
                                       and all(isinstance(x, str) for x in v.get("set", []))
                                       for v in vs),
          path, "variants", vs, 'a list of tables {name = "...", set = ["key=value", ...]}')
    names = [v["name"] for v in vs]
    _need(len(set(names)) == len(names), path, "variants", names, "variant names must differ")
    for i, v in enumerate(names):
        _folder_name(v, path, f"variants[{i}].name")
    perts_raw = raw.get("perturbations", [])
    _need(isinstance(perts_raw, list), path, "perturbations", perts_raw,
          "must be a list of [[perturbations]] tables")
    perts = tuple(_validate_perturbation(
        _section(PerturbationSpec, p, f"perturbations[{i}]", path, sc.dilation),
        p, f"perturbations[{i}]", path, topo, jobs) for i, p in enumerate(perts_raw))
    try:
        claims = paper.parse(raw.get("paper", []), tuple(names), tuple(SCHEMES))
    except paper.PaperError as e:
        raise SpecError(f"{path}: {e.key} = {_show(e.value)}: {e.allowed}") from None
    return Spec(name=name, path=path, description=raw.get("description", ""),
                profile=raw.get("profile"),
                jobs=tuple(jobs), messages=messages, perturbations=perts, run=run,
                paper=claims, raw=raw, **sections)


def _folder_name(name: str, path: str, key: str) -> None:
    """``name`` becomes one folder of the output (``runs/out/<time>-<name>``, a sweep's
    ``<out>/<variant>/``): one path component, printable, not hidden."""
    bad = ("/" in name or "\\" in name or not name.isprintable() or name.startswith(".")
           or len(name) > 100)
    _need(not bad, path, key, name, "a folder name: 1..100 printable characters, no '/' or "
          "'\\', not starting with '.' (it names the run's output folder)")


def _validate_message(m: MessageSpec, where: str, path: str, topo: TopologySpec) -> MessageSpec:
    hosts = topo.host_names
    for key in ("src", "dst"):
        _need(getattr(m, key) in hosts, path, f"{where}.{key}", getattr(m, key),
              f"a host of this topology: {hosts[0]}..{hosts[-1]}")
    _need(m.src != m.dst, path, f"{where}.dst", m.dst, "must differ from src")
    _need(isinstance(m.bytes, int) and 1 <= m.bytes <= 1 << 30, path, f"{where}.bytes", m.bytes,
          "must be in 1..2**30")
    _need(1 <= m.job <= MAX_JOB, path, f"{where}.job", m.job, f"must be in 1..{MAX_JOB}")
    _need(0 <= m.step <= 0xFFFF, path, f"{where}.step", m.step, "must be in 0..65535")
    _need(0 <= m.channel <= 0xFF, path, f"{where}.channel", m.channel, "must be in 0..255")
    return m


def _validate_perturbation(p: PerturbationSpec, raw: dict, where: str, path: str,
                           topo: TopologySpec, jobs: list) -> PerturbationSpec:
    _need(p.kind in PERTURBATIONS, path, f"{where}.kind", p.kind,
          f"allowed: {', '.join(PERTURBATIONS)}")
    extra = set(raw) - PERTURBATION_KEYS[p.kind] - {"kind"}
    _need(not extra, path, f"{where}.{sorted(extra)[0] if extra else ''}", 
          raw.get(sorted(extra)[0]) if extra else None,
          f"not a key of the {p.kind} perturbation; its keys: "
          f"{', '.join(sorted(PERTURBATION_KEYS[p.kind]))}")
    kind = PERTURBATION_KINDS[p.kind]
    for k in kind.required:
        _need(k in raw, path, f"{where}.{k}", None, f"the {p.kind} perturbation needs {k}")
        _need(raw[k] != "", path, f"{where}.{k}", raw[k], "must not be empty")
    hosts = topo.host_names
    if p.switch:
        _need(p.switch in switch_names(topo), path, f"{where}.switch", p.switch,
              f"allowed: {', '.join(switch_names(topo))}")
    if p.toward:
        _need(p.toward in neighbors(topo, p.switch), path, f"{where}.toward", p.toward,
              f"{p.switch}'s neighbours are {', '.join(neighbors(topo, p.switch))}")
    for key in ("src", "dst", "host"):
        v = getattr(p, key)
        if v:
            _need(v in hosts, path, f"{where}.{key}", v,
                  f"unknown host; this topology has {hosts[0]}..{hosts[-1]}")
    kind.check(p, lambda ok, key, value, allowed: _need(ok, path, f"{where}.{key}", value,
                                                        allowed),
               topo, {h for j in jobs for h in _job_hosts(j, topo)})
    return p


def _job_hosts(job: JobSpec, topo: TopologySpec) -> list[str]:
    return topo.host_names if job.hosts == ("all",) else list(job.hosts)


def _validate_job(job: JobSpec, where: str, path: str, topo: TopologySpec,
                  tr: TransportSpec) -> JobSpec:
    _need(isinstance(job.id, int) and 1 <= job.id <= MAX_JOB, path, f"{where}.id", job.id,
          f"must be an integer in 1..{MAX_JOB}")
    _need(isinstance(job.after_job, int) and not isinstance(job.after_job, bool)
          and job.after_job >= 0 and job.after_job != job.id, path, f"{where}.after_job",
          job.after_job, "0 (none) or the id of another job")
    if isinstance(job.hosts, str):
        job = JobSpec(**{**job.__dict__, "hosts": (job.hosts,)})
    _need(isinstance(job.hosts, tuple) and all(isinstance(h, str) for h in job.hosts), path,
          f"{where}.hosts", job.hosts, '"all" or a list of host names')
    names = topo.host_names
    hosts = _job_hosts(job, topo)
    for h in hosts:
        _need(h in names, path, f"{where}.hosts", list(job.hosts),
              f"unknown host {h!r}; this topology has {names[0]}..{names[-1]}")
    _need(len(set(hosts)) == len(hosts), path, f"{where}.hosts", list(job.hosts),
          "a host is listed twice")
    _need(len(hosts) >= 2, path, f"{where}.hosts", list(job.hosts), "a job needs >= 2 hosts")
    _need(job.algorithm in ALGORITHM_NAMES, path, f"{where}.algorithm", job.algorithm,
          f"allowed: {', '.join(ALGORITHM_NAMES)}")
    _need(job.rings in ring_layouts.LAYOUTS, path, f"{where}.rings", job.rings,
          f"allowed: {', '.join(ring_layouts.LAYOUTS)}")
    coll = ALGORITHMS[job.algorithm]
    if coll.needs_grid:
        _need(job.ring_size is None, path, f"{where}.ring_size", job.ring_size,
              "not for a grid algorithm (its rings are the grid's rows and columns)")
        g = job.grid
        err = coll.check(g if isinstance(g, tuple) and len(g) == 2
                         and all(isinstance(x, int) and not isinstance(x, bool) for x in g)
                         else None)
        _need(err is None, path, f"{where}.grid", g, err)
        _need(g[0] * g[1] == len(hosts), path, f"{where}.grid", list(g),
              f"rows x columns must equal the job's {len(hosts)} hosts")
    else:
        _need(job.grid is None, path, f"{where}.grid", job.grid,
              f"only for {', '.join(GRID_ALGORITHMS)}")
        try:
            group_size = len(ring_layouts.rings(sorted(hosts, key=lambda h: int(h[1:])),
                                                topo.per_leaf, job.rings, job.ring_size)[0])
        except ValueError as e:
            key = "ring_size" if job.ring_size is not None or job.rings == "blocks" else "rings"
            raise SpecError(f"{path}: {where}.{key} = {_show(getattr(job, key))}: {e}") from None
        err = coll.check(group_size)
        _need(err is None, path, f"{where}.algorithm", job.algorithm, err)
    if job.workload is not None:
        return _validate_workload(job, where, path)
    _need((job.chunk_bytes is None) != (job.size_bytes is None), path, f"{where}.chunk_bytes",
          job.chunk_bytes, "give exactly one of chunk_bytes and size_bytes (or a workload)")
    size = job.chunk_bytes if job.chunk_bytes is not None else job.size_bytes
    key = "chunk_bytes" if job.chunk_bytes is not None else "size_bytes"
    _need(isinstance(size, int) and not isinstance(size, bool) and size >= 4 and size % 4 == 0,
          path, f"{where}.{key}", size, "must be a positive multiple of 4 bytes")
    _need(size <= 1 << 30, path, f"{where}.{key}", size, "must be <= 1 GiB")
    why = passes_error(job, job.passes, topo)
    _need(why is None, path, f"{where}.passes", job.passes, why)
    return job


def passes_error(job: JobSpec, passes, topo: TopologySpec) -> str | None:
    """Why ``passes`` collectives of the (valid) ``job`` are not allowed, or None."""
    if isinstance(passes, bool) or not isinstance(passes, int):
        return "must be an integer"
    if not 1 <= passes <= MAX_PASSES:
        return f"must be in 1..{MAX_PASSES}"
    size = job.size_bytes if job.size_bytes is not None else job.chunk_bytes
    per_rank = size if job.size_bytes is not None else size * len(_job_hosts(job, topo))
    if per_rank * passes > MAX_BYTES_PER_RANK:          # (chunks per rank <= ranks)
        return (f"passes x bytes per rank = {passes} x {per_rank} B is more than 2**36 B "
                "(64 GiB), the most one rank may move in a run")
    return None


def _validate_workload(job: JobSpec, where: str, path: str) -> JobSpec:
    _need(job.workload in WORKLOAD_NAMES, path, f"{where}.workload", job.workload,
          f"allowed: {', '.join(WORKLOAD_NAMES)}")
    _need(job.algorithm == "ring_allreduce", path, f"{where}.algorithm", job.algorithm,
          "a training workload all-reduces its gradients: ring_allreduce only")
    for key in ("chunk_bytes", "size_bytes"):
        _need(getattr(job, key) is None, path, f"{where}.{key}", getattr(job, key),
              "not with a workload (its bucket sizes come from the model)")
    _need(job.passes == 1 and job.compute_gap_us == 0, path, f"{where}.passes", job.passes,
          "not with a workload: give iterations (compute time comes from the model)")
    _need(isinstance(job.iterations, int) and not isinstance(job.iterations, bool)
          and 1 <= job.iterations <= 1000, path, f"{where}.iterations", job.iterations,
          "must be in 1..1000")
    return job           # gradient_scale, bucket_mb, compute_speedup: their Range
