"""`symphony-emu`: the command line (also `python -m emulator`). A module per command
(``run``, ``sweep``, ``predict``, ``validate``, ``folders``: report and clean, ``live``: the
interactive CLI, ``reproduce``, ``core``: the compiled core), what they share in
``common``, the words of each option in ``options``.

    symphony-emu run SPEC [--out DIR] [--seeds N] [--scheme S] [--set key=value ...]
    symphony-emu sweep SPEC [--param key=v1,v2 ...] [--seeds N] [--scheme S ...] [--out DIR]
    symphony-emu predict SPEC [--seeds N] [--scheme S ...] [--set key=value ...] [--out DIR]
    symphony-emu reproduce [FIG ...] [--backend fluid|sim|emulation] | --page
    symphony-emu report DIR
    symphony-emu upgrade DIR ...
    symphony-emu validate SPEC [--set key=value ...]
    symphony-emu cli SPEC
    symphony-emu clean [DIR]
    symphony-emu core [--build [--force]]

``run`` executes an experiment spec (TOML, every key in docs/spec.md; runs/) for each
scheme and seed, verifies every collective, and writes manifest, logs, summary.json and
plots; ``predict`` runs the same plans in the flow-level model (no root, no network:
seconds; ``emulator/launch/predict.py``); ``report`` recomputes metrics and plots from a
run folder's logs; ``validate`` checks a spec without touching the network.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

from emulator.cli.options import build_parser

# command -> (module, function): imported when the command runs, so that one command's
# imports (Mininet, the simulator, matplotlib) do not slow the others
COMMANDS = {"run": ("run", "cmd_run"), "sweep": ("sweep", "cmd_sweep"),
            "predict": ("predict", "cmd_predict"), "validate": ("validate", "cmd_validate"),
            "report": ("folders", "cmd_report"), "clean": ("folders", "cmd_clean"),
            "cli": ("live", "cmd_cli"), "reproduce": ("reproduce", "cmd_reproduce"),
            "upgrade": ("folders", "cmd_upgrade"), "core": ("core", "cmd_core")}


# what only the emulation imports (docs/usage.md, "The simulator alone")
EMULATION_PACKAGES = ("mininet", "pyroute2")


def _handler(command: str):
    module, name = COMMANDS[command]

    def call(args) -> int:
        return getattr(importlib.import_module(f"emulator.cli.{module}"), name)(args)
    return call


def main(argv: list[str] | None = None) -> int:
    args = build_parser({c: _handler(c) for c in COMMANDS}).parse_args(argv)
    if args.needs_root and os.geteuid() != 0:
        print(f"symphony-emu {args.command}: needs root (network namespaces, iptables)",
              file=sys.stderr)
        return 2
    # SIGTERM tears down like Ctrl-C: the fabric's context manager removes what it made.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    # Ctrl-C too, even when started in the background by a shell (which hands its
    # background jobs SIGINT ignored, and Python then keeps it ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return args.func(args)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in EMULATION_PACKAGES:
            raise
        print(f"symphony-emu {args.command}: the emulation needs {e.name}, which this "
              "installation lacks (scripts/setup.sh installs it; --backend sim, predict, "
              "reproduce --backend fluid|sim and report do not need it)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nsymphony-emu: interrupted; everything this run created has been removed",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
