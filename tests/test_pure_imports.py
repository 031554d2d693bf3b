"""The pure core stands alone: every module but the emulation's imports with Mininet,
netfilterqueue and pyroute2 blocked (docs/usage.md, "The simulator alone"), so
``pip install .`` without root, a kernel's namespaces or Mininet gives ``validate``,
``predict``, ``run --backend sim``, ``reproduce --backend fluid|sim`` and ``report``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from topologies.wiring import REPO_ROOT

PACKAGES = ("cluster", "emulator", "hosts", "runtime", "switch_agent", "topologies")
# What only an emulation (or the interactive CLI of a live fabric) imports: Mininet's
# nodes, links and CLI, the VXLAN overlay and the launcher of processes in namespaces.
EMULATION_ONLY = {
    "cluster.nodes", "cluster.overlay", "cluster.remote", "cluster.servers",
    "emulator.cli.live", "emulator.launch.fabric", "emulator.launch.launcher",
    "emulator.launch.runner", "topologies.dumbbell", "topologies.fabric",
    "topologies.leafspine",
}

_PROBE = r"""
import importlib, json, sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mininet", "netfilterqueue", "pyroute2"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
sys.meta_path.insert(0, Blocked())
failed = {}
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception as e:
        failed[m] = f"{type(e).__name__}: {e}"
print(json.dumps(failed))
"""


def _modules() -> list[str]:
    out = []
    for pkg in PACKAGES:
        for d, _, files in os.walk(os.path.join(REPO_ROOT, pkg)):
            rel = os.path.relpath(d, REPO_ROOT).replace(os.sep, ".")
            for f in files:
                if f.endswith(".py") and f != "__main__.py":
                    out.append(rel if f == "__init__.py" else f"{rel}.{f[:-3]}")
    return sorted(out)


def test_every_pure_module_imports_without_mininet():
    mods = _modules()
    assert len(mods) > 100 and "emulator.sim.run" in mods
    res = subprocess.run([sys.executable, "-c", _PROBE, *mods], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    failed = json.loads(res.stdout.strip().splitlines()[-1])
    pure_failed = {m: why for m, why in failed.items() if m not in EMULATION_ONLY}
    assert pure_failed == {}, "pure modules that need the emulation's packages: " + \
        "; ".join(f"{m} ({why})" for m, why in pure_failed.items())
    # the list above is the emulation's, not a place to hide a module: each one on it does
    # need Mininet (or is no longer emulation-only and should leave the list)
    assert set(failed) == EMULATION_ONLY, sorted(EMULATION_ONLY - set(failed))


def test_an_emulation_command_without_mininet_says_so_in_one_line(tmp_path):
    """Where Mininet is not installed, ``run`` of the emulation (here as root) names what
    is missing and what still works, instead of a traceback, and makes no folder."""
    out = tmp_path / "never-made"
    code = _PROBE.split("failed = {}")[0] + (
        "import os; os.geteuid = lambda: 0\n"
        "from emulator import cli\n"
        f"sys.exit(cli.main(['run', 'runs/fig9.toml', '--seeds', '1', '--out', {str(out)!r}]))\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, timeout=120)
    err = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr[-2000:]
    assert err[-1].startswith("symphony-emu run: the emulation needs mininet"), err
    assert "--backend sim" in err[-1]
    assert not out.exists()
