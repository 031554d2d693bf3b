"""The compiled core: the per-packet code of hosts, switches and the simulator, compiled.

A simulated data packet and its ACK each cross four ports and three switch pipelines:
~360 Python calls, ~11 events, no function over 7 % of the time (profiled 2026-12-03,
docs/architecture.md, "The compiled core"). Nothing there is left to cut by hand, so the
same sources are compiled to C extension modules by mypyc (mypy's compiler of ordinary
annotated Python; we write no C and keep one source). :data:`MODULES` are compiled as one
group: native classes and calls across them.

* ``symphony-emu core --build`` (``scripts/setup.sh`` runs it) compiles into
  ``build/core/`` with a manifest of each source's SHA-256 and the interpreter it was
  built for. It needs mypy and a C compiler; without them everything runs from source.
* :func:`install` (``runtime/__init__.py`` calls it, so before any of these modules is
  imported) puts a finder first on ``sys.meta_path`` that loads the compiled modules
  only while every source is the one compiled. After an edit the whole group runs from
  source -- its modules call each other natively, so it is all or none -- and the first
  import says so on stderr: a stale build is never run.
* ``SYMPHONY_PURE=1`` runs the sources anyway (a debugger, a profiler, a comparison).
  Results are the same either way (``tests/test_compiled_core.py``).

What compiling asks of the sources: annotations that hold at run time (a parameter that
may be a memoryview says so: ``wire.ByteView``); a class meant to be subclassed by
researchers' own code says so (``mypyc_attr(allow_interpreted_subclasses=True)``); no
``vars()`` of a compiled dataclass and no field defaults read from its class; no
monkey-patching of compiled classes (tests that need it run from source).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import tempfile

try:
    from mypy_extensions import mypyc_attr
except ImportError:     # a Python without mypy (the system's, as Mininet's `mn` runs):
    def mypyc_attr(*args, **kwargs):        # type: ignore[no-redef]
        """Nothing to tell a compiler here: the class as it is."""
        return lambda cls: cls

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD_DIR = os.path.join(REPO, "build", "core")
MANIFEST = "manifest.json"
GROUP = "symphony_core"
PURE_ENV = "SYMPHONY_PURE"

MODULES = (
    "runtime.wire", "runtime.pause",
    "hosts.flows", "hosts.gbn", "hosts.cc.base", "hosts.cc.dcqcn", "hosts.cc.none",
    "hosts.nic_core", "hosts.nic", "hosts.rank",
    "switch_agent.queue_model", "switch_agent.symphony", "switch_agent.schemes",
    "switch_agent.pipeline", "switch_agent.pfc",
    "emulator.sim.loop", "emulator.sim.network", "emulator.sim.pfc",
)

# mypy's checks that compiling needs relaxed: third-party modules without stubs are Any,
# modules outside MODULES are read for their types only
MYPY_FLAGS = ("--ignore-missing-imports", "--follow-imports=silent",
              "--disable-error-code=annotation-unchecked")

status = "pure (not installed)"     # what install() found: "compiled" or "pure (why)"


def _source(module: str) -> str:
    return os.path.join(REPO, *module.split(".")) + ".py"


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _interpreter() -> str:
    return f"{sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}"


class _Finder(importlib.abc.MetaPathFinder):
    """Finds exactly the compiled modules (and their group's shared library)."""

    def __init__(self, paths: dict[str, str]):
        self.paths = paths

    def find_spec(self, fullname, path=None, target=None):
        so = self.paths.get(fullname)
        if so is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, so, loader=importlib.machinery.ExtensionFileLoader(fullname, so))


def check(build_dir: str = BUILD_DIR) -> tuple[dict[str, str] | None, str]:
    """({module: its .so}, "compiled") when the build in ``build_dir`` is the current
    sources' for this interpreter, else (None, why not)."""
    try:
        with open(os.path.join(build_dir, MANIFEST)) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        return None, "pure (not built: symphony-emu core --build)"
    except (OSError, ValueError) as e:
        return None, f"pure (unreadable {build_dir}/{MANIFEST}: {e})"
    if manifest.get("interpreter") != _interpreter():
        return None, f"pure (built for {manifest.get('interpreter')}, this is {_interpreter()})"
    built = manifest.get("modules", {})
    if sorted(built) != sorted(MODULES):
        return None, "pure (built for another list of modules)"
    paths = {}
    for module, rec in built.items():
        src = _source(module)
        if not os.path.exists(src) or _digest(src) != rec["sha256"]:
            return None, (f"pure (stale: {os.path.relpath(src, REPO)} changed since the "
                          "build; symphony-emu core --build rebuilds it)")
        paths[module] = os.path.join(build_dir, rec["so"])
    paths[manifest["group"]] = os.path.join(build_dir, manifest["group_so"])
    if not all(os.path.exists(p) for p in paths.values()):
        return None, f"pure (incomplete build in {build_dir})"
    return paths, "compiled"


def install() -> str:
    """Load :data:`MODULES` compiled from now on if the build is current; once per process."""
    global status
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return status
    if os.environ.get(PURE_ENV):
        status = f"pure ({PURE_ENV} is set)"
        return status
    early = [m for m in MODULES if m in sys.modules]
    if early:            # imported before this ran: cannot mix, keep them all from source
        status = f"pure ({early[0]} was imported before runtime)"
        return status
    paths, status = check()
    if paths is None:
        if status.startswith("pure (stale"):
            print(f"symphony-emu: compiled core not used, running from source: "
                  f"{status[len('pure ('):-1]}", file=sys.stderr)
        return status
    sys.meta_path.insert(0, _Finder(paths))
    return status


def build(build_dir: str = BUILD_DIR) -> None:
    """Compile :data:`MODULES` into ``build_dir`` (replaced whole, manifest last)."""
    from mypyc.build import mypycify          # mypy: only the build needs it
    from setuptools import Distribution

    digests = {m: _digest(_source(m)) for m in MODULES}   # before: an edit during the
    parent = os.path.dirname(build_dir)                     # build leaves it stale
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix="core-", dir=parent)
    here = os.getcwd()
    try:
        os.chdir(REPO)                        # mypyc names modules by their relative paths
        sources = [os.path.relpath(_source(m), REPO) for m in MODULES]
        exts = mypycify([*sources, *MYPY_FLAGS], opt_level="3", group_name=GROUP,
                        target_dir=os.path.join(work, "c"))
        out = os.path.join(work, "lib")
        dist = Distribution({"name": GROUP, "ext_modules": exts})
        dist.script_args = ["build_ext", "--build-lib", out, "--build-temp",
                            os.path.join(work, "tmp")]
        dist.parse_command_line()
        dist.run_commands()
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        modules = {m: {"so": m.replace(".", "/") + suffix, "sha256": digests[m]}
                   for m in MODULES}
        group_so = f"{GROUP}__mypyc{suffix}"
        missing = [r["so"] for r in modules.values() if not os.path.exists(
            os.path.join(out, r["so"]))] + [group_so] * (not os.path.exists(
                os.path.join(out, group_so)))
        if missing:
            raise RuntimeError(f"the build made no {', '.join(missing)}")
        with open(os.path.join(out, MANIFEST), "w") as f:
            json.dump({"interpreter": _interpreter(), "group": f"{GROUP}__mypyc",
                       "group_so": group_so, "modules": modules}, f, indent=1)
        old = build_dir + ".old"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(build_dir):
            os.rename(build_dir, old)
        os.rename(out, build_dir)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        os.chdir(here)
        shutil.rmtree(work, ignore_errors=True)
