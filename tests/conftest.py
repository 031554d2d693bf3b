import os
import shutil
import subprocess
import sys

import pytest

from runtime import compiled


def _emulation_skip_reason():
    if os.geteuid() != 0:
        return "emulation tests need root (network namespaces, iptables)"
    for tool in ("mnexec", "iptables", "tc", "ip"):
        if shutil.which(tool) is None:
            return f"emulation tests need `{tool}` (run scripts/setup.sh)"
    try:
        import mininet  # noqa: F401
    except ImportError:
        return "emulation tests need the mininet Python package (run scripts/setup.sh)"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _emulation_skip_reason()
    if reason is None:
        return
    for item in items:
        if "emulation" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """A test marked ``pure`` patches or subclasses a class the compiled core makes native
    (which only its source allows): where this process runs the compiled core, it runs in
    a pytest of its own from source (SYMPHONY_PURE=1) and fails with that one's output."""
    if "pure" not in pyfuncitem.keywords or compiled.status != "compiled":
        return None
    env = dict(os.environ, **{compiled.PURE_ENV: "1"})
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          pyfuncitem.nodeid], cwd=str(pyfuncitem.config.rootpath), env=env,
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"from source (SYMPHONY_PURE=1):\n{res.stdout[-4000:]}{res.stderr[-2000:]}",
                    pytrace=False)
    return True


def _root_veths():
    out = subprocess.run(["ip", "-o", "link", "show", "type", "veth"],
                         capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if line}


@pytest.fixture
def no_leftovers():
    """Fail the test if it leaves a veth in the root namespace or a process of the run."""
    before = _root_veths()
    created = []
    yield created           # tests append LiveFabric objects here
    after = _root_veths()
    assert after <= before, f"veth interfaces left behind: {sorted(after - before)}"
    for fab in created:
        assert not fab.leftovers, f"teardown had to remove: {fab.leftovers}"
        for name, pid in list(fab.pids.items()) + list(fab.agent_pids.items()):
            assert not os.path.exists(f"/proc/{pid}") or _zombie(pid), \
                f"process {pid} ({name}) still running"


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] == "Z"
    except FileNotFoundError:
        return True
