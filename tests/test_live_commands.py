"""The live CLI's arguments (emulator/cli/commands.py), without a fabric: a bad one is a
CommandError naming it and what is allowed; the README's examples parse and pass the
spec's checks. ``README_EXAMPLES`` is what tests/test_cli_emulation.py runs on a fabric."""

import os
import re

import pytest

from emulator.cli import commands
from emulator.cli.commands import CommandError
from emulator.spec import validate
from emulator.spec.check import SpecError
from emulator.spec.jobs import passes_error
from tests.toml_util import to_toml

MAIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A fabric with every name the README's examples use (h5, spine1): 2 leaves x 3 hosts.
FABRIC = {"name": "cli", "scale": {"dilation": 2000},
          "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3,
                       "link_rate_gbps": 10.0},
          "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 32768, "passes": 2}],
          "run": {"timeout_s": 120}}
SPEC_TEXT = to_toml(FABRIC)

# Each command row of the README's live-CLI table, and concrete commands that run it.
README_EXAMPLES = {
    "job [ID ...] [passes=N]": ["job 1 passes=1"],
    "jobs": ["jobs"],
    "wait [SECONDS]": ["wait 120"],
    "symphony on|off": ["symphony off", "symphony on"],
    "symphony set k=... tau=... t_win_s=... n_warmup=... n_sample=...":
        ["symphony set k=0.01 tau=0.25 t_win_s=0.2 n_warmup=2 n_sample=8"],
    "perturb imbalance switch=leaf0 toward=spine0 ratio=1.3":
        ["perturb imbalance switch=leaf0 toward=spine0 ratio=1.3"],
    "perturb link_down switch=leaf0 toward=spine1": ["perturb link_down switch=leaf0 toward=spine1"],
    "perturb loss switch=spine0 fraction=0.01": ["perturb loss switch=spine0 fraction=0.01"],
    "perturb background src=h0 dst=h5 rate_gbps=2": ["perturb background src=h0 dst=h5 rate_gbps=2"],
    "unperturb [all]": ["unperturb", "unperturb all"],
    "stats": ["stats"],
    "plot [N]": ["plot"],
}


def readme_live_section() -> str:
    """The live CLI's section of the guide (docs/usage.md, once the README's)."""
    with open(os.path.join(MAIN, "docs", "usage.md")) as f:
        text = f.read()
    start = text.index("### Interactively: `symphony-emu cli`")
    return text[start:text.index("\n### ", start + 1)]


def readme_table_commands() -> list[str]:
    return [m.replace("\\|", "|") for m in
            re.findall(r"^\| `(.+?)` \|", readme_live_section(), re.M)]


def readme_mininet_examples() -> list[str]:
    """The Mininet commands of "Everything of Mininet's CLI works too (...)"."""
    flat = " ".join(readme_live_section().split())
    inside = re.search(r"Everything of Mininet's CLI works too \((.+?)\)\.", flat).group(1)
    return re.findall(r"`([^`]+)`", inside)


def test_every_readme_row_of_the_live_cli_has_its_examples():
    rows = readme_table_commands()
    assert len(rows) == 12 and set(rows) == set(README_EXAMPLES)
    for row, cmds in README_EXAMPLES.items():
        if not re.search(r"\[|\.\.\.|\|", row):     # a concrete example: run as written
            assert cmds == [row]
    assert readme_mininet_examples() == ["h0 ping -c 3 h5", "leaf0 tc -s qdisc", "py net"]


@pytest.mark.parametrize("line", [c for cmds in README_EXAMPLES.values() for c in cmds
                                  if c.startswith("perturb ")])
def test_readme_perturbations_pass_the_spec_checks(line):
    kind, kv = commands.perturb_words(line.split()[1:])
    entry, _ = commands.live_perturbation(kind, kv)
    (p,) = validate(dict(FABRIC, perturbations=[entry]), "cli.toml").perturbations
    assert p.kind == kind


def test_a_live_link_down_goes_down_now():
    entry, open_ended = commands.live_perturbation("link_down",
                                                   {"switch": "leaf0", "toward": "spine1"})
    assert entry == {"kind": "link_down", "switch": "leaf0", "toward": "spine1", "at_ms": 0.0}
    assert not open_ended


def test_live_background_runs_until_undone_unless_given_a_duration():
    kv = {"src": "h0", "dst": "h5", "rate_gbps": 2}
    assert commands.live_perturbation("background", kv)[1] is True
    assert commands.live_perturbation("background", dict(kv, duration_ms=5.0))[1] is False


