"""Paired comparisons as evidence: how two schemes (or two rules) differ over the same seeds,
with intervals a reviewer can check.

For a metric measured under A and B on the same n seeds (a pair per seed: the same ECMP
draw, the same inputs), the per-seed differences are ``b / a - 1`` (negative: B lower).
Over them:

* the **median** with its **distribution-free 95 % interval** from order statistics (the
  interval the sign test gives: [d_(k), d_(n-k+1)] with k the largest for which
  2 P(Binomial(n, 1/2) <= k-1) <= 0.05; it needs n >= 6, below that there is none);
* the **mean** with a paired **bootstrap** 95 % interval (percentile, 9999 resamples of
  the differences, a fixed generator so the same data give the same interval);
* the **Wilcoxon signed-rank** p (two-sided; scipy), and the **sign test**: B lower in
  k of n pairs, with its binomial p;
* one word at 95 %: **lower** when the median's interval lies below 0, **higher** above,
  else **undecided** (always undecided below 6 pairs).

Why order statistics rather than a t interval: with ±10-20 % same-seed noise and a few
pairs the differences are not normal (they are ratios, often skewed), and a
distribution-free interval is honest at any shape (Le Boudec, "Performance Evaluation
of Computer and Communication Systems", §2.2; TriScale, Jacob et al. 2021; Hoefler &
Belli 2015). scipy does the arithmetic; nothing here is written by hand that it has.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20261202


def median_interval(values, confidence: float = CONFIDENCE):
    """The distribution-free interval of the median of ``values``: (lo, hi, achieved
    coverage), or None when there are too few values for ``confidence``."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    alpha = 1 - confidence
    k = 0
    while k + 1 <= n // 2 and 2 * sps.binom.cdf(k, n, 0.5) <= alpha:
        k += 1            # [x_(k), x_(n-k+1)] (1-based) still covers with >= confidence
    if k == 0:
        return None
    return float(x[k - 1]), float(x[n - k]), float(1 - 2 * sps.binom.cdf(k - 1, n, 0.5))


@dataclass(frozen=True)
class Paired:
    """B against A over ``n`` paired seeds (see the module's docstring)."""
    n: int
    diffs: tuple              # b / a - 1 per pair, in the order given
    median: float
    median_ci: tuple | None   # (lo, hi) at 95 %, distribution-free; None below 6 pairs
    coverage: float | None    # the interval's achieved coverage (>= 0.95)
    mean: float
    mean_ci: tuple | None     # paired bootstrap 95 %; None below 2 pairs
    wilcoxon_p: float | None  # None when every difference is 0 or below 2 pairs
    lower: int                # pairs in which B is lower than A
    sign_p: float             # two-sided binomial p of ``lower`` of the non-tied pairs
    verdict: str              # lower | higher | undecided
    confidence: float = CONFIDENCE   # of both intervals and the verdict

    @classmethod
    def from_dict(cls, d: dict) -> "Paired":
        """The inverse of :meth:`as_dict` (JSON's lists back into tuples)."""
        return cls(**{f: tuple(d[f]) if isinstance(d[f], list) else d[f]
                      for f in cls.__dataclass_fields__ if f in d})

    def as_dict(self) -> dict:
        return {"n": self.n, "confidence": self.confidence,
                "median": self.median, "median_ci": self.median_ci,
                "coverage": self.coverage, "mean": self.mean, "mean_ci": self.mean_ci,
                "wilcoxon_p": self.wilcoxon_p, "lower": self.lower, "sign_p": self.sign_p,
                "verdict": self.verdict, "diffs": list(self.diffs)}

    def text(self, lower: str = "lower", higher: str = "higher") -> str:
        """One line: ``-12.3 % [-20.1, -4.0] (95 %, 10 pairs), mean -11.0 % [-17, -5],
        Wilcoxon p = 0.004, lower in 9 of 10: lower``, with the words given for
        lower/higher (``faster``/``slower`` for times)."""
        word = {"lower": lower, "higher": higher}.get(self.verdict, "undecided")
        level = f"{self.confidence * 100:.4g} %"
        if self.median_ci is None:
            ci = (f" (too few seeds for a {level} interval: {self.n} pairs, "
                  f"{min_pairs(self.confidence)} needed)")
        else:
            ci = (f" [{self.median_ci[0]:+.1%}, {self.median_ci[1]:+.1%}] "
                  f"({level}, {self.n} pairs)")
        mean = (f", mean {self.mean:+.1%} [{self.mean_ci[0]:+.1%}, {self.mean_ci[1]:+.1%}]"
                if self.mean_ci else "")
        p = f", Wilcoxon p = {self.wilcoxon_p:.2g}" if self.wilcoxon_p is not None else ""
        return (f"{self.median:+.1%}{ci}{mean}{p}, {lower} in {self.lower} of {self.n}: "
                f"{word}")


