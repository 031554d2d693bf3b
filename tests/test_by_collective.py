"""emulator.analysis.by_collective: a program's collectives split by size, and the time
some all-reduce is under way, on a summary small enough to check by hand."""

import pytest

from emulator.analysis.by_collective import compare, large_passes, union_s


def test_large_passes_are_the_fewest_largest_that_carry_half_the_bytes():
    assert large_passes({0: 10, 1: 70, 2: 20}) == {1}
    assert large_passes({0: 30, 1: 30, 2: 40}) == {2, 0}
    assert large_passes({0: 5}) == {0}


def test_union_counts_overlapping_collectives_once():
    assert union_s([(0, 2), (1, 3), (5, 6)]) == pytest.approx(4.0)
    assert union_s([(0, 4), (1, 2)]) == pytest.approx(4.0)
    assert union_s([]) == 0.0


def _run(scheme, seed, ccts, jct, starts=None):
    starts = starts or [0.0] * len(ccts)
    return {"scheme": scheme, "seed": seed, "jobs": [{"job": 1, "jct_s": jct, "collectives": [
        {"pass": p, "nbytes": n, "start_s": s, "cct_s": c}
        for p, ((n, c), s) in enumerate(zip(ccts, starts))]}]}


def test_a_scheme_that_shortens_small_collectives_and_lengthens_the_large_one():
    # three small collectives and one that carries most bytes, run one after another:
    # the scheme halves the small ones and lengthens the large one by 20 %
    runs, excluded = [], [{"scheme": "symphony", "seed": 9}]
    for seed in range(1, 8):
        base = [(10, 1.0), (10, 1.0), (10, 1.0), (100, 10.0)]
        sym = [(10, 0.5), (10, 0.5), (10, 0.5), (100, 12.0)]
        for scheme, c in (("baseline", base), ("symphony", sym)):
            t, starts = 0.0, []
            for _, cct in c:
                starts.append(t)
                t += cct
            runs.append(_run(scheme, seed, c, t, starts))
    runs.append(_run("symphony", 9, [(10, 99.0)], 99.0))        # unfaithful: left out
    res = compare({"runs": runs, "excluded": excluded})
    assert res["seeds"] == list(range(1, 8))
    assert res["median_cct"].median == pytest.approx(-0.5)
    assert res["large_cct"].median == pytest.approx(0.2)
    assert res["small_cct"].median == pytest.approx(-0.5)
    assert res["jct"].median == pytest.approx(13.5 / 13 - 1)
    assert res["sync"].median == pytest.approx(13.5 / 13 - 1)
    assert res["large_share"] == pytest.approx(10 / 13)
