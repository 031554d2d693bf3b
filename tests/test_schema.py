"""emulator/spec/schema.py: each spec key's default, range and unit is declared once, and what
repeats it is checked against that one declaration: the complete spec of docs/spec.md
(whose one-table sections show the defaults), and the process configs whose parameters a
spec key sets (a spec that says nothing runs their defaults; where both check a value,
they take and refuse the same values). Pure, no root."""

import dataclasses
import os
import re

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10
    import tomli as tomllib

import pytest

from emulator.spec import jobstream, schema
from emulator.plan import compile as compile_plan
from emulator.plan.messages import Message
from emulator.spec.schema import SymphonySpec
from emulator.spec import validate
from hosts.cc import CcConfig
from hosts.config import MessageConfig, TransportParams
from runtime.scale import (DEFAULT_DILATION, MAX_DILATION, MIN_DILATION, PAPER_LINK_RATE_BPS,
                           Scale)
from switch_agent.config import (MIN_RATE_BPS, MIN_T_WIN_S, PortParams, RedParams,
                                 SymphonyParams, default_agent)
from topologies import wiring

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# fields that are no key of the file (`servers = [...]` sets server_targets)
NOT_KEYS = {"topology": {"server_targets"}}


def reference() -> dict:
    """The complete spec of docs/spec.md, as TOML."""
    with open(os.path.join(MAIN, "docs", "spec.md"), encoding="utf-8") as f:
        text = f.read()
    (block,) = re.findall(r"^```toml\n(.*?)^```", text, re.S | re.M)
    return tomllib.loads(block)


def defaults(cls) -> dict:
    out = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def test_the_reference_shows_every_key_of_every_section_with_its_default():
    ref = reference()
    for name, cls in schema.SECTIONS.items():
        want = {k: v for k, v in defaults(cls).items() if k not in NOT_KEYS.get(name, ())}
        got = {k: tuple(v) if isinstance(v, list) else v for k, v in ref[name].items()}
        assert set(got) == set(want), f"[{name}]: keys differ: {set(got) ^ set(want)}"
        for k, v in want.items():
            assert got[k] == v, f"docs/spec.md: {name}.{k} = {got[k]!r}, the default: {v!r}"


def test_the_reference_keys_of_jobs_messages_and_perturbations_exist():
    ref = reference()
    for table, cls in (("jobs", schema.JobSpec), ("messages", schema.MessageSpec),
                       ("perturbations", schema.PerturbationSpec)):
        fields = {f.name for f in dataclasses.fields(cls)}
        for entry in ref[table]:
            assert set(entry) <= fields, f"[[{table}]]: no such keys {set(entry) - fields}"
    assert set(ref["job_stream"]) <= jobstream.KEYS
    assert set(ref) <= set(schema.TOP_KEYS)


# --- defaults: a spec that says nothing runs the processes' own defaults ------------------

