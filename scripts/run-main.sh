#!/usr/bin/env bash
# The main job: set everything up (first run only), then run the default experiment.
# Extra arguments go to `symphony-emu demo` (see `symphony-emu demo --help`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/setup.sh"
exec "$venv/bin/symphony-emu" demo "$@"