def min_pairs(confidence: float = CONFIDENCE) -> int:
    """The fewest pairs with a distribution-free interval of the median at ``confidence``
    (6 at 95 %)."""
    n = 1
    while 2 * 0.5 ** n > 1 - confidence:
        n += 1
    return n


def paired(a, b, confidence: float = CONFIDENCE) -> Paired:
    """B against A, pair by pair (``a[i]`` and ``b[i]`` from the same seed; both > 0), with
    intervals and verdict at ``confidence``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"paired: need two equally long, non-empty lists, got {len(a)} "
                         f"and {len(b)}")
    if not (np.all(a > 0) and np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("paired: values must be finite and A's > 0 (times, sizes)")
    d = b / a - 1
    n = len(d)
    mci = median_interval(d, confidence)
    lower, higher = int(np.sum(d < 0)), int(np.sum(d > 0))
    sign_p = float(sps.binomtest(lower, lower + higher, 0.5).pvalue) if lower + higher else 1.0
    wil = None
    if n >= 2 and np.any(d != 0):
        wil = float(sps.wilcoxon(d).pvalue)
    mean_ci = None
    if n >= 2:
        if np.all(d == d[0]):
            mean_ci = (float(d[0]), float(d[0]))
        else:
            res = sps.bootstrap((d,), np.mean, confidence_level=confidence,
                                n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                                rng=np.random.default_rng(BOOTSTRAP_SEED))
            mean_ci = (float(res.confidence_interval.low), float(res.confidence_interval.high))
    verdict = "undecided"
    if mci is not None:
        if mci[1] < 0:
            verdict = "lower"
        elif mci[0] > 0:
            verdict = "higher"
    return Paired(n, tuple(float(x) for x in d), float(np.median(d)),
                  (mci[0], mci[1]) if mci else None, mci[2] if mci else None,
                  float(np.mean(d)), mean_ci, wil, lower, sign_p, verdict, confidence)


def correlation(a, b) -> float | None:
    """Spearman's rank correlation of the paired values: pairing by seed narrows an
    interval only when it is positive (common random numbers)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.all(a == a[0]) or np.all(b == b[0]):
        return None
    r = float(sps.spearmanr(a, b).statistic)
    return None if math.isnan(r) else r


def sequential_plan(max_pairs: int, batch: int, alpha: float = 1 - CONFIDENCE):
    """A fixed plan for adding seeds until a comparison is decided: looks after every
    ``batch`` pairs up to ``max_pairs``, each judged at one confidence such that a wrong
    verdict at *any* look has probability at most ``alpha`` (Bonferroni over the looks
    that can decide at all: a look with fewer pairs than that confidence's interval needs
    spends nothing). Returns (the pair counts of the deciding looks, their confidence).
    Conservative and simple to state; no assumption on the data's shape."""
    if batch < 1 or max_pairs < 1:
        raise ValueError(f"batch and max_pairs must be >= 1, got {batch}, {max_pairs}")
    counts = list(range(batch, max_pairs + 1, batch))
    if not counts or counts[-1] != max_pairs:
        counts.append(max_pairs)
    looks = counts
    for _ in range(64):                       # a fixed point: fewer looks, higher level
        confidence = 1 - alpha / len(looks)
        m = min_pairs(confidence)
        deciding = [n for n in looks if n >= m] or [looks[-1]]   # only ever fewer
        if deciding == looks:
            break
        looks = deciding
    return looks, 1 - alpha / len(looks)
