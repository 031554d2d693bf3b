"""emulator.analysis.stats: paired comparisons with intervals, on numbers checked by hand."""

import pytest

from emulator.analysis.stats import correlation, median_interval, paired


def test_the_median_interval_is_the_order_statistics_the_sign_test_gives():
    """n = 10: [x_(2), x_(9)], coverage 1 - 2 (1 + 10) / 1024; n = 20: [x_(6), x_(15)]."""
    lo, hi, cov = median_interval(range(1, 11))
    assert (lo, hi) == (2, 9) and cov == pytest.approx(1 - 22 / 1024)
    lo, hi, cov = median_interval(range(1, 21))
    assert (lo, hi) == (6, 15) and cov == pytest.approx(0.9586, abs=1e-4)


def test_six_pairs_are_the_fewest_with_a_95_percent_interval():
    assert median_interval([1, 2, 3, 4, 5]) is None
    lo, hi, cov = median_interval([6, 1, 5, 2, 4, 3])
    assert (lo, hi) == (1, 6) and cov == pytest.approx(1 - 2 / 64)


def test_a_clear_gain_over_ten_seeds_is_lower_with_every_number_a_reader_checks():
    a = [10.0] * 10
    b = [8.0, 8.5, 9.0, 7.5, 8.2, 9.5, 8.8, 7.9, 8.1, 10.5]      # one pair worse
    p = paired(a, b)
    assert p.n == 10 and p.lower == 9
    assert p.median == pytest.approx(-0.1650)
    assert p.median_ci == pytest.approx((-0.21, -0.05))         # d_(2), d_(9)
    assert p.verdict == "lower"
    assert p.sign_p == pytest.approx(22 / 1024)
    assert p.wilcoxon_p < 0.01
    assert p.mean_ci[0] < p.mean < p.mean_ci[1] < 0
    assert p.text("faster", "slower").endswith("faster in 9 of 10: faster")


def test_three_seeds_never_decide_and_say_so():
    p = paired([10, 10, 10], [7, 8, 9])
    assert p.median_ci is None and p.verdict == "undecided"
    assert "too few seeds for a 95 % interval: 3 pairs, 6 needed" in p.text()
    assert p.sign_p == pytest.approx(0.25)                       # 3 of 3 at best


def test_a_split_result_is_undecided():
    p = paired([10] * 8, [9, 11, 9, 11, 9, 11, 9, 11])
    assert p.verdict == "undecided" and p.median_ci[0] < 0 < p.median_ci[1]


def test_the_same_data_give_the_same_bootstrap_interval():
    a, b = [5, 6, 7, 8, 9, 10], [5.5, 5.9, 7.7, 8.4, 9.1, 12]
    assert paired(a, b).mean_ci == paired(a, b).mean_ci


def test_bad_input_is_refused_naming_the_problem():
    with pytest.raises(ValueError, match="equally long"):
        paired([1, 2], [1])
    with pytest.raises(ValueError, match="finite and A's > 0"):
        paired([0, 1], [1, 1])


def test_correlation_says_whether_pairing_helps():
    assert correlation([1, 2, 3, 4], [2, 4, 6, 8]) == pytest.approx(1.0)
    assert correlation([1, 2, 3, 4], [8, 6, 4, 2]) == pytest.approx(-1.0)
    assert correlation([1, 1, 1], [1, 2, 3]) is None


def test_a_sequential_plan_spends_its_error_only_on_looks_that_can_decide():
    from emulator.analysis.stats import min_pairs, sequential_plan
    assert min_pairs(0.95) == 6 and min_pairs(0.99) == 8
    looks, conf = sequential_plan(30, 5)
    # 5 pairs can never decide; at 5 looks (10..30) each is judged at 99 %, which needs 8
    assert looks == [10, 15, 20, 25, 30] and conf == pytest.approx(0.99)
    looks, conf = sequential_plan(6, 6)
    assert looks == [6] and conf == pytest.approx(0.95)
    with pytest.raises(ValueError, match="must be >= 1"):
        sequential_plan(10, 0)


def test_two_looks_of_six_judge_only_the_second_at_95_percent():
    from emulator.analysis.stats import sequential_plan
    assert sequential_plan(12, 6) == ([12], pytest.approx(0.95))


def test_six_positive_differences_are_slower_at_96_9_percent():
    p = paired([10.0] * 6, [10.5, 11.0, 10.2, 10.9, 10.1, 10.3])
    assert p.median_ci == pytest.approx((0.01, 0.1)) and p.verdict == "higher"
    assert p.coverage == pytest.approx(1 - 2 / 64)
    assert "slower in" not in p.text("faster", "slower") and p.text(
        "faster", "slower").endswith("faster in 0 of 6: slower")


def test_the_tests_agree_with_scipy_on_random_data():
    import numpy as np
    from scipy import stats as sps
    rng = np.random.default_rng(7)
    for n in (8, 15, 40):
        a = rng.uniform(1, 2, n)
        b = a * rng.normal(1.0, 0.1, n)
        p = paired(a, b)
        d = b / a - 1
        assert p.wilcoxon_p == pytest.approx(sps.wilcoxon(d).pvalue)
        lo, hi, cov = median_interval(d)
        k = int(np.searchsorted(np.sort(d), lo)) + 1            # its rank, 1-based
        assert cov == pytest.approx(1 - 2 * sps.binom.cdf(k - 1, n, 0.5))
        assert cov >= 0.95 and 1 - 2 * sps.binom.cdf(k, n, 0.5) < 0.95   # the tightest
