"""Helpers for spec tests: a small TOML writer (scalars, inline tables, [tables] and
[[arrays of tables]]: enough for experiment specs) and the check that a bad spec is
rejected with a message naming its problem."""

import json

import pytest

from emulator.spec import load
from emulator.spec.check import SpecError


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(v)


def to_toml(raw: dict) -> str:
    """Scalars, [tables] and [[arrays of tables]] (lists of dicts), enough for specs."""
    head, tables, arrays = [], [], []
    for k, v in raw.items():
        if isinstance(v, dict):
            tables.append(f"[{k}]")
            tables += [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                arrays.append(f"[[{k}]]")
                arrays += [f"{kk} = {toml_value(vv)}" for kk, vv in item.items()]
        else:
            head.append(f"{k} = {toml_value(v)}")
    return "\n".join(head + tables + arrays) + "\n"


def assert_spec_error(path: str, *substrings, overrides=()) -> str:
    """``load(path)`` must raise a SpecError naming the file and every substring."""
    with pytest.raises(SpecError) as e:
        load(path, list(overrides))
    msg = str(e.value)
    assert path in msg, f"message does not name the file: {msg}"
    for s in substrings:
        assert s in msg, f"{s!r} not in message: {msg}"
    return msg
