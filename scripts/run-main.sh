#!/usr/bin/env bash
# The main job: set everything up (first run only), then ask of runs/table1.toml (the
# paper's Table 1 fabric, ring all-reduce, baseline vs Symphony) whether Symphony shortens
# the collective and the job -- twice:
#   1. simulated (--backend sim: the same protocol code on a virtual clock), 20 paired
#      seeds: enough for a verdict with a 95 % interval;
#   2. emulated (real packets through the kernel), 3 seeds, each beside its simulated twin
#      on its own recorded paths: how far emulation moves the same code's answer.
# Extra arguments go to both `symphony-emu run`s (e.g. --set symphony.k=0.001); --out DIR
# puts them in DIR/simulated and DIR/emulated.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/setup.sh"
out="$repo/runs/out/$(date +%Y%m%d-%H%M%S)-main"
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = "--out" ] && [ $# -gt 1 ]; then out=$2; shift 2; else args+=("$1"); shift; fi
done
emu=("$venv/bin/symphony-emu" run "$repo/runs/table1.toml")
echo "== 1. simulated: 20 paired seeds =="
"${emu[@]}" --backend sim --seeds 20 --no-plots --out "$out/simulated" ${args[@]+"${args[@]}"}
echo
echo "== 2. emulated: 3 seeds, each beside its simulated twin =="
rc=0
"${emu[@]}" --out "$out/emulated" ${args[@]+"${args[@]}"} || rc=$?
echo
echo "== the answer =="
"$venv/bin/python" -m emulator.analysis.answer "$out/simulated" "$out/emulated"
exit "$rc"