@pytest.mark.parametrize("words,message", [
    (["link_down", "switch=leaf0", "toward=spine1", "at_ms=5"],
     "at_ms: a live perturbation applies now and lasts until `unperturb`"),
    (["link_down", "switch=leaf0", "toward=spine1", "up_ms=9"], "up_ms: a live perturbation"),
    (["background", "src=h0", "dst=h5", "rate_gbps=2", "start_ms=3"], "start_ms: a live"),
    (["straggler", "host=h0", "delay_us=5"], "kind 'straggler': live perturbations are "
                                              "imbalance, link_down, loss, background"),
    (["loss", "switch=spine0", "ratio=2"],
     "ratio: not a key of the loss perturbation; its keys: fraction, switch"),
    (["link_down", "switch=leaf0", "towards=spine1"],
     "towards: not a key of the link_down perturbation; its keys: switch, toward"),
    ([], "usage: perturb KIND key=value ...; kinds: imbalance, link_down, loss, background"),
])
def test_bad_live_perturbations_are_named(words, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        commands.live_perturbation(*commands.perturb_words(words))


def test_a_bad_live_value_is_the_spec_error_of_its_key():
    entry, _ = commands.live_perturbation("loss", {"switch": "spine0", "fraction": 2})
    with pytest.raises(SpecError, match=r"perturbations\[0\]\.fraction = 2\.0: must be in"):
        validate(dict(FABRIC, perturbations=[entry]), "cli.toml")


# --- key=value words -------------------------------------------------------------------

def test_values_are_read_as_toml_and_bare_words_as_strings():
    assert commands.parse_kv(["ratio=1.3", "switch=leaf0", "n=8", "on=true", "xs=[1, 2]"]) == \
        {"ratio": 1.3, "switch": "leaf0", "n": 8, "on": True, "xs": [1, 2]}


@pytest.mark.parametrize("words,message", [
    (["ratio"], "'ratio': expected key=value"),
    (["=5"], "'=5': no key before '='"),
    (["passes="], "'passes=': no value after '=' (e.g. passes=1)"),
    (["k=1", "k=2"], "k given twice"),
    (["k=" + "[" * 3000 + "]" * 3000], "k: nested too deeply for the TOML reader"),
    (["k=" + "9" * 5000], "k: not a usable TOML value"),
])
def test_bad_key_value_words_are_named(words, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        commands.parse_kv(words)


# --- job, wait, plot, unperturb -------------------------------------------------------

def test_job_arguments():
    assert commands.job_args([], [1, 2]) == ([], None)
    assert commands.job_args(["passes=3"], [1]) == ([], 3)
    assert commands.job_args(["2", "1", "passes=1"], [1, 2]) == ([2, 1], 1)


@pytest.mark.parametrize("words,message", [
    (["passes=abc"], "passes='abc': must be an integer (collectives per job)"),
    (["passes=1.5"], "passes=1.5: must be an integer"),
    (["passes=true"], "passes=True: must be an integer"),
    (["passes="], "'passes=': no value after '='"),
    (["colour=red"], "unknown option colour='red'; allowed: passes=N"),
    (["abc"], "job id 'abc': the spec's jobs are [1]"),
    (["7"], "job id '7': the spec's jobs are [1]"),
    (["-1"], "job id '-1'"),
])
def test_bad_job_arguments_are_named(words, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        commands.job_args(words, [1])


def test_passes_beyond_the_specs_range_are_named():
    spec = validate(FABRIC, "cli.toml")
    job, topo = spec.jobs[0], spec.topology
    assert passes_error(job, 3, topo) is None
    assert passes_error(job, 0, topo) == "must be in 1..10000"
    assert passes_error(job, 10_001, topo) == "must be in 1..10000"
    assert passes_error(job, 1.5, topo) == "must be an integer"
    big = validate(dict(FABRIC, jobs=[dict(FABRIC["jobs"][0], chunk_bytes=1 << 30, passes=1)]),
                   "cli.toml").jobs[0]
    assert passes_error(big, 20, topo).startswith("passes x bytes per rank = 20 x 6442450944 B")


def test_wait_seconds():
    assert commands.wait_seconds([], 120.0) == 120.0
    assert commands.wait_seconds(["2.5"], 120.0) == 2.5


@pytest.mark.parametrize("words", [["abc"], ["-1"], ["0"], ["inf"], ["nan"], ["1e300"],
                                   ["1", "2"]])
def test_bad_wait_seconds_are_named(words):
    with pytest.raises(CommandError, match=r"wait|usage: wait \[SECONDS\]"):
        commands.wait_seconds(words, 120.0)


def test_plot_run_number():
    assert commands.run_number([], 3) == 3 and commands.run_number(["2"], 3) == 2
    for words, message in ((["9"], "no run 9; runs are 1..3"), (["x"], "usage: plot [N]"),
                           (["0"], "no run 0")):
        with pytest.raises(CommandError, match=re.escape(message)):
            commands.run_number(words, 3)
    with pytest.raises(CommandError, match=re.escape("no jobs started yet (`job`)")):
        commands.run_number([], 0)


def test_unperturb_words():
    assert commands.unperturb_all([]) is False and commands.unperturb_all(["all"]) is True
    with pytest.raises(CommandError, match=re.escape("usage: unperturb [all]")):
        commands.unperturb_all(["sideways"])
