"""The comparison across seeds (emulator.analysis.report.compare_seeds): each seed's
median CCT per scheme, the median and quartiles over seeds, and the paired difference
against the baseline of the same seed -- the number a reader should quote, since a
single run's difference flips sign from seed to seed."""

import pytest

from emulator.analysis import report


def _run(scheme, seed, ccts, jct=None):
    return {"scheme": scheme, "seed": seed,
            "jobs": [{"jct_s": jct, "collectives": [{"cct_s": c} for c in ccts]}]}


def test_paired_difference_is_per_seed_and_its_quartiles_are_over_seeds():
    runs = [_run("baseline", 1, [1.0, 1.2, 1.1], 4.0), _run("symphony", 1, [0.9, 1.0, 0.95], 3.6),
            _run("baseline", 2, [2.0, 2.0], 8.0), _run("symphony", 2, [2.2, 2.2], 8.8),
            _run("baseline", 3, [1.0], 4.0), _run("symphony", 3, [0.8], 3.0),
            _run("symphony", 4, [0.1])]                   # no baseline of seed 4: not paired
    out = report.compare_seeds(runs)
    base = out["schemes"]["baseline"]["cct_s"]
    assert (base["median"], base["n"]) == (pytest.approx(1.1), 3)
    assert out["schemes"]["symphony"]["cct_s"]["n"] == 4
    p = out["paired"]["symphony"]
    # per seed: 0.95/1.1 - 1 = -13.6 %, 2.2/2.0 - 1 = +10 %, 0.8/1.0 - 1 = -20 %
    assert p["seeds"] == [1, 2, 3] and p["faster"] == 2 and p["n"] == 3
    assert p["median"] == pytest.approx(0.95 / 1.1 - 1)
    assert p["p25"] == pytest.approx(((0.95 / 1.1 - 1) + (-0.2)) / 2)
    assert p["p75"] == pytest.approx(((0.95 / 1.1 - 1) + 0.1) / 2)
    assert out["schemes"]["symphony"]["jct_s"]["median"] == pytest.approx(3.6)


def test_a_run_without_any_completed_collective_is_not_a_seed(capsys):
    runs = [_run("baseline", 1, [None]), _run("baseline", 2, [1.0]), _run("symphony", 2, [0.5])]
    out = report.compare_seeds(runs)
    assert out["schemes"]["baseline"]["cct_s"]["n"] == 1
    report.print_seeds({"seeds": out})
    assert capsys.readouterr().out == ""                    # one seed each: nothing to say
