"""The one converter of run folders written in an older run format (``runtime.records.
FORMAT``): ``symphony-emu upgrade DIR ...``. The analysis reads the current format only
(``emulator.rundir`` refuses an older folder, naming this command), so every difference
between formats is handled here, once.

Format 1 -> 2 (typed records, the plan in the manifest):

* the manifest gets the **compiled run plan**: the stored spec compiled again for the
  run's scheme and seed, under the dependency rule its jobs ran (a folder from before the
  rule was a choice ran ``in_order``), by today's code. It is kept only if it agrees with
  what the manifest recorded of the plan (the jobs' layouts, link rate, MTU, path
  length); otherwise the folder is left as it was and named, with the difference. Its
  plan-summary keys (``scale``, ``link_rate_bps``, ``mtu_bytes``, ``path_hops``,
  ``layouts``) go: the plan holds them;
* ``collective`` records: ``pass`` is ``pass_index``;
* ``port`` records from before marks were counted by cause: ``marks_red`` = ``marks``,
  ``marks_symphony`` and ``marks_both`` unknown (None);
* ``measurements.json``: agents' fidelity summaries taken from their ``final`` records
  where it lacks them (runs from before it carried them).

Format 2 -> 3 (``measurements.json`` typed, ``emulator.measurements.Measurements``):

* ``perturbations``: an entry without ``fired_s`` (``loss`` applied at set-up, before
  it was timed) has ``fired_s`` None;
* ``underlay``: entries from before its use over the run was measured hold the
  counters' totals as they were: they get their mean rates over the run (the totals
  over ``wall_s``), their capacity unknown;
* the file is written as format 3 writes it (every field, the hosts' summaries as
  their records).

A format-1 folder takes both steps. Every record, and the measurements, are then read
back as their types; a folder with one that is not (a key no format had) is left as it
was and named. Files are replaced whole, the manifest last, so an interrupted upgrade
leaves the folder readable by this command again.

A run set's ``summary.json`` has a format of its own (``emulator.analysis.summary``):
format 0 (no ``"format"``) was written before it was declared, in the same shape, by a
report that added keys as it learned to say more. Each key an older report left out is
filled with what its absence meant to the readers of then (:data:`SUMMARY_FILLS`, else an
optional value None, a list or map empty: not measured, nothing of it); the file is then
read as its type and written as format 1 writes it, with ``upgraded``: from which format,
which keys were filled. One that does not read (a key no report wrote, or one no reader
could do without) is left as it was and named: ``symphony-emu report`` writes it anew
from the run folders.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace

import typing

from emulator import plan as planning
from emulator.analysis import summary as summaries
from emulator.analysis.evidence import primary_metric
from emulator.analysis.summary import codec
from emulator.measurements import Measurements, underlay_use
from emulator.spec import validate
from emulator.spec.check import SpecError
from runtime.records import FORMAT, RecordError, decode

PLAN_KEYS = ("scale", "link_rate_bps", "mtu_bytes", "path_hops", "layouts")
MODEL_PLAN_SCHEME = "baseline"     # emulator.launch.predict's: a model run's plan


class UpgradeError(ValueError):
    """A folder this converter cannot bring to the current format; the message says why."""


def run_dirs(root: str) -> list[str]:
    """Every run folder (with a manifest) at or under ``root``, twins included."""
    return sorted(d for d, _, files in os.walk(root) if "manifest.json" in files)


def upgrade(root: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Bring every run folder under ``root`` to the current format: (upgraded, already
    current, [(folder, why not)])."""
    return _each(run_dirs(root), upgrade_one)


def _each(paths: list[str], one) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """``one`` on each of ``paths``: (those it upgraded, those current, [(path, why not)])."""
    done, current, failed = [], [], []
    for path in paths:
        try:
            (done if one(path) else current).append(path)
        except UpgradeError as e:
            failed.append((path, str(e)))
    return done, current, failed


