"""python -m emulator.cli: the symphony-emu command."""

import sys

from emulator.cli import main

sys.exit(main())
