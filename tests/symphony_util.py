"""Shared helpers for the SymphonyTracker tests: parameters, a tracker, packets at given times."""

from switch_agent.config import SymphonyParams
from switch_agent.symphony import SymphonyTracker


K, TAU, T_WIN_S, N_WARMUP, N_SAMPLE = 0.01, 0.25, 0.1, 2, 8
T0 = 1.0          # time of each test's first packet, unless said otherwise
JOB = 1


def params(**changes) -> SymphonyParams:
    return SymphonyParams(**{"k": K, "tau": TAU, "t_win_s": T_WIN_S, "n_warmup": N_WARMUP,
                             "n_sample": N_SAMPLE, **changes})


def make_tracker(records=None):
    on_window = records.append if records is not None else None
    return SymphonyTracker(params(), on_window=on_window)


def at(window: int, frac: float = 0.5) -> float:
    """A time inside window ``window`` of a job whose first packet came at T0."""
    return T0 + (window + frac) * T_WIN_S


def send(t, step, psns, *, now_s, job=JOB, last=False):
    """Observe packets of one step with the given PSNs; returns their P values."""
    return [t.observe(job, step, psn, last, now_s) for psn in psns]


def fill_window(t, window, *, n_lag, n_op, lag_step=5, op_step=6, job=JOB):
    """``n_lag`` packets of ``lag_step`` then ``n_op`` of ``op_step`` (none LAST) in a window.

    Window 0's packets start at T0 (the first packet anchors the job's grid there).
    """
    send(t, lag_step, range(n_lag), now_s=T0 if window == 0 else at(window), job=job)
    send(t, op_step, range(n_op), now_s=at(window, 0.6), job=job)
