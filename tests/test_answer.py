"""The main job's answer (emulator.analysis.answer): verdicts from a simulated and an
emulated run set, and the emulation's distance from its twins."""

import json

from emulator.analysis import answer
from emulator.analysis.stats import paired


def _summary(n, base, sym, twins=()):
    ev = {m: {**paired([base] * n, [sym * (1 + 0.01 * k) for k in range(n)]).as_dict(),
              "primary": m == "jct", "correlation": None} for m in ("cct", "jct")}
    runs = [{"split": {"jobs": [{"emulated_jct_s": e, "sim_jct_s": s}]}} for e, s in twins]
    return {"evidence": {"symphony": ev}, "runs": runs}


def test_twenty_seeds_decide_and_three_say_undecided_with_n(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "emu").mkdir()
    json.dump(_summary(20, 10.0, 8.0), open(tmp_path / "sim" / "summary.json", "w"))
    json.dump(_summary(3, 10.0, 8.0, [(10.5, 10.0), (9.9, 10.0), (10.2, 10.0)]),
              open(tmp_path / "emu" / "summary.json", "w"))
    lines = answer.answer(str(tmp_path / "sim"), str(tmp_path / "emu"))
    sim = [ln for ln in lines if ln.startswith("simulated")]
    assert len(sim) == 2 and all(ln.endswith("faster in 20 of 20: faster") for ln in sim)
    emu = [ln for ln in lines if ln.startswith("emulated,")]
    assert all("too few seeds for a 95 % interval: 3 pairs, 6 needed" in ln
               and ln.endswith(": undecided") for ln in emu)
    assert lines[-1].startswith("emulated / simulated twin on the same paths, per run's job: "
                                "median 1.020 [0.990, 1.050] over 3 runs")


def test_a_missing_run_set_is_named():
    assert answer.answer("/nonexistent/a", "/nonexistent/b")[0].startswith(
        "simulated: no summary.json in /nonexistent/a")
