"""The numbers the split's verdicts rest on, pinned by hand (emulator.analysis.split,
report.compare_split): a changed formula for any factor fails here."""

import pytest

from emulator.analysis import report, split
from emulator.analysis.summary import CollectiveSplit
from tests import summary_util as su


def test_each_collectives_factors_by_hand():
    # bound 1.0 s, the model on the run's paths 2.5 s, ideal-priority 2.0 s, emulated 3.0 s
    f = split._factors(1.0, 2.5, 2.0, 3.0)
    assert f["routing_x"] == pytest.approx(2.5)           # fluid / bound
    assert f["transport_x"] == pytest.approx(1.2)         # emulated / fluid
    assert f["ideal_gain"] == pytest.approx(0.2)          # 1 - ideal / fluid
    assert f["routing_x"] * f["transport_x"] == pytest.approx(3.0)   # emulated / bound


def test_a_missing_time_leaves_its_factors_out_not_zero():
    f = split._factors(1.0, None, 2.0, 3.0)
    assert f == {"routing_x": None, "transport_x": None, "ideal_gain": None}


def _run(scheme, emulated, fluid=2.5, ideal=2.0, bound=1.0, seed=1):
    c = CollectiveSplit(pass_index=0, bound_s=bound, fluid_s=fluid, ideal_s=ideal,
                        emulated_s=emulated, **split._factors(bound, fluid, ideal, emulated))
    return su.run(scheme, seed, [su.job(jct_s=emulated)], split_jobs=[su.split_job(
        [c], fluid_jct_s=fluid, ideal_jct_s=ideal, emulated_jct_s=emulated)])


def test_symphonys_share_of_the_ideal_gain_by_hand():
    """Baseline 3.0 s, Symphony 2.8 s on paths where ideal-priority wins 20 % of the
    fluid time: Symphony's gain 1 - 2.8/3.0 = 6.67 % is a third of 20 %."""
    out = report.compare_split([_run("baseline", 3.0), _run("symphony", 2.8)])
    y = out["symphony"]
    assert y.gain_vs_baseline == pytest.approx(1 - 2.8 / 3.0)
    assert y.realised_share_of_ideal == pytest.approx((1 - 2.8 / 3.0) / 0.2)
    assert out["baseline"].transport_x == pytest.approx(1.2)
    assert out["symphony"].jct_emulated_s == pytest.approx(2.8)


def test_the_share_per_seed_and_its_distribution_free_interval_by_hand():
    """Six seeds, baseline 3.0 s, ideal-priority gain 20 % on each, Symphony 2.94, 2.88,
    2.82, 2.76, 2.70, 3.06 s: shares 10, 20, 30, 40, 50, -10 %; with six pairs the 95 %
    interval of the median is [smallest, largest] (96.9 %)."""
    sym = [2.94, 2.88, 2.82, 2.76, 2.70, 3.06]
    runs = [r for k, t in enumerate(sym, 1)
            for r in (_run("baseline", 3.0, seed=k), _run("symphony", t, seed=k))]
    y = report.compare_split(runs)["symphony"]
    share = y.realised_share_by_seed
    assert [round(share[str(k)], 6) for k in range(1, 7)] == [0.1, 0.2, 0.3, 0.4, 0.5, -0.1]
    assert y.realised_share_ci == pytest.approx([-0.1, 0.5])
    five = report.compare_split(runs[:10])["symphony"]     # five seeds: no interval
    assert len(five.realised_share_by_seed) == 5 and five.realised_share_ci is None
    assert "realised_share_ci" not in five.to_json()          # left out of the file
