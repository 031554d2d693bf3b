#!/usr/bin/env bash
# The test suite: set everything up (first run only), then unit and emulation tests.
# Emulation tests (marker `emulation`) need root; without it they are skipped with a reason.
# Extra arguments go to pytest (e.g. `-m "not emulation"`, `-k symphony`).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
setup_for_tests=1
source "$here/setup.sh" || exit 1
set +e
cd "$repo"
"$venv/bin/python" -m pytest tests "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "run-tests: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
