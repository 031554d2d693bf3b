"""benchmarks/scale.py's walk over link rates: which points it measures and reports."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "scale_benchmark", os.path.join(HERE, "..", "benchmarks", "scale.py"))
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)

DS = [16000, 8000, 4000, 2000, 1000]


def points(faithful_from: int):
    """Faithful exactly for dilations >= faithful_from; records what was measured."""
    measured = []

    def point(d):
        measured.append(d)
        return {"faithful": d >= faithful_from}
    return point, measured


@pytest.mark.parametrize("faithful_from, reported", [
    (1000, [8000, 4000, 2000, 1000]),          # faithful everywhere: up to the fastest
    (4000, [8000, 4000, 2000]),                # stops at the first unfaithful point
    (16000, [16000, 8000]),                    # unfaithful at the start: slower until ok
    (10 ** 9, [16000, 8000]),                  # never faithful: down to the slowest
])
def test_walk_reports_the_faithful_boundary(faithful_from, reported):
    point, measured = points(faithful_from)
    assert scale.walk(DS, 8000, False, point) == reported
    assert set(measured) == set(reported)     # nothing measured beyond what is reported


def test_walk_everything_measures_every_point():
    point, measured = points(4000)
    assert scale.walk(DS, 8000, True, point) == DS and measured == DS
