"""Shared helpers for the spec-extension tests: run spec paths, minimal specs, writing TOML."""

import os

from tests.toml_util import to_toml


MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(MAIN, "runs")
TABLE1 = os.path.join(RUNS, "table1.toml")
AT_2000 = ["scale.dilation=2000"]   # the arithmetic below is at D = 2000 (the file says 1000)
FIG2 = os.path.join(RUNS, "fig2.toml")
FIG4 = os.path.join(RUNS, "fig4.toml")
FIG5 = os.path.join(RUNS, "fig5.toml")
FIG9 = os.path.join(RUNS, "fig9.toml")

# 2 leaves x 2 spines x 2 hosts: leaf0 has h0, h1; leaf1 has h2, h3. One job, two rails.
BASE = {
    "name": "pert",
    "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "link_rate_gbps": 10.0},
    "jobs": [{"id": 1, "hosts": "all", "algorithm": "ring_allreduce", "rings": "rail",
              "chunk_bytes": 4096}],
}

# Fig 9-like: a dumbbell of 3 hosts, two messages into h2.
MSG_BASE = {
    "name": "msgs",
    "topology": {"kind": "dumbbell", "hosts": 3},
    "messages": [{"src": "h0", "dst": "h2", "bytes": 1048576, "start_ms": 0.3, "job": 1,
                  "step": 0},
                 {"src": "h1", "dst": "h2", "bytes": 1048576, "start_ms": 0.0, "job": 1,
                  "step": 1}],
}


# --- writing specs ---------------------------------------------------------------------

def write(tmp_path, raw: dict, name: str = "spec.toml") -> str:
    p = tmp_path / name
    p.write_text(to_toml(raw))
    return str(p)


def with_(d: dict, **changes) -> dict:
    return dict(d, **changes)
