"""Shared helpers for the DCQCN tests: the paper's parameters and rate assertions."""

import pytest

from hosts.cc.dcqcn import DcqcnParams


P = DcqcnParams(line_rate_bps=100.0, min_rate_bps=1.0, g=0.5,
                alpha_timer_s=1.0, timer_s=1.0, byte_counter_bytes=1000,
                fast_recovery_steps=2, rai_bps=10.0, rhai_bps=20.0, cnp_interval_s=1.0)


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def assert_rates(rp, target, rate):
    assert rp.target_bps == approx(target), f"Rt {rp.target_bps} != {target}"
    assert rp.rate_bps == approx(rate), f"Rc {rp.rate_bps} != {rate}"
