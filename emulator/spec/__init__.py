"""Experiment specs: TOML files read, overridden (``--set``, profiles) and validated into
the frozen dataclasses of ``emulator.spec.schema`` before anything starts (docs/spec.md shows
every key with its default).

A bad spec raises ``emulator.spec.check.SpecError`` naming the file, the key, the value and
what is allowed. Every number is finite and in the range declared with its field (an
``emulator.spec.schema.Range``); every time is at real scale and, once dilated, at most
``emulator.spec.schema.MAX_RUN_S``. The ``name`` (and every variant's) becomes a folder name,
so it is one path component. The file itself is read by ``emulator.spec.file`` (a regular
UTF-8 file of at most 1 MiB). Checked here: the top keys, the sections and what they must
be together (topology, switch, Symphony, DCQCN, transport, run), the variants and the
perturbations; what runs on the fabric, the jobs or messages, by ``emulator.spec.jobs``.
What is valid but cannot do what it says -- a perturbation after the run's timeout, jobs
whose lockstep bound outlasts it -- is found by ``emulator.plan.timing.warnings``, which
the command line prints.
"""

from __future__ import annotations

import copy
import os
from dataclasses import replace

from cluster import placement
from emulator.spec import file as specfile, jobs as specjobs, paper, pfc as specpfc, profiles
from emulator.perturbations import KINDS as PERTURBATION_KINDS
from emulator.spec.schema import (CONGESTION_CONTROLS, DCQCN_VARIANTS, FLOW_CONTROLS, MAX_SEED,
                             MAX_PATH_SEED, PATH_DRAWS, PERTURBATION_KEYS, PERTURBATIONS,
                             PRIMARY_METRICS, SCHEME_NAMES, SECTIONS, TOP_KEYS, TOPOLOGY_KINDS,
                             VERIFICATIONS,
                             PerturbationSpec, RunSpec, ScaleSpec, Spec, TopologySpec)
from emulator.spec.check import SpecError, need, reuse, section, show
from emulator.spec.jobs import job_hosts
from hosts.config import TransportParams
from hosts.collectives.order import ORDERS
from runtime.scale import Scale
from switch_agent.config import RedParams, SymphonyParams
from topologies import wiring
from topologies.wiring import neighbors, switch_names


def variants(spec: Spec) -> list[tuple[str, list[str]]]:
    """The spec's ``[[variants]]``: (name, overrides) pairs; ``symphony-emu sweep`` runs
    each (e.g. Fig 2's baseline / imbalance / transient congestion)."""
    return [(v["name"], list(v.get("set", []))) for v in spec.raw.get("variants", [])]


# What a run's result does not depend on: the spec's other points ([[variants]]), the
# paper's numbers, its description, and which schemes and seeds a command runs.
NOT_RUN_KEYS = ("variants", "paper", "description")
NOT_RUN_RUN_KEYS = ("schemes", "seeds", "primary")


def what_runs(raw: dict) -> dict:
    """Of a spec as written (``Spec.raw``, a manifest's ``spec``): what one run of it runs,
    so a sweep keeps a finished run of an earlier edit only if this is the same."""
    out = {k: v for k, v in raw.items() if k not in NOT_RUN_KEYS}
    if isinstance(out.get("run"), dict):
        out["run"] = {k: v for k, v in out["run"].items() if k not in NOT_RUN_RUN_KEYS}
    return out


def first_difference(a, b, where: str = "") -> str | None:
    """The first dotted key at which two specs as written differ (None: the same)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{where}{k}"
            d = first_difference(a[k], b[k], f"{where}{k}.")
            if d is not None:
                return d
        return None
    return None if a == b else (where[:-1] or "the spec")


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
    """A transport profile's settings (``emulator.spec.profiles``), as --set items, here."""
    need(isinstance(name, str) and name in profiles.PROFILES, path, "profile", name,
         f"allowed: {', '.join(profiles.PROFILES)}")
    raw["profile"] = name
    for item in profiles.overrides(name):
        apply_override(raw, item, path)


