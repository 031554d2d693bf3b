"""docs/results.md is made from docs/data/figures/ alone: the committed page is what the
committed data give (regenerated here and compared byte for byte), and the page's own
rules hold: a figure's reading is short, a plot depends on the data alone."""

import os
import re
import shutil

import pytest

from emulator.analysis import figures
from emulator.analysis.figure_rows import FigureRow
from emulator.launch import reproduce as rp
from topologies.wiring import REPO_ROOT

PAGE = os.path.join(REPO_ROOT, "docs", "results.md")
PLOTS = os.path.join(REPO_ROOT, "docs", "results")


def test_the_committed_page_is_what_the_committed_data_give(tmp_path):
    to = tmp_path / "results.md"
    from emulator.cli.reproduce import write_page
    write_page(rp.DATA, str(to))                  # what `reproduce --page` does
    with open(PAGE) as f:
        committed = f.read()
    assert to.read_text() == committed, (
        "docs/results.md differs from what docs/data/figures/ gives: run "
        "`symphony-emu reproduce --page` and commit the page")
    made = sorted(os.listdir(tmp_path / "results"))
    assert made == sorted(os.listdir(PLOTS))
    linked = re.findall(r"\]\(results/([\w-]+\.svg)\)", committed)
    assert linked and sorted(linked) == made
    import matplotlib
    for name in made:
        with open(os.path.join(PLOTS, name)) as f:
            old = f.read()
        by = re.search(r"Matplotlib v([\d.]+)", old)
        if by is None or by.group(1) != matplotlib.__version__:
            pytest.skip(f"{name} was drawn by matplotlib {by and by.group(1)}, this is "
                        f"{matplotlib.__version__}: its bytes may differ")
        assert (tmp_path / "results" / name).read_text() == old, name


def test_a_reading_longer_than_ten_lines_is_refused_naming_its_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(os.path.join(rp.DATA, "fig7c.csv"), data / "fig7c.csv")
    (data / "fig7c.md").write_text("".join(f"line {i}\n" for i in range(11)))
    with pytest.raises(ValueError, match=r"fig7c\.md: 11 lines; a figure's reading is at "
                                         r"most 10"):
        figures.page(str(data), rp.RUNS)
    (data / "fig7c.md").write_text("Holds: the tail.\n\nDoes not: the mean.\n")
    (data / "questions.md").write_text("## Questions\n\nOne.\n")
    text = figures.page(str(data), rp.RUNS)
    assert "**Reading.** Holds: the tail.\n\nDoes not: the mean.\n" in text
    assert text.endswith("## Questions\n\nOne.\n")


def test_the_same_data_draw_the_same_plot(tmp_path):
    rows = figures.read(os.path.join(rp.DATA, "fig5.csv"))
    from emulator.spec import load
    spec = load(os.path.join(rp.RUNS, "fig5.toml"))
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    assert figures.plot("fig5", rows, spec.paper, "cct", str(a))
    assert figures.plot("fig5", rows, spec.paper, "cct", str(b))
    assert a.read_text() == b.read_text()
    text = a.read_text()
    assert "<dc:date>" not in text            # nothing of the day it was drawn
    # no pair at all (the baseline alone): nothing drawn, nothing written
    only = [r for r in rows if r.scheme == "baseline"]
    assert not figures.plot("fig5", only, spec.paper, "cct", str(tmp_path / "c.svg"))
    assert not (tmp_path / "c.svg").exists()


def test_a_twin_is_analysed_as_its_run_is(tmp_path):
    """A training job computes before its first all-reduce: its JCT counts that time, the
    span of its collectives does not; the twin's row must mean what the run's does."""
    from emulator.analysis import report
    from emulator.launch.sweep import _twin
    from emulator.analysis.summary import SIMULATED
    from emulator.sim.run import run_sim
    from emulator.spec import load
    from tests import summary_util as su
    spec = load(os.path.join(rp.RUNS, "fig6.toml"), ["jobs.0.iterations=1"])
    run_sim(spec, "baseline", 1, str(tmp_path / "twin"), host_delay_s=0.0)
    job = report.analyze_run(str(tmp_path / "twin"), twin=False).jobs[0]
    got = _twin(su.run(rundir=str(tmp_path), split_jobs=[], twin=SIMULATED))
    ccts = sorted(c.cct_s for c in job.collectives)
    assert got == {"twin_median_cct_s": pytest.approx(ccts[len(ccts) // 2]) if len(ccts) % 2
                   else pytest.approx((ccts[len(ccts) // 2 - 1] + ccts[len(ccts) // 2]) / 2),
                   "twin_jct_s": job.jct_s}
    first = min(c.start_s for c in job.collectives)
    assert first > 0.1 * got["twin_jct_s"]           # the compute before it is in the JCT
    assert _twin(su.run(split_jobs=[], twin="not run")) == {} and _twin(su.run()) == {}


def test_an_emulated_run_stands_beside_its_twin():
    row = {"figure": "fig5", "variant": "", "backend": "emulation", "scheme": "baseline",
           "seed": "1", "git_revision": "abc", "faithful": "True", "wall_s": "",
           "median_cct_s": "3.3", "twin_median_cct_s": "3.0", "jct_s": "9.0",
           "twin_jct_s": "10.0"}                    # as csv.DictReader reads a row
    flagged = dict(row, faithful="False", median_cct_s="30")      # never in the ratio
    rows = [FigureRow.parse(r) for r in (row, flagged, dict(row, backend="sim"))]
    table = "\n".join(figures._twin_table(rows))
    assert "| baseline | 1.100 (1.100-1.100), 1 | 0.900 (0.900-0.900), 1 |" in table
    assert figures._twin_table(rows[2:]) == []


def test_a_figure_lists_its_schemes_in_one_order_whatever_order_its_rows_come_in():
    rows = figures.read(os.path.join(rp.DATA, "fig7ab.csv"))
    orders = set()
    for rows_in in (rows, rows[::-1], sorted(rows, key=lambda r: r.backend)):
        text = "\n".join(figures._metric_tables("fig7ab", "", rows_in, (), "jct"))
        orders.add(tuple(re.findall(r"^\| (baseline|symphony|ideal-priority|pq) \|", text,
                                    re.M)))
    assert orders == {("baseline", "ideal-priority", "pq", "symphony",
                       "ideal-priority", "pq", "symphony")}


def test_a_row_says_its_fabric_and_one_written_before_the_column_ran_drop_tail():
    row = {"figure": "fig5", "variant": "", "backend": "sim", "scheme": "baseline",
           "seed": "1", "git_revision": "abc", "faithful": "True", "wall_s": "",
           "median_cct_s": "3.3"}
    assert FigureRow.parse(row).fabric == "drop"
    assert FigureRow.parse(dict(row, fabric="pfc")).fabric == "pfc"
    text = figures.figure_section("fig5", [FigureRow.parse(dict(row, fabric="pfc")),
                                           FigureRow.parse(dict(row, backend="emulation"))],
                                  (), "cct")
    assert "; fabric: simulation lossless (PFC), emulation drop-tail." in text