MINIMAL = {"name": "defaults", "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 4096}]}


def test_a_spec_that_says_nothing_gives_every_agent_the_agents_own_defaults():
    plan = compile_plan(validate(MINIMAL, "defaults.toml"), "symphony", seed=1)
    for name, agent in plan.agents.items():
        own = default_agent(name)                    # no spec: mn --custom's agents
        assert agent.red == own.red
        assert agent.symphony == own.symphony        # T_WIN_S, dilated by the default scale
        assert agent.trace_arrivals == own.trace_arrivals


def test_a_spec_that_says_nothing_gives_every_nic_its_own_defaults():
    plan = compile_plan(validate(MINIMAL, "defaults.toml"), "baseline", seed=1)
    real_rate = PAPER_LINK_RATE_BPS
    for host in plan.hosts.values():
        assert host.cc == CcConfig.default("dcqcn_paper", real_rate, Scale())
        own = TransportParams(rto_s=host.transport.rto_s,                  # the spec's own
                              nak_timeout_s=host.transport.nak_timeout_s, sport_seed=1)
        assert host.transport == own
    assert plan.link_rate_bps == Scale().rate_bps(real_rate)
    assert plan.fabric.buffer_bytes == wiring.DEFAULT_BUFFER_BYTES
    assert plan.scale == Scale()


def test_a_message_that_says_nothing_is_the_hosts_default_message():
    spec = validate({"name": "m", "topology": {"kind": "dumbbell"},
                     "messages": [{"src": "h0", "dst": "h1", "bytes": 4096}]}, "m.toml")
    (m,) = spec.messages
    own, plain = MessageConfig(peer="", bytes=4096), Message("h0", "h1", 4096)
    assert (m.job, m.channel, m.step) == (own.job, own.channel, own.step)
    assert (plain.job, plain.channel, plain.step, plain.start_s) == \
        (own.job, own.channel, own.step, own.start_s)


# --- ranges: where a spec key and a process config check one value, the same bounds -------

def key_range(section, key):
    return schema.SECTIONS[section].__dataclass_fields__[key].metadata["range"]


def accepts(build) -> bool:
    try:
        build()
    except ValueError:                      # ConfigError is one
        return False
    return True


def assert_same_edges(section, key, build, integer=False, ends=("lo", "hi")):
    """The process config ``build(x)`` takes x exactly where the spec key's Range does (at
    the default dilation): at each of ``ends``, and not a step beyond it."""
    lo, open_lo, hi = key_range(section, key).bounds(DEFAULT_DILATION)
    assert not open_lo
    for end, x, sign in (("lo", lo, -1), ("hi", hi, 1)):
        if end in ends:
            step = 1 if integer else max(abs(x), 1.0) * 1e-9
            assert accepts(lambda: build(x)), f"{section}.{key}: the config refuses {x}"
            assert not accepts(lambda: build(x + sign * step)), \
                f"{section}.{key}: the config takes {x + sign * step}, the spec does not"


def test_red_thresholds_have_the_agents_bounds():
    assert_same_edges("switch", "kmin_bytes", lambda x: RedParams(kmin_bytes=x), True, ("lo",))
    assert_same_edges("switch", "kmax_bytes", lambda x: RedParams(kmin_bytes=0, kmax_bytes=x),
                      True, ("hi",))              # kmax > kmin: checked with both, by the agent


def test_symphony_gain_and_window_counts_have_the_agents_bounds():
    assert_same_edges("symphony", "k", lambda x: SymphonyParams(t_win_s=1.0, k=x))
    for key in ("n_warmup", "n_sample"):
        assert_same_edges("symphony", key, lambda x: SymphonyParams(t_win_s=1.0, **{key: x}),
                          integer=True)


def test_the_window_is_never_shorter_than_the_agent_takes_at_any_dilation():
    rng = key_range("symphony", "t_win_us")
    for d in (MIN_DILATION, 1.0, 10.0, DEFAULT_DILATION, MAX_DILATION):
        lo, _, _ = rng.bounds(d)                     # (to the last bit of the division)
        t_win_s = SymphonySpec(t_win_us=lo * (1 + 1e-12)).t_win_s(Scale(d))
        assert accepts(lambda: SymphonyParams(t_win_s=t_win_s)), (d, lo)
    lo, open_lo, _ = rng.bounds(1.0)                 # undilated: the agent's floor binds
    assert (lo, open_lo) == (pytest.approx(MIN_T_WIN_S * 1e6), False)
    assert "at least 1e-06 s" in rng.allowed(0.5, 1.0)


def test_the_link_rate_is_a_rate_an_agents_port_takes_at_any_dilation():
    rng = key_range("topology", "link_rate_gbps")
    for d in (MIN_DILATION, 1.0, DEFAULT_DILATION, MAX_DILATION):
        lo, _, hi = rng.bounds(d)
        for gbps in (lo, hi):
            rate = Scale(d).rate_bps(gbps * 1e9)
            assert accepts(lambda: PortParams(rate_bps=rate, buffer_bytes=1)), (d, gbps)
    lo, _, _ = rng.bounds(MAX_DILATION)              # 1 kb/s emulated at D = 1e7: 10 Gb/s
    assert lo == pytest.approx(MIN_RATE_BPS * MAX_DILATION / 1e9)


def test_ack_coalescing_has_the_nics_bounds():
    assert_same_edges("transport", "ack_every",
                      lambda x: TransportParams(rto_s=1.0, nak_timeout_s=1.0, ack_every=x),
                      integer=True)


def test_the_dilation_has_the_scales_bounds():
    assert_same_edges("scale", "dilation", Scale)


def test_oversubscription_has_the_wirings_bounds():
    assert_same_edges("topology", "oversubscription",
                      lambda x: wiring.check_pods(2, 1, 1, 1, "ecmp", x))
