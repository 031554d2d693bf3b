"""summary.json declared once (emulator/analysis/summary/): written and read back as its
types, and a file that is not this format's -- a key renamed, missing, of another type,
not JSON, another format -- is one line naming the file and the key's path from the top,
never a KeyError or a silently wrong report."""

import json
import os

import pytest

from emulator.analysis import summary
from emulator.analysis.summary import SummaryError
from tests import summary_util as su


def _written(tmp_path) -> dict:
    runs = [su.run("baseline", 1, [su.job([su.collective(0, cct_s=2.0)], jct_s=2.0)]),
            su.run("symphony", 1, [su.job([su.collective(0, cct_s=1.5)], jct_s=1.5)],
                   split_jobs=[su.split_job([su.collective_split(emulated_s=1.5)])])]
    su.summary(runs).write(str(tmp_path))
    with open(tmp_path / summary.FILE) as f:
        return json.load(f)


def _refused(tmp_path, data) -> str:
    with open(tmp_path / summary.FILE, "w") as f:
        json.dump(data, f)
    with pytest.raises(SummaryError) as e:
        summary.read(str(tmp_path))
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"{tmp_path / summary.FILE}: ")
    return text[len(f"{tmp_path / summary.FILE}: "):]


def test_a_summary_reads_back_as_it_was_written(tmp_path):
    data = _written(tmp_path)
    assert data["format"] == summary.FORMAT
    got = summary.read(str(tmp_path))
    assert got.to_json() == data
    rundir = got.runs[0].rundir                             # relative to the file
    assert not os.path.isabs(rundir)
    assert os.path.normpath(os.path.join(tmp_path, rundir)) == "/nowhere/baseline-seed1"
    assert got.runs[1].split.jobs[0].collectives[0].emulated_s == 1.5
    assert "sim_s" not in data["runs"][1]["split"]["jobs"][0]["collectives"][0]   # no twin


def test_a_renamed_key_names_its_path_from_the_top(tmp_path):
    data = _written(tmp_path)
    fid = data["runs"][1]["fidelity"]
    fid["faithfull"] = fid.pop("faithful")
    assert _refused(tmp_path, data) == "runs[1].fidelity: unknown keys ['faithfull']"


def test_a_missing_key_names_its_path_from_the_top(tmp_path):
    data = _written(tmp_path)
    del data["runs"][1]["split"]["jobs"][0]["collectives"][0]["bound_s"]
    assert _refused(tmp_path, data) == "runs[1].split.jobs[0].collectives[0].bound_s: missing"
    data = _written(tmp_path)
    del data["seeds"]
    assert _refused(tmp_path, data) == "seeds: missing"


def test_a_value_of_another_type_names_its_key_and_what_was_expected(tmp_path):
    data = _written(tmp_path)
    data["runs"][0]["seed"] = "1"
    assert _refused(tmp_path, data) == "runs[0].seed: expected an integer, got '1'"
    data = _written(tmp_path)
    data["runs"][0]["fidelity"]["faithful"] = "yes"
    assert _refused(tmp_path, data) == "runs[0].fidelity.faithful: expected a bool, got 'yes'"


def test_a_file_cut_short_or_of_another_format_is_one_line(tmp_path):
    text = json.dumps(_written(tmp_path))
    (tmp_path / summary.FILE).write_text(text[:len(text) // 2])
    with pytest.raises(SummaryError, match=r"summary\.json: not JSON \("):
        summary.read(str(tmp_path))
    data = _written(tmp_path)
    assert _refused(tmp_path, {**data, "format": 7}).startswith(
        "format 7: not a summary this version reads (format 1)")
    del data["format"]
    assert _refused(tmp_path, data) == (f"a summary of format 0 (this version reads 1); "
                                        f"upgrade it: symphony-emu upgrade {tmp_path}")
