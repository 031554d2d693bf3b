#!/usr/bin/env bash
# The main job: set everything up (first run only), then run the default experiment,
# runs/table1.toml (the paper's Table 1 fabric, ring all-reduce, baseline vs Symphony),
# and print where its summary and plots are. Extra arguments go to `symphony-emu run`
# (e.g. --seeds 3, --set symphony.k=0.001, --out DIR).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/setup.sh"
exec "$venv/bin/symphony-emu" run "$repo/runs/table1.toml" "$@"
