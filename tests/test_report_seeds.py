"""The comparison across seeds (emulator.analysis.report.compare_seeds): each seed's
median CCT per scheme, the median and quartiles over seeds, and the paired difference
against the baseline of the same seed -- the number a reader should quote, since a
single run's difference flips sign from seed to seed."""

import pytest

from emulator.analysis import console, report
from emulator.analysis.evidence import evidence, primary_metric
from tests import summary_util as su


def _run(scheme, seed, ccts, jct=None, overlap=1):
    return su.run(scheme, seed, [su.job([su.collective(p, cct_s=c) for p, c in enumerate(ccts)],
                                        jct_s=jct, max_step_overlap=overlap)])


def test_paired_difference_is_per_seed_and_its_quartiles_are_over_seeds():
    runs = [_run("baseline", 1, [1.0, 1.2, 1.1], 4.0), _run("symphony", 1, [0.9, 1.0, 0.95], 3.6),
            _run("baseline", 2, [2.0, 2.0], 8.0), _run("symphony", 2, [2.2, 2.2], 8.8),
            _run("baseline", 3, [1.0], 4.0), _run("symphony", 3, [0.8], 3.0),
            _run("symphony", 4, [0.1])]                   # no baseline of seed 4: not paired
    out = report.compare_seeds(runs)
    base = out.schemes["baseline"].cct_s
    assert (base.median, base.n) == (pytest.approx(1.1), 3)
    assert out.schemes["symphony"].cct_s.n == 4
    p = out.paired["symphony"]
    # per seed: 0.95/1.1 - 1 = -13.6 %, 2.2/2.0 - 1 = +10 %, 0.8/1.0 - 1 = -20 %
    assert p.seeds == [1, 2, 3] and p.faster == 2 and p.n == 3
    assert p.median == pytest.approx(0.95 / 1.1 - 1)
    assert p.p25 == pytest.approx(((0.95 / 1.1 - 1) + (-0.2)) / 2)
    assert p.p75 == pytest.approx(((0.95 / 1.1 - 1) + 0.1) / 2)
    assert out.schemes["symphony"].jct_s.median == pytest.approx(3.6)


def test_a_run_without_any_completed_collective_is_not_a_seed(capsys):
    runs = [_run("baseline", 1, [None]), _run("baseline", 2, [1.0]), _run("symphony", 2, [0.5])]
    out = report.compare_seeds(runs)
    assert out.schemes["baseline"].cct_s.n == 1
    console.print_seeds(su.summary(runs, seeds=out))
    assert capsys.readouterr().out == ""                    # one seed each: nothing to say


def _runs(n, base_cct, sym_cct, base_jct, sym_jct):
    out = []
    for k in range(n):
        out.append(_run("baseline", k + 1, [base_cct[k]], base_jct[k], overlap=8))
        out.append(_run("symphony", k + 1, [sym_cct[k]], sym_jct[k], overlap=4))
    return out


def test_the_evidence_pairs_every_metric_with_its_interval_primary_first(capsys):
    """Ten seeds: Symphony 10 % faster per collective in 9 of 10, 20 % slower per job in
    all 10, half the overlap. Each metric gets the distribution-free interval, the words a
    reader needs, and the primary metric (JCT, several passes) comes first."""
    base = [1.0] * 10
    sym = [0.9] * 9 + [1.05]
    runs = _runs(10, base, sym, [10.0] * 10, [12.0] * 10)
    ev = evidence(runs, primary="jct")["symphony"]
    assert list(ev) == ["jct", "cct", "max_overlap"]
    assert ev["jct"].verdict == "higher" and ev["jct"].median == pytest.approx(0.2)
    assert ev["cct"].verdict == "lower" and ev["cct"].lower == 9
    assert ev["cct"].median_ci == pytest.approx([-0.1, -0.1])
    assert ev["max_overlap"].median == pytest.approx(-0.5)
    summary = su.summary(runs, seeds=report.compare_seeds(runs), evidence={"symphony": ev})
    console.print_seeds(summary)
    out = capsys.readouterr().out
    lines = [ln.strip() for ln in out.splitlines()]
    i = next(i for i, ln in enumerate(lines) if ln.startswith("Symphony vs baseline"))
    assert lines[i + 1].startswith("JCT (primary)") and lines[i + 1].endswith(
        "faster in 0 of 10: slower")
    assert "[-10.0%, -10.0%] (95 %, 10 pairs)" in lines[i + 2]
    assert lines[i + 3].startswith("max step overlap") and "fewer in 10 of 10: fewer" in lines[i + 3]


def test_three_seeds_are_never_called_a_result():
    runs = _runs(3, [1.0] * 3, [0.8] * 3, [4.0] * 3, [3.0] * 3)
    ev = evidence(runs)["symphony"]["cct"]
    assert ev.median_ci is None and ev.verdict == "undecided" and ev.lower == 3


@pytest.mark.parametrize("spec,want", [
    ({"jobs": [{"passes": 1}]}, "cct"), ({"jobs": [{"passes": 4}]}, "jct"),
    ({"jobs": [{"workload": "vgg16"}]}, "jct"),
    ({"jobs": [{"passes": 4}], "run": {"primary": "cct"}}, "cct")])
def test_the_primary_metric_follows_the_spec(spec, want):
    assert primary_metric(spec) == want