def apply_override(raw: dict, item: str, path: str = "--set") -> None:
    """``symphony.k=0.001``, ``jobs.0.passes=2``, ``run.schemes=["symphony"]``;
    ``profile=hpcc`` applies that profile's settings here (``emulator.spec.profiles``)."""
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
        need(isinstance(t["underlay"], list), path, "topology.underlay", t["underlay"],
             "a list of addresses, one per server")
        out["underlay"] = tuple(t.pop("underlay"))
    return out, t


def validate(raw: dict, path: str) -> Spec:
    raw = copy.deepcopy(raw)
    for k in raw:
        if k not in TOP_KEYS:
            raise SpecError(f"{path}: unknown key {k!r}; allowed: {', '.join(TOP_KEYS)}")
    name = raw.get("name", os.path.splitext(os.path.basename(path))[0])
    need(isinstance(name, str) and name != "", path, "name", name, "must be a non-empty string")
    _folder_name(name, path, "name")
    need(isinstance(raw.get("description", ""), str), path, "description",
         raw.get("description"), "must be a string")
    sc = section(ScaleSpec, raw.get("scale", {}), "scale", path)
    lists, topology = _server_lists(raw, path)
    sections = {k: section(cls, topology if k == "topology" else raw.get(k, {}), k, path,
                           sc.dilation)
                for k, cls in SECTIONS.items() if k != "run"}
    run_raw = raw.get("run", {})
    if not isinstance(run_raw, dict):
        raise SpecError(f"{path}: [run] must be a table, got {show(run_raw)}")
    run_raw = dict(run_raw)
    if isinstance(run_raw.get("seeds"), int) and not isinstance(run_raw.get("seeds"), bool):
        need(1 <= run_raw["seeds"] <= 10_000, path, "run.seeds", run_raw["seeds"],
             "a count must be >= 1 (or give a list of seeds), and at most 10000")
        run_raw["seeds"] = list(range(1, run_raw["seeds"] + 1))
    run = section(RunSpec, run_raw, "run", path)

    topo, sw, sy, dc, tr = (sections[k] for k in
                            ("topology", "switch", "symphony", "dcqcn", "transport"))
    topo = sections["topology"] = replace(topo, **lists)
    need(topo.kind in TOPOLOGY_KINDS, path, "topology.kind", topo.kind,
         f"allowed: {', '.join(TOPOLOGY_KINDS)}")
    if topo.kind == "leafspine":
        reuse(path, "topology", topo, lambda: wiring.check_shape(
            topo.leaves, topo.spines, topo.hosts_per_leaf, topo.routing))
    else:
        reuse(path, "topology", topo, lambda: wiring.check_shape(1, 0, 1, topo.routing))
    need(2 <= topo.hosts <= wiring.MAX_HOSTS_PER_LEAF, path, "topology.hosts", topo.hosts,
         f"must be in 2..{wiring.MAX_HOSTS_PER_LEAF}")          # a dumbbell: one leaf
    need(topo.pods == 1 or topo.kind == "leafspine", path, "topology.pods", topo.pods,
         "several pods: leafspine only")
    reuse(path, "topology", topo, lambda: wiring.check_pods(
        topo.pods, topo.cores, topo.leaves, topo.spines, topo.routing, topo.oversubscription))
    need(1 <= topo.servers <= topo.pods and (topo.servers == 1 or topo.kind == "leafspine"),
         path, "topology.servers", list(topo.server_targets) or topo.servers,
         f"must be in 1..pods ({topo.pods}): whole pods go to one server each")
    need(isinstance(topo.ssh, bool) and (not topo.ssh or topo.servers > 1
                                         or topo.server_targets), path,
         "topology.ssh", topo.ssh, "true or false; true only with servers > 1")
    bad = placement.spec_problem(topo.server_targets, topo.kind, topo.ssh_config, topo.underlay)
    if bad:                                   # real servers (cluster.servers)
        need(False, path, f"topology.{bad[0]}", *bad[1:])
    need(16_384 <= topo.buffer_bytes <= 1 << 30, path, "topology.buffer_bytes",
         topo.buffer_bytes, "must be >= 16384 (a few 4 KB frames) and <= 2**30")
    need(topo.flow_control in FLOW_CONTROLS, path, "topology.flow_control",
         topo.flow_control, f"allowed: {', '.join(FLOW_CONTROLS)}")
    need(topo.paths in PATH_DRAWS, path, "topology.paths", topo.paths,
         f"allowed: {', '.join(PATH_DRAWS)}")
    need(isinstance(topo.path_seed, int) and not isinstance(topo.path_seed, bool)
         and 0 <= topo.path_seed <= MAX_PATH_SEED, path, "topology.path_seed", topo.path_seed,
         f"an integer in 0..{MAX_PATH_SEED}")
    reuse(path, "switch", sw, lambda: RedParams(sw.red, sw.kmin_bytes, sw.kmax_bytes, sw.pmax),
          {"enabled": "red"})
    for key in ("red_scale_with_rate", "trace_arrivals", "red_per_class"):
        need(isinstance(getattr(sw, key), bool), path, f"switch.{key}", getattr(sw, key),
             "must be true or false")
    scale = Scale(sc.dilation)
    reuse(path, "symphony", sy, lambda: SymphonyParams(
        sy.t_win_s(scale), sy.k, sy.tau, sy.n_warmup, sy.n_sample, sy.tracking,
        sy.mark_min_queue_bytes),
        {"t_win_s": "t_win_us"})
    need(dc.variant in DCQCN_VARIANTS, path, "dcqcn.variant", dc.variant,
         f"allowed: {', '.join(DCQCN_VARIANTS)}")
    need(tr.congestion_control in CONGESTION_CONTROLS, path, "transport.congestion_control",
         tr.congestion_control, f"allowed: {', '.join(CONGESTION_CONTROLS)}")
    need(dc.min_rate_gbps <= topo.link_rate_gbps, path, "dcqcn.min_rate_gbps",
         dc.min_rate_gbps, f"must be at most the link rate ({topo.link_rate_gbps:g} Gb/s)")
    reuse(path, "transport", tr, lambda: TransportParams(
        mtu_bytes=tr.mtu_bytes, ack_every=tr.ack_every, rto_s=tr.rto_s(scale),
        nak_timeout_s=tr.nak_timeout_s(scale), congestion_flag=tr.congestion_flag),
        {"rto_s": "rto_us", "nak_timeout_s": "nak_timeout_us"}, " (µs, real scale)")
    frame_us = tr.mtu_bytes * 8 / (topo.link_rate_gbps * 1e3)
    for key in ("rto_us", "nak_timeout_us"):
        need(getattr(tr, key) >= frame_us, path, f"transport.{key}", getattr(tr, key),
             f"must be >= {frame_us:.3g} µs, one {tr.mtu_bytes}-byte frame's time at "
             f"{topo.link_rate_gbps:g} Gb/s (a shorter timer fires before a frame is sent)")
    order = sections["collective"].order
    need(order in ORDERS, path, "collective.order", order, f"allowed: {', '.join(ORDERS)}")
    schemes = run.schemes
    need(isinstance(schemes, (list, tuple)) and len(schemes) > 0
         and all(s in SCHEME_NAMES for s in schemes), path, "run.schemes", schemes,
         f"a non-empty list of: {', '.join(SCHEME_NAMES)}")
    seeds = run.seeds
    need(isinstance(seeds, (list, tuple)) and len(seeds) > 0
         and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds), path,
         "run.seeds", seeds, "a list of integers or a count")
    bad = [s for s in seeds if not 0 <= s <= MAX_SEED]
    need(not bad, path, "run.seeds", seeds,
         f"seed {bad[0] if bad else ''} out of range: seeds are integers in 0..{MAX_SEED} "
         "(numpy's generators take no negative seed)")
    need(run.primary in PRIMARY_METRICS, path, "run.primary", run.primary,
         f"allowed: {', '.join(PRIMARY_METRICS)}")
    need(run.verify in VERIFICATIONS, path, "run.verify", run.verify,
         f"allowed: {', '.join(VERIFICATIONS)}")
    run = replace(run, schemes=tuple(schemes), seeds=tuple(seeds))

    jobs, messages = specjobs.jobs_and_messages(raw, path, topo, sc.dilation)
    vs = raw.get("variants", [])
    need(isinstance(vs, list) and all(isinstance(v, dict) and isinstance(v.get("name"), str)
                                      and v["name"] and set(v) <= {"name", "set"}
                                      and isinstance(v.get("set", []), list)
                                      and all(isinstance(x, str) for x in v.get("set", []))
                                      for v in vs),
         path, "variants", vs, 'a list of tables {name = "...", set = ["key=value", ...]}')
    names = [v["name"] for v in vs]
    need(len(set(names)) == len(names), path, "variants", names, "variant names must differ")
    for i, v in enumerate(names):
        _folder_name(v, path, f"variants[{i}].name")
    perts_raw = raw.get("perturbations", [])
    need(isinstance(perts_raw, list), path, "perturbations", perts_raw,
         "must be a list of [[perturbations]] tables")
    perts = tuple(_perturbation(
        section(PerturbationSpec, p, f"perturbations[{i}]", path, sc.dilation),
        p, f"perturbations[{i}]", path, topo, jobs) for i, p in enumerate(perts_raw))
    specpfc.check(sections["pfc"], topo, tr.mtu_bytes, perts, path)
    try:
        claims = paper.parse(raw.get("paper", []), tuple(names), tuple(SCHEME_NAMES))
    except paper.PaperError as e:
        raise SpecError(f"{path}: {e.key} = {show(e.value)}: {e.allowed}") from None
    return Spec(name=name, path=path, description=raw.get("description", ""),
                profile=raw.get("profile"),
                jobs=jobs, messages=messages, perturbations=perts, run=run,
                paper=claims, raw=raw, **sections)


