"""Shared helpers for the spec tests: a minimal valid spec, editing its keys, writing TOML."""

import copy
import os

from tests.toml_util import to_toml


MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE1 = os.path.join(MAIN, "runs", "table1.toml")

BASE = {
    "name": "mini",
    "topology": {"kind": "leafspine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2},
    "jobs": [{"id": 1, "hosts": "all", "algorithm": "ring_allreduce", "rings": "rail",
              "chunk_bytes": 4096}],
}


# --- writing specs ---------------------------------------------------------------------

def set_key(raw: dict, dotted: str, value) -> dict:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    node[parts[-1]] = value
    return raw


def del_key(raw: dict, dotted: str) -> dict:
    node = raw
    parts = dotted.split(".")
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    del node[parts[-1]]
    return raw


def write(tmp_path, text: str, name: str = "spec.toml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def spec_with(tmp_path, *changes, remove=()):
    raw = copy.deepcopy(BASE)
    for key in remove:
        del_key(raw, key)
    for key, value in changes:
        set_key(raw, key, value)
    return write(tmp_path, to_toml(raw))


def two_jobs(job0: dict, job1: dict) -> list:
    base = {"algorithm": "ring_allreduce", "rings": "rail", "chunk_bytes": 4096}
    return [dict(base, **job0), dict(base, **job1)]
