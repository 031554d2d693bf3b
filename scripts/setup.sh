#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12, Ubuntu 22.04 or Ubuntu 24.04 machine, as root:
# system packages, a virtual environment in .venv, and this project installed into it.
# Sourced by scripts/run-main.sh and scripts/run-tests.sh; safe to run again.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: run as root (the emulator creates network namespaces and iptables rules)" >&2
    exit 1
fi

# mininet (Python API + mnexec), iptables with NFQUEUE, tcpdump/iperf3/ethtool/ping for the
# data path, python3-venv/-dev for the venv. (No libnetfilter-queue: the agent speaks
# netlink itself, see switch_agent/nfqueue.py.)
# tshark (with dumpcap): `run --pcap` captures with it and the capture tests dissect with it.
apt_packages=(mininet iptables tcpdump iperf3 ethtool iproute2 iputils-ping
              python3 python3-venv python3-dev gcc procps tshark)
# The test suite (scripts/run-tests.sh sets setup_for_tests=1) also runs an sshd of its
# own in each stand-in server's namespace (tests/test_ssh_servers_emulation.py). On a
# machine that does not already have openssh-server, Debian starts its system service on
# install (unless policy-rc.d says no); the tests never use that one.
if [ "${setup_for_tests:-0}" = 1 ]; then
    apt_packages+=(openssh-server)
fi
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The venv uses the distribution's Python so that Debian's mininet package matches it;
# mininet is not on PyPI, so its (pure-Python) package is linked into the venv alone,
# rather than exposing every system package with --system-site-packages.
py=${SYMPHONY_PYTHON:-/usr/bin/python3}
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating virtual environment $venv"
    "$py" -m venv "$venv"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
mn_pkg=$(/usr/bin/python3 -c 'import mininet, os; print(os.path.dirname(mininet.__file__))')
[ -e "$site/mininet" ] || ln -s "$mn_pkg" "$site/mininet"
# Mininet 2.3.0's mininet.node imports distutils, which Python 3.12 no longer has (Ubuntu
# 24.04; mininet issue #1244; Debian 12 and Ubuntu 22.04 ship it as python3-distutils,
# which python3-venv pulls in). A venv on 3.12 gets no setuptools either, so there the
# venv gets setuptools, whose distutils stand-in serves mininet's `distutils.version`.
if ! "$venv/bin/python" -c 'import mininet.node' 2>/dev/null; then
    echo "setup: mininet.node does not import in $venv (no distutils): installing setuptools"
    "$venv/bin/python" -m pip install -q setuptools >"$venv/setuptools-install.log" 2>&1 || {
        tail -n 30 "$venv/setuptools-install.log" >&2; exit 1; }
    if ! "$venv/bin/python" -c 'import mininet.node'; then
        echo "setup: mininet.node still does not import in $venv (see the error above)" >&2
        exit 1
    fi
fi

stamp="$venv/.installed"
if [ ! -f "$stamp" ] || [ "$repo/setup.cfg" -nt "$stamp" ] || [ "$repo/setup.py" -nt "$stamp" ]; then
    echo "setup: installing the project into $venv"
    log="$venv/pip-install.log"
    if ! { "$venv/bin/python" -m pip install --upgrade pip &&
           "$venv/bin/python" -m pip install -e "$repo[test,emulation]"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        echo "setup: installing the project failed; full log in $log" >&2
        exit 1
    fi
    touch "$stamp"
fi

# The compiled core (runtime/compiled.py): the per-packet code of hosts, switches and the
# simulator compiled by mypyc (gcc, python3-dev above) into build/core/, the same results
# ~1.5x faster. Built again only when a source changed; if it cannot be built, everything
# runs from source and says so here.
core_log="$venv/core-build.log"
: >"$core_log"
if ! "$venv/bin/python" -c 'import mypyc' 2>/dev/null; then
    # mypy brings mypyc (the `compile` extra); not having it is not fatal
    "$venv/bin/python" -m pip install -e "$repo[compile]" >>"$core_log" 2>&1 || true
fi
if ! "$venv/bin/symphony-emu" core --build >>"$core_log" 2>&1; then
    tail -n 5 "$core_log" >&2
    echo "setup: the compiled core did not build (log: $core_log); running from source" >&2
elif grep -q "^compiled core built" "$core_log"; then
    echo "setup: compiled the core into build/core/"
fi