def _folder_name(name: str, path: str, key: str) -> None:
    """``name`` becomes one folder of the output (``runs/out/<time>-<name>``, a sweep's
    ``<out>/<variant>/``): one path component, printable, not hidden."""
    bad = ("/" in name or "\\" in name or not name.isprintable() or name.startswith(".")
           or len(name) > 100)
    need(not bad, path, key, name, "a folder name: 1..100 printable characters, no '/' or "
         "'\\', not starting with '.' (it names the run's output folder)")


def _perturbation(p: PerturbationSpec, raw: dict, where: str, path: str,
                  topo: TopologySpec, jobs: tuple) -> PerturbationSpec:
    need(p.kind in PERTURBATIONS, path, f"{where}.kind", p.kind,
         f"allowed: {', '.join(PERTURBATIONS)}")
    extra = set(raw) - PERTURBATION_KEYS[p.kind] - {"kind"}
    need(not extra, path, f"{where}.{sorted(extra)[0] if extra else ''}", 
         raw.get(sorted(extra)[0]) if extra else None,
         f"not a key of the {p.kind} perturbation; its keys: "
         f"{', '.join(sorted(PERTURBATION_KEYS[p.kind]))}")
    kind = PERTURBATION_KINDS[p.kind]
    for k in kind.required:
        need(k in raw, path, f"{where}.{k}", None, f"the {p.kind} perturbation needs {k}")
        need(raw[k] != "", path, f"{where}.{k}", raw[k], "must not be empty")
    hosts = topo.host_names
    if p.switch:
        need(p.switch in switch_names(topo), path, f"{where}.switch", p.switch,
             f"allowed: {', '.join(switch_names(topo))}")
    if p.toward:
        need(p.toward in neighbors(topo, p.switch), path, f"{where}.toward", p.toward,
             f"{p.switch}'s neighbours are {', '.join(neighbors(topo, p.switch))}")
    for key in ("src", "dst", "host"):
        v = getattr(p, key)
        if v:
            need(v in hosts, path, f"{where}.{key}", v,
                 f"unknown host; this topology has {hosts[0]}..{hosts[-1]}")
    kind.check(p, lambda ok, key, value, allowed: need(ok, path, f"{where}.{key}", value,
                                                       allowed),
               topo, {h for j in jobs for h in job_hosts(j, topo)})
    return p


