"""``symphony-emu reproduce`` (no root: the model and the simulation): each backend of a
figure is a resumable sweep whose runs become rows of docs/data/figures/<fig>.csv, and
the page is made from those rows and the spec's [[paper]] tables alone."""

import csv
import os
import re

from emulator.analysis import figures
from emulator.cli import main as cli_main
from emulator.launch import reproduce as rp


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_figure_on_two_backends_becomes_rows_then_a_page(tmp_path, capsys):
    out, data = tmp_path / "out", tmp_path / "data"
    assert "fig5" in rp.figures() and "table1-two-leaf" not in rp.figures()
    (path,) = rp.reproduce(["fig5"], ["fluid", "sim"], str(out), str(data), seeds=2, jobs=1)
    rows = _rows(path)
    got = {(r["backend"], r["scheme"], r["seed"]) for r in rows}
    assert got == {(b, s, str(k)) for k in (1, 2) for b, schemes in (
        ("fluid", ("baseline", "ideal-priority", "pq")), ("sim", ("baseline", "pq", "symphony")))
        for s in schemes}
    assert all(r["figure"] == "fig5" and r["git_revision"] and float(r["median_cct_s"]) > 0
               for r in rows)
    assert {r["fabric"] for r in rows} == {"pfc"}        # runs/fig5.toml: the paper's
    # resumable: run again, nothing is run anew, the same data
    capsys.readouterr()
    rp.reproduce(["fig5"], ["sim"], str(out), str(data), seeds=2, jobs=1)
    assert "done before, kept" in capsys.readouterr().out
    assert _rows(path) == rows              # the model's rows kept, the simulation's equal
    text = figures.page(str(data), rp.RUNS)
    assert "## fig5" in text and "| symphony | -22 % |" in text    # the paper's, from data
    assert "; fabric: simulation lossless (PFC)." in text
    assert "| pq |" in text and "too few" not in text
    line = next(x for x in text.splitlines() if x.startswith("| symphony | -22 %"))
    assert line.count("(2)") == 1 and line.endswith("undecided (2) | - |"), line
    # what is done, with the machine time the runs took (their wall times, recorded)
    assert all(float(r["wall_s"]) > 0 for r in rows)
    sim_s = sum(float(r["wall_s"]) for r in rows if r["backend"] == "sim")
    done = re.search(r"\| fig5 \| 2 seeds, [\d.]+ (s|min) \| 2 seeds, ([\d.]+) s \| not yet \|", text)
    assert done and abs(float(done.group(2)) - sim_s) <= 0.5, text[:1500]
    rc = cli_main(["reproduce", "--page", "--data", str(data), "--to", str(tmp_path / "p.md")])
    made = open(tmp_path / "p.md").read()
    assert rc == 0 and "| fig5 | 2 of 200 seeds, " in made and " | not yet (5) |" in made
    link = "\n![fig5: paired differences per seed](p/fig5.svg)\n"
    others = [x for x in made.splitlines(True) if x.startswith("| ") and "| not yet (200) |" in x]
    assert len(others) == len(rp.figures()) - 1           # every other figure: not yet run
    for x in others:
        made = made.replace(x, "")
    made = made.replace(" of 200", "").replace(" of 50", "").replace(" (5)", "")
    assert made.replace(link, "") == text
    # its plot beside it: the paired differences of the one pair scheme per backend
    svg = open(tmp_path / "p" / "fig5.svg").read()
    assert svg.startswith("<?xml") and "p/fig5.svg" in made


def test_an_unknown_figure_is_refused_naming_the_allowed_ones(capsys):
    assert cli_main(["reproduce", "fig99", "--backend", "fluid"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("symphony-emu reproduce: fig99: allowed: fig2, fig4, fig5")
    assert "\n" not in err.strip()


def test_page_refuses_data_without_rows_and_a_page_that_would_show_less(tmp_path, capsys):
    """--page from a folder with no rows replaced the page with one of "not yet" and
    exited 0; now it is one line naming the folder, exit 2, the page as it was. A page
    that would show fewer seeds than the one it replaces (here: fig9's rows alone against
    the committed page's 13 figures) is refused naming what it would lose, unless --force."""
    import shutil
    committed = os.path.join(os.path.dirname(rp.RUNS), "docs", "results.md")
    page = tmp_path / "p.md"
    shutil.copy(committed, page)
    before = page.read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "fig9.csv").write_text(",".join(rp.COLUMNS) + "\n")     # a header, no row
    capsys.readouterr()
    assert cli_main(["reproduce", "--page", "--data", str(empty), "--to", str(page)]) == 2
    assert capsys.readouterr().err == (
        f"symphony-emu reproduce: --data {empty}: no figure rows in it (no <figure>.csv with "
        f"a row); run the figures first (symphony-emu reproduce FIG); {page} left as it was\n")
    assert page.read_text() == before and not (tmp_path / "p").exists()
    # one figure's rows: the page would lose every other figure's 200 model seeds...
    part = tmp_path / "part"
    part.mkdir()
    shutil.copy(os.path.join(rp.DATA, "fig9.csv"), part / "fig9.csv")
    assert cli_main(["reproduce", "--page", "--data", str(part), "--to", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"symphony-emu reproduce: --page: the page from --data {part} would "
                          f"show less than {page} does: fig2 model (200 seeds, 0 in --data), ")
    assert "fig9" not in err and err.count("\n") == 1
    assert err.endswith(f"; {page} left as it was (--force writes it anyway)\n")
    assert page.read_text() == before
    # ... which --force writes all the same
    assert cli_main(["reproduce", "--page", "--data", str(part), "--to", str(page),
                     "--force"]) == 0
    made = page.read_text()
    assert "| fig2 | not yet (200) |" in made and "| fig9 | 200 of 200 seeds, " in made


def test_page_with_a_reading_too_long_is_one_line_and_nothing_written(tmp_path, capsys):
    """A figure's reading past READING_LINES was a ValueError traceback out of --page (met
    on paper-fig5's reading, 2026-12-07); now one line naming the file and the limit,
    exit 2, and neither the page nor a plot written."""
    import shutil
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(os.path.join(rp.DATA, "fig9.csv"), data / "fig9.csv")
    (data / "fig9.md").write_text("a line\n" * (figures.READING_LINES + 1))
    page = tmp_path / "p.md"
    capsys.readouterr()
    assert cli_main(["reproduce", "--page", "--data", str(data), "--to", str(page)]) == 2
    assert capsys.readouterr().err == (
        f"symphony-emu reproduce: {data / 'fig9.md'}: {figures.READING_LINES + 1} lines; a "
        f"figure's reading is at most {figures.READING_LINES} (what holds, what does not, "
        "the measured cause)\n")
    assert not page.exists() and not (tmp_path / "p").exists()


def test_out_pointing_at_one_figures_folder_is_refused_before_any_run(tmp_path, capsys):
    # reproduce keeps runs in <out>/<figure>/<backend>; given <out>/fig5 itself (its runs
    # in fig5/sim) it would start every run again in fig5/fig5/sim (2026-12-07)
    (tmp_path / "fig5" / "sim").mkdir(parents=True)
    rc = cli_main(["reproduce", "fig5", "--backend", "sim", "--out", str(tmp_path / "fig5"),
                   "--data", str(tmp_path / "data")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"--out {tmp_path / 'fig5'}: that is one figure's folder" in err
    assert f"--out {tmp_path}, to resume them" in err
    assert not (tmp_path / "fig5" / "fig5").exists() and not (tmp_path / "data").exists()
    assert rp.misplaced_out(str(tmp_path), ["fig5"]) is None        # the right folder
