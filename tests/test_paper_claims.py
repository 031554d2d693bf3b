"""What the paper reports, as data (emulator/spec/paper.py): every spec that reproduces a
figure carries its numbers in ``[[paper]]`` tables, checked like every other key."""

import glob
import os

import pytest

from emulator.spec import paper
from emulator.spec import load
from emulator.spec.check import SpecError

RUNS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runs")
FIG5 = os.path.join(RUNS, "fig5.toml")


def test_every_figure_spec_says_what_the_paper_reports():
    specs = sorted(glob.glob(os.path.join(RUNS, "fig*.toml"))) + [
        os.path.join(RUNS, f) for f in ("table2.toml", "table1-paper.toml", "table1.toml")]
    for path in specs:
        claims = load(path).paper
        assert claims, path
        for c in claims:
            assert c.figure and c.setting and (c.value is not None or c.claim), (path, c)


def test_fig5s_claims_are_the_papers_numbers():
    (vs_base,) = paper.matching(load(FIG5).paper, "cct", "symphony", "baseline")
    (vs_pq,) = paper.matching(load(FIG5).paper, "cct", "symphony", "pq")
    assert (vs_base.value, vs_base.unit, vs_base.statistic) == (-22.0, "%", "median")
    assert vs_pq.value == -19.0
    assert vs_base.text() == ("Fig 5: median cct, symphony vs baseline -22 % "
                              "(CDF of the Ring AllReduce CCT over 100 runs)")


def test_a_claim_belongs_to_a_variant_of_its_spec():
    claims = load(os.path.join(RUNS, "table2.toml")).paper
    assert {c.variant for c in claims} == {"vgg16", "resnet50", "transformer"}
    (vgg,) = paper.matching(claims, "jct", "symphony", variant="vgg16")
    assert vgg.value == -50.2


def _spec(tmp_path, table: str) -> str:
    p = tmp_path / "s.toml"
    p.write_text('name = "s"\n[[jobs]]\nid = 1\nhosts = "all"\nchunk_bytes = 65536\n'
                 '[[variants]]\nname = "a"\nset = []\n[[paper]]\n' + table)
    return str(p)


@pytest.mark.parametrize("table, message", [
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\nvalue = 1.0\nunit = "%"\nfoo = 1\n',
     "paper[0].foo = 1: unknown key; allowed: figure, metric, setting"),
    ('figure = "Fig 1"\nmetric = "speed"\nsetting = "x"\nvalue = 1.0\nunit = "%"\n',
     "paper[0].metric = 'speed': allowed: cct, jct, max_overlap"),
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\nvalue = 1.0\nunit = "s"\n',
     "paper[0].unit = 's': allowed: %, x, ms, steps"),
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\n',
     "paper[0].claim = None: a claim in words is needed where no value is given"),
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\nvalue = "big"\nunit = "%"\n',
     "paper[0].value = 'big': must be a number"),
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\nvalue = 1.0\nunit = "%"\nvariant = "b"\n',
     "paper[0].variant = 'b': allowed: one of the spec's [[variants]] (a)"),
    ('figure = "Fig 1"\nmetric = "cct"\nsetting = "x"\nvalue = 1.0\nunit = "%"\nscheme = "fast"\n',
     "paper[0].scheme = 'fast': allowed: baseline, symphony, pq"),
    ('metric = "cct"\nsetting = "x"\nvalue = 1.0\nunit = "%"\n',
     "paper[0].figure = None: a non-empty string is needed"),
])
def test_a_bad_claim_is_refused_in_one_line_naming_the_key(tmp_path, table, message):
    path = _spec(tmp_path, table)
    with pytest.raises(SpecError) as e:
        load(path)
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)
    assert "\n" not in str(e.value)
