"""Tests for the congestion-control seam (hosts/cc): the registry, CcConfig across the
runner -> host JSON boundary, the line-rate ablation, scaling, and the NIC picking its
per-flow controller from the config. The DCQCN rate machines are tested in
test_dcqcn_paper.py, test_dcqcn_mlx.py and test_dcqcn_params.py."""

import json
import os
from dataclasses import FrozenInstanceError, fields

import pytest

from hosts.cc import (ALGORITHMS, Algorithm, CcConfig, CongestionControl, DcqcnMlx, DcqcnPaper,
                      DcqcnParams, LineRate, LineRateParams)
from hosts.config import TransportParams
from hosts.nic import Nic
from runtime.scale import Scale

D1000 = Scale(1000)
TRANSPORT = TransportParams(rto_s=1.0, nak_timeout_s=0.2)
EXPECTED_CLASS = {"dcqcn_paper": DcqcnPaper, "dcqcn_mlx": DcqcnMlx, "none": LineRate}


# --- registry ------------------------------------------------------------------------

def test_registry_names_the_three_algorithms():
    assert set(ALGORITHMS) == set(EXPECTED_CLASS)


@pytest.mark.parametrize("make", [
    lambda: CcConfig("timely", DcqcnParams()),
    lambda: CcConfig.default("timely", 10e9, D1000),
    lambda: CcConfig.from_dict({"name": "timely", "params": {}}),
])
def test_unknown_name_raises_naming_it_and_the_allowed_ones(make):
    with pytest.raises(ValueError, match=r"'timely'.*allowed: dcqcn_paper, dcqcn_mlx, none"):
        make()


@pytest.mark.parametrize("name", sorted(EXPECTED_CLASS))
def test_each_entry_builds_a_flow_controller_at_line_rate(name):
    cfg = CcConfig.default(name, 10e9, D1000)
    assert isinstance(cfg.params, ALGORITHMS[name].params)
    c = cfg.controller(0.0)
    assert type(c) is EXPECTED_CLASS[name]
    assert isinstance(c, CongestionControl)
    assert c.rate_bps == pytest.approx(1e7)                 # 10 Gb/s / 1000
    assert (c.cnps, c.cuts) == (0, 0)
    assert cfg.controller(0.0) is not c                     # one per flow


def test_params_of_another_algorithm_are_rejected():
    with pytest.raises(TypeError, match="'none' takes LineRateParams, got DcqcnParams"):
        CcConfig("none", DcqcnParams())


def test_config_is_frozen():
    cfg = CcConfig.default("none", 10e9, D1000)
    with pytest.raises(FrozenInstanceError):
        cfg.name = "dcqcn_paper"


def test_a_new_algorithm_is_one_registry_entry(monkeypatch):
    class HalfRate(LineRate):
        def __init__(self, params, now_s=0.0):
            super().__init__(params, now_s)
            self.rate_bps = params.line_rate_bps / 2

    monkeypatch.setitem(ALGORITHMS, "half", Algorithm(LineRateParams, HalfRate, LineRate.defaults))
    cfg = CcConfig.from_dict(json.loads(json.dumps(CcConfig.default("half", 8e9, D1000).to_dict())))
    c = cfg.controller(0.0)
    assert type(c) is HalfRate and c.rate_bps == pytest.approx(4e6)


# --- CcConfig as JSON ----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(EXPECTED_CLASS))
def test_config_round_trips_through_json(name):
    cfg = CcConfig.default(name, 25e9, Scale(2000))
    back = CcConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert back == cfg
    assert type(back.params) is type(cfg.params)


def test_dcqcn_paper_dict_shape():
    d = CcConfig.default("dcqcn_paper", 10e9, D1000).to_dict()
    assert set(d) == {"name", "params"}
    assert d["name"] == "dcqcn_paper"
    assert set(d["params"]) == {f.name for f in fields(DcqcnParams)}
    assert d["params"]["line_rate_bps"] == pytest.approx(1e7)
    assert d["params"]["cnp_interval_s"] == pytest.approx(0.05)
    assert d["params"]["byte_counter_bytes"] == 10 * 1024 * 1024


