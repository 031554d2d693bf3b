"""What the paper reports, as data: a spec's ``[[paper]]`` tables.

Every spec in ``runs/`` that reproduces one of the paper's figures or tables says what
the paper measured there, one table per number, so that a comparison can print the
paper's value beside ours and a results page can take its first column from data::

    [[paper]]
    figure = "Fig 5"
    metric = "cct"              # what is measured (METRICS)
    scheme = "symphony"         # of which scheme ...
    against = "baseline"        # ... against which ("": an absolute value)
    statistic = "median"        # over the paper's runs
    value = -22.0
    unit = "%"                  # "%": (scheme / against - 1) x 100; "x": a ratio; "ms" ...
    setting = "100 runs; 32 hosts, 4 rings of 8, 8 MB chunks"   # as the paper states it
    scaled = "16 hosts, 4 rings of 4, 256 KB chunks, D = 1000"  # what this spec changed
    variant = ""                # the [[variants]] entry it belongs to ("": the spec)

A claim the paper makes in words (a trend, a sweet spot) has ``claim = "..."`` instead
of ``value`` and ``unit``. Pure: no I/O; ``emulator.spec`` calls :func:`parse`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

# What a claim may measure: the comparisons' metrics (emulator.analysis.evidence) first,
# then the paper's other quantities.
METRICS = ("cct", "jct", "max_overlap",
           "cct_over_bound",      # a collective's time over the lockstep bound (Fig 2)
           "step_rate",           # the normalized step completion rate (Fig 2b)
           "last_step_span",      # slowest minus fastest flow of the last step (Fig 7b)
           "throughput",          # the jobs' aggregate throughput (Fig 7a)
           "flow_time",           # one flow's completion time (Fig 9)
           "gain")                # Symphony's gain, over a swept parameter (Fig 8)
STATISTICS = ("median", "mean", "range", "value")
UNITS = ("%", "x", "ms", "steps")


@dataclass(frozen=True)
class PaperClaim:
    figure: str
    metric: str
    setting: str
    value: float | None = None
    unit: str = ""
    claim: str = ""
    scheme: str = "symphony"
    against: str = "baseline"
    statistic: str = "median"
    scaled: str = ""
    variant: str = ""

    def text(self) -> str:
        """One line: "Fig 5: median CCT, symphony vs baseline -22 % (100 runs; ...)"."""
        what = f"{self.statistic} {self.metric}" if self.statistic != "value" else self.metric
        who = self.scheme + (f" vs {self.against}" if self.against else "")
        said = (f"{self.value:+g} {self.unit}" if self.unit == "%" else
                f"{self.value:g} {self.unit}") if self.value is not None else self.claim
        return f"{self.figure}: {what}, {who} {said} ({self.setting})"


KEYS = tuple(f.name for f in fields(PaperClaim))
_TEXT_KEYS = ("figure", "setting", "unit", "claim", "scheme", "against", "scaled", "variant")


class PaperError(ValueError):
    """A ``[[paper]]`` table that does not say what it must; ``key``, ``value`` and
    ``allowed`` name it (``emulator.spec`` makes them the spec's one-line error)."""

    def __init__(self, key: str, value, allowed: str):
        super().__init__(f"{key} = {value!r}: {allowed}")
        self.key, self.value, self.allowed = key, value, allowed


def parse(tables, variants: tuple = (), schemes: tuple = ()) -> tuple[PaperClaim, ...]:
    """``[[paper]]`` tables as claims; a :class:`PaperError` names the first bad key
    (``paper[i].key``). ``variants``: the spec's variant names; ``schemes``: the names a
    scheme may have."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise PaperError("paper", tables, "must be a list of [[paper]] tables")
    out = []
    for i, t in enumerate(tables):
        where = f"paper[{i}]"

        def need(cond, key, allowed):
            if not cond:
                raise PaperError(f"{where}.{key}", t.get(key), allowed)

        for k in t:
            need(k in KEYS, k, f"unknown key; allowed: {', '.join(KEYS)}")
        for k in ("figure", "metric", "setting"):
            need(isinstance(t.get(k), str) and t[k].strip(), k, "a non-empty string is needed")
        for k in _TEXT_KEYS:
            need(isinstance(t.get(k, ""), str), k, "must be a string")
        need(t["metric"] in METRICS, "metric", f"allowed: {', '.join(METRICS)}")
        need(t.get("statistic", "median") in STATISTICS, "statistic",
             f"allowed: {', '.join(STATISTICS)}")
        value = t.get("value")
        if value is None:
            need(t.get("claim", "").strip(), "claim",
                 "a claim in words is needed where no value is given")
            need("unit" not in t, "unit", "a unit needs a value")
        else:
            need(isinstance(value, (int, float)) and not isinstance(value, bool), "value",
                 "must be a number")
            need(t.get("unit") in UNITS, "unit", f"allowed: {', '.join(UNITS)}")
        need(t.get("variant", "") in ("",) + tuple(variants), "variant",
             f"allowed: one of the spec's [[variants]] ({', '.join(variants) or 'none'}), "
             "or \"\" for the spec itself")
        for k in ("scheme", "against"):
            allowed = schemes + (("",) if k == "against" else ())
            words = ", ".join(a or '""' for a in allowed)
            need(not schemes or t.get(k, PaperClaim.__dataclass_fields__[k].default)
                 in allowed, k, f"allowed: {words}")
        out.append(PaperClaim(**{**t, "value": float(value) if value is not None else None}))
    return tuple(out)


def matching(claims, metric: str, scheme: str, against: str = "baseline",
             variant: str = "") -> list[PaperClaim]:
    """The claims about ``metric`` of ``scheme`` against ``against`` (in ``variant``)."""
    return [c for c in claims if (c.metric, c.scheme, c.against, c.variant)
            == (metric, scheme, against, variant)]
