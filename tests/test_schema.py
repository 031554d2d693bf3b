"""emulator/schema.py: each spec key's default is declared once, and what repeats it is
checked against that one declaration: the complete spec of docs/spec.md (whose one-table
sections show the defaults) and the process configs whose parameters a spec key sets.
Pure, no root."""

import dataclasses
import os
import re

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

from emulator import jobstream, schema

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# fields that are no key of the file (`servers = [...]` sets server_targets)
NOT_KEYS = {"topology": {"server_targets"}}


def reference() -> dict:
    """The complete spec of docs/spec.md, as TOML."""
    with open(os.path.join(MAIN, "docs", "spec.md"), encoding="utf-8") as f:
        text = f.read()
    (block,) = re.findall(r"^```toml\n(.*?)^```", text, re.S | re.M)
    return tomllib.loads(block)


def defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_the_reference_shows_every_key_of_every_section_with_its_default():
    ref = reference()
    for name, cls in schema.SECTIONS.items():
        want = {k: v for k, v in defaults(cls).items() if k not in NOT_KEYS.get(name, ())}
        got = {k: tuple(v) if isinstance(v, list) else v for k, v in ref[name].items()}
        assert set(got) == set(want), f"[{name}]: keys differ: {set(got) ^ set(want)}"
        for k, v in want.items():
            assert got[k] == v, f"docs/spec.md: {name}.{k} = {got[k]!r}, the default: {v!r}"


def test_the_reference_keys_of_jobs_messages_and_perturbations_exist():
    ref = reference()
    for table, cls in (("jobs", schema.JobSpec), ("messages", schema.MessageSpec),
                       ("perturbations", schema.PerturbationSpec)):
        fields = {f.name for f in dataclasses.fields(cls)}
        for entry in ref[table]:
            assert set(entry) <= fields, f"[[{table}]]: no such keys {set(entry) - fields}"
    assert set(ref["job_stream"]) <= jobstream.KEYS
    assert set(ref) <= set(schema.TOP_KEYS)