def test_from_dict_rejects_unknown_params_such_as_the_old_variant_field():
    d = CcConfig.default("dcqcn_mlx", 10e9, D1000).to_dict()
    d["params"]["variant"] = "mlx"
    with pytest.raises(ValueError, match="'dcqcn_mlx': unknown params variant"):
        CcConfig.from_dict(d)


def test_from_dict_checks_params_values():
    d = CcConfig.default("none", 10e9, D1000).to_dict()
    d["params"]["cnp_interval_s"] = 0.0
    with pytest.raises(ValueError, match="cnp_interval_s"):
        CcConfig.from_dict(d)


# --- LineRate ------------------------------------------------------------------------

def test_line_rate_keeps_line_rate_through_cnps_and_counts_them():
    c = LineRate(LineRateParams(line_rate_bps=100.0, cnp_interval_s=1.0), 0.0)
    for k in range(50):
        c.on_cnp(0.1 * k)
        c.on_sent(4096, 0.1 * k + 0.05)
        c.advance(0.1 * k + 0.07)
        assert c.rate_bps == 100.0
    assert (c.cnps, c.cuts) == (50, 0)


def test_line_rate_defaults_keep_dcqcns_cnp_interval():
    """So the receiver's CNP stream, and the CNP counts, compare with a DCQCN run."""
    assert LineRate.defaults(10e9).cnp_interval_s == DcqcnPaper.defaults(10e9).cnp_interval_s


@pytest.mark.parametrize("value", [0.0, -1.0])
@pytest.mark.parametrize("field", ["line_rate_bps", "cnp_interval_s"])
def test_line_rate_params_reject_non_positive_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        LineRateParams(**{field: value})


# --- scaling -------------------------------------------------------------------------

@pytest.mark.parametrize("real", [DcqcnPaper.defaults(10e9), DcqcnMlx.defaults(25e9),
                                  LineRate.defaults(40e9)], ids=["paper", "mlx", "none"])
@pytest.mark.parametrize("dilation", [1000.0, 250.0])
def test_scaled_divides_rates_by_d_multiplies_times_by_d_keeps_the_rest(real, dilation):
    """Units are in the field names: *_bps is a rate, *_s a time, anything else as is."""
    p = real.scaled(Scale(dilation))
    for f in fields(real):
        r, e = getattr(real, f.name), getattr(p, f.name)
        if f.name.endswith("_bps"):
            assert e == pytest.approx(r / dilation), f.name
        elif f.name.endswith("_s"):
            assert e == pytest.approx(r * dilation), f.name
        else:
            assert e == r, f.name


# --- the NIC -------------------------------------------------------------------------

# A loopback address of this process's own (any 127/8 address binds without root), so
# parallel test runs do not fight over port 4791.
IP = f"127.83.{os.getpid() >> 8 & 255}.{os.getpid() & 255 or 1}"


@pytest.mark.parametrize("name", sorted(EXPECTED_CLASS))
def test_nic_builds_each_send_flows_controller_from_the_config(name):
    cfg = CcConfig.default(name, 10e9, D1000)
    records = []
    tele = type("Tele", (), {"write": staticmethod(records.append)})
    nic = Nic(IP, 1e7, cfg, TRANSPORT, telemetry=tele)
    try:
        assert nic.np.interval_s == pytest.approx(0.05)     # 50 µs x 1000, every algorithm
        flows = [nic.send("127.0.0.1", 1, 0, step, bytes(10_000)) for step in (0, 1)]
        assert all(type(f.cc) is EXPECTED_CLASS[name] for f in flows)
        assert flows[0].cc is not flows[1].cc
        assert nic.open_flows()["sending"][0]["rate_bps"] == pytest.approx(1e7)
        from hosts.flows import send_record
        record = send_record(flows[0], IP)
        assert {"cnps", "cuts", "final_rate_bps"} <= {f.name for f in fields(record)}
    finally:
        nic.close()


def test_nic_rejects_a_config_for_another_line_rate():
    with pytest.raises(ValueError, match="dcqcn_mlx line rate"):
        Nic(IP, 2e7, CcConfig.default("dcqcn_mlx", 10e9, D1000), TRANSPORT)
