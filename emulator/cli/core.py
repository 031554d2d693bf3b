"""`symphony-emu core`: whether this process runs the compiled core, and building it
(``runtime/compiled.py``)."""

from __future__ import annotations

import os

from runtime import compiled


def cmd_core(args) -> int:
    if not args.build:
        print(f"{compiled.status}: {', '.join(compiled.MODULES)}")
        return 0
    paths, why = compiled.check()
    where = os.path.relpath(compiled.BUILD_DIR)
    if paths is not None and not args.force:
        print(f"compiled core current in {where}/")
        return 0
    print(f"compiling the core ({len(compiled.MODULES)} modules, mypyc, ~1 min; "
          f"now {why})", flush=True)
    try:
        compiled.build()
    except ImportError as e:
        print(f"symphony-emu core --build: {e.name or e} is not installed "
              "(pip install 'symphony-emu[compile]'); running from source", flush=True)
        return 1
    print(f"compiled core built in {where}/ (used from the next process on)")
    return 0
