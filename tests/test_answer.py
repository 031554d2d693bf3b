"""The main job's answer (emulator.analysis.answer): verdicts from a simulated and an
emulated run set, and the emulation's distance from its twins."""

from emulator.analysis import answer
from tests import summary_util as su


def _summary(n, base, sym, twins=()):
    ev = {m: su.evidence([base] * n, [sym * (1 + 0.01 * k) for k in range(n)],
                         primary=m == "jct") for m in ("cct", "jct")}
    runs = [su.run("symphony", k, split_jobs=[su.split_job(emulated_jct_s=e, sim_jct_s=s)])
            for k, (e, s) in enumerate(twins, 1)]
    return su.summary(runs, evidence={"symphony": ev})


def test_twenty_seeds_decide_and_three_say_undecided_with_n(tmp_path):
    (tmp_path / "sim").mkdir()
    (tmp_path / "emu").mkdir()
    _summary(20, 10.0, 8.0).write(str(tmp_path / "sim"))
    _summary(3, 10.0, 8.0, [(10.5, 10.0), (9.9, 10.0), (10.2, 10.0)]).write(
        str(tmp_path / "emu"))
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
