"""A figure's data: ``docs/data/figures/<fig>.csv``, a row a run, as
``emulator.launch.reproduce`` writes it (its ``COLUMNS``, then a column per message's flow
time, ``fct_step<k>_s``, where a figure has them), each read back as a :class:`FigureRow`
for the results page (``emulator.analysis.figures``).
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class FigureRow:
    """A run as a row of a figure's CSV (``emulator.launch.reproduce.COLUMNS``): who ran
    it, and its metrics by column (``values``: the other columns, None where empty)."""
    figure: str
    variant: str
    backend: str                    # fluid, sim, emulation
    scheme: str
    seed: int
    git_revision: str
    fabric: str                     # drop | pfc (topology.flow_control; rows written
                                    # before the column existed ran drop-tail)
    faithful: bool
    wall_s: float | None            # the machine time it took
    values: dict[str, float | None]

    @classmethod
    def parse(cls, raw: dict[str, str]) -> FigureRow:
        """A row as ``csv.DictReader`` reads it (every value text, "" when empty)."""
        own = {f.name: _PARSE.get(f.name, str) for f in dataclasses.fields(cls)[:-1]}
        return cls(**{k: parse(raw.get(k) or "") for k, parse in own.items()},
                   values={k: _number(v) for k, v in raw.items() if k not in own})


def _number(text: str) -> float | None:
    return float(text) if text else None


_PARSE = {"seed": int, "faithful": lambda text: text == "True", "wall_s": _number,
          "fabric": lambda text: text or "drop"}


def read(path: str) -> list[FigureRow]:
    with open(path, newline="") as f:
        return [FigureRow.parse(r) for r in csv.DictReader(f)]