def upgrade_one(rundir: str) -> bool:
    """One run folder; False if it was current already."""
    man = _load(os.path.join(rundir, "manifest.json"))
    version = man.get("format", 1)
    if version == FORMAT:
        return False
    if version not in range(1, FORMAT):
        raise UpgradeError(f"format {version}: written by a newer version (this one reads "
                           f"{FORMAT})")
    meas_path = os.path.join(rundir, "measurements.json")
    meas = _load(meas_path) if os.path.exists(meas_path) else None
    files = {}
    if version == 1:
        man = _from_1(man)
        for name in sorted(os.listdir(rundir)):
            if name.endswith(".jsonl") and name != "ledger.jsonl":
                files[name] = _records(os.path.join(rundir, name))
        if meas is not None:
            _agent_fidelity(meas, files)
    if meas is not None:
        meas = _measurements(meas)
    # everything converted and checked: now write, the manifest last
    for name, lines in files.items():
        _write(os.path.join(rundir, name), "".join(
            json.dumps(r, separators=(",", ":")) + "\n" for r in lines))
    if meas is not None:
        _write(meas_path, json.dumps(meas.to_dict(), indent=1))
    new = {"format": FORMAT, **{k: v for k, v in man.items() if k != "format"},
           "upgraded": man.get("upgraded", {"from": version})}
    _write(os.path.join(rundir, "manifest.json"), json.dumps(new, indent=1))
    return True


def upgrade_summaries(root: str) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """Bring every ``summary.json`` at or under ``root`` to the current summary format:
    (upgraded, already current, [(file, why not)])."""
    return _each(sorted(os.path.join(d, summaries.FILE) for d, _, files in os.walk(root)
                        if summaries.FILE in files), upgrade_summary)


def upgrade_summary(path: str) -> bool:
    """One ``summary.json``; False if it was current already."""
    data = _load(path)
    version = data.get("format", 0)
    if version == summaries.FORMAT:
        return False
    if version != 0:
        raise UpgradeError(f"format {version!r}: not a summary format this version knows "
                           f"(it reads {summaries.FORMAT})")
    filled: set[str] = set()
    data = _filled(summaries.Summary, {k: v for k, v in data.items() if k != "format"},
                   "", filled)
    data["upgraded"] = {"from": version, "filled": sorted(filled)}
    try:
        summary = summaries.Summary.from_json({"format": summaries.FORMAT, **data})
    except codec.SummaryError as e:
        raise UpgradeError(f"{e}; `symphony-emu report {os.path.dirname(path) or '.'}` "
                           "writes it anew from its run folders") from None
    _write(path, json.dumps(summary.to_json(), indent=1))
    return True


# A key older reports left out whose absence meant more than None or nothing: the value
# it stands for, from the part that lacks it.
SUMMARY_FILLS = {
    # before the model and the simulator: every run was emulated
    (summaries.Summary, "backend"): lambda part: "emulation",
    (summaries.RunResult, "backend"): lambda part: "emulation",
    # before the dependency rule was a choice: the runs ran in_order (as _plan says)
    (summaries.Summary, "order"): lambda part: ["in_order"],
    (summaries.RunResult, "order"): lambda part: ["in_order"],
    # the metric the report compares on, from the spec, as report.summarize takes it
    (summaries.Summary, "primary"): lambda part: primary_metric(part.get("spec") or {}),
    (summaries.Summary, "seeds"): lambda part: {"schemes": {}, "paired": {}},
    # before --repeat: each seed ran once
    (summaries.RunResult, "repeat"): lambda part: 1,
    (summaries.Excluded, "repeat"): lambda part: 1,
    # a collective failed where it has no CCT (what `failed` was added to say)
    (summaries.CollectiveResult, "failed"): lambda part: part.get("cct_s") is None,
    (summaries.Split, "twin"): lambda part: "none: reported before runs had twins",
}


def _filled(cls, part, where: str, filled: set[str]):
    """``part`` (a part of type ``cls`` as JSON) with the keys an older report left out
    filled in, and its parts' too; each filled key added to ``filled`` as a path (a
    list's items as ``[]``). What is not of the type is left as it is, to be named when
    it is read."""
    if not isinstance(part, dict):
        return part
    part = dict(part)
    for name, tp in codec.required_keys(cls):
        if name in part:
            continue
        fill = SUMMARY_FILLS.get((cls, name))
        value = fill(part) if fill else _nothing(tp)
        if value is not _NOT_FILLED:
            part[name] = value
            filled.add(f"{where}.{name}" if where else name)
    hints = codec.keys(cls)
    return {k: _filled_value(hints[k], v, f"{where}.{k}" if where else k, filled)
            if k in hints else v for k, v in part.items()}


def _filled_value(tp, value, where: str, filled: set[str]):
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, codec.Part):
        return _filled(tp, value, where, filled)
    if origin is list and args and isinstance(value, list):
        return [_filled_value(args[0], x, f"{where}[]", filled) for x in value]
    if origin is dict and args and isinstance(value, dict):
        return {k: _filled_value(args[1], v, f"{where}[]", filled) for k, v in value.items()}
    inner = [a for a in args if a is not type(None)]
    if type(None) in args and len(inner) == 1 and value is not None:
        return _filled_value(inner[0], value, where, filled)
    return value


_NOT_FILLED = object()      # a key no reader could do without: left out, to be named


def _nothing(tp):
    """What a key of type ``tp`` held where an older report had nothing of it: None if it
    may be None (not measured then), an empty list or map; else it cannot be filled."""
    args = typing.get_args(tp)
    if type(None) in args:
        return None
    origin = typing.get_origin(tp) or tp
    return [] if origin is list else {} if origin is dict else _NOT_FILLED


def _from_1(man: dict) -> dict:
    """A format-1 manifest with the compiled plan instead of its summary keys."""
    plan = _plan(man)
    return {**{k: v for k, v in man.items() if k not in PLAN_KEYS}, "plan": plan.to_dict(),
            "upgraded": {"from": 1, "plan": "compiled again from the stored spec by the "
                                            "upgrade"}}


def _plan(man: dict):
    """The run's plan compiled again, checked against what the manifest recorded of it."""
    try:
        spec = validate(man["spec"], man.get("spec_path") or "manifest.json")
    except SpecError as e:
        raise UpgradeError(f"its spec no longer validates: {e}") from None
    layouts = man.get("layouts") or []
    order = layouts[0].get("order", "in_order") if layouts else spec.collective.order
    spec = replace(spec, collective=replace(spec.collective, order=order))
    scheme = MODEL_PLAN_SCHEME if man.get("backend") == "fluid" else man["scheme"]
    plan = planning.compile(spec, scheme, man["seed"])
    then = {"link_rate_bps": man.get("link_rate_bps"), "mtu_bytes": man.get("mtu_bytes"),
            "path_hops": man.get("path_hops"), "layouts": [
                {**x, "order": x.get("order", "in_order")} for x in layouts]}
    now = json.loads(json.dumps({"link_rate_bps": plan.link_rate_bps,
                                 "mtu_bytes": plan.mtu_bytes, "path_hops": plan.path_hops,
                                 "layouts": [asdict(x) for x in plan.layouts]}))
    for key in then:
        if then[key] != now[key]:
            raise UpgradeError(f"its spec compiles today to another plan ({key}: "
                               f"{_short(now[key])}, the run's: {_short(then[key])})")
    return plan


def _records(path: str) -> list[dict]:
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = _record(json.loads(line))
                decode(rec)                      # it reads back as its type
            except (RecordError, json.JSONDecodeError) as e:
                raise UpgradeError(f"{path}, line {n}: {e}") from None
            out.append(rec)
    return out


def _record(rec: dict) -> dict:
    """One record of format 1 as format 2 writes it."""
    kind = rec.get("type")
    if kind == "collective" and "pass" in rec:
        rec = {("pass_index" if k == "pass" else k): v for k, v in rec.items()}
    elif kind == "port" and "marks_red" not in rec:
        rec = {**rec, "marks_red": rec.get("marks", 0), "marks_symphony": None,
               "marks_both": None}
    return rec


def _measurements(meas: dict) -> Measurements:
    """Format 2's ``measurements.json`` as its type (format 3)."""
    meas = dict(meas)
    meas["perturbations"] = [{"fired_s": None, **e} for e in meas.get("perturbations", [])]
    old = meas.get("underlay")
    if old and "tx_bps" not in old[0]:      # the counters' totals, as underlay_use takes them
        use = underlay_use(None, old, meas.get("wall_s", 0.0), [])
        meas["underlay"] = [u.to_dict() for u in use]
    try:
        return Measurements.from_dict(meas)
    except (ValueError, TypeError) as e:      # a key no format had, or a record's
        raise UpgradeError(f"measurements.json: {e}") from None


def _agent_fidelity(meas: dict, files: dict) -> None:
    for name, a in meas.get("agents", {}).items():
        if a.get("fidelity"):
            continue
        finals = [r for r in files.get(f"{name}.jsonl", []) if r.get("type") == "final"]
        if finals and finals[-1].get("fidelity"):
            a["fidelity"] = finals[-1]["fidelity"]


def _load(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise UpgradeError(f"{os.path.basename(path)}: cannot be read ({e})") from None


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _short(x, limit: int = 160) -> str:
    s = json.dumps(x)
    return s if len(s) <= limit else s[:limit] + "..."
