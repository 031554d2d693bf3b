"""runtime/compiled.py: the compiled core is used only while it is the current sources'
build, and gives the very results the sources give."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from runtime import compiled

REPO = compiled.REPO


def _fake_build(tmp_path, **change):
    """A build folder whose manifest matches today's sources (empty .so files)."""
    suffix = ".so"
    modules = {m: {"so": m.replace(".", "/") + suffix,
                   "sha256": compiled._digest(compiled._source(m))} for m in compiled.MODULES}
    manifest = {"interpreter": compiled._interpreter(), "group": "g__mypyc",
                "group_so": "g__mypyc.so", "modules": modules}
    for k, v in change.items():
        manifest[k] = v(manifest[k]) if callable(v) else v
    for rec in list(manifest["modules"].values()) + [{"so": manifest["group_so"]}]:
        path = tmp_path / rec["so"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    (tmp_path / compiled.MANIFEST).write_text(json.dumps(manifest))
    return tmp_path


def test_a_current_build_maps_every_module_and_the_group_to_its_file(tmp_path):
    paths, status = compiled.check(str(_fake_build(tmp_path)))
    assert status == "compiled"
    assert set(paths) == set(compiled.MODULES) | {"g__mypyc"}
    assert paths["hosts.nic_core"] == str(tmp_path / "hosts" / "nic_core.so")


def test_an_edited_source_makes_the_whole_build_unused_and_says_which(tmp_path):
    def edit(modules):
        modules["switch_agent.symphony"]["sha256"] = "0" * 64
        return modules
    paths, status = compiled.check(str(_fake_build(tmp_path, modules=edit)))
    assert paths is None
    assert status.startswith("pure (stale: switch_agent/symphony.py changed since the build")


def test_another_interpreter_or_module_list_or_no_build_is_not_used(tmp_path):
    paths, status = compiled.check(str(_fake_build(tmp_path / "a", interpreter="cpython-39 .so")))
    assert paths is None and "built for cpython-39 .so" in status
    paths, status = compiled.check(str(_fake_build(
        tmp_path / "b", modules=lambda m: {k: v for k, v in m.items() if k != "hosts.rank"})))
    assert paths is None and "another list of modules" in status
    assert compiled.check(str(tmp_path / "none")) == (
        None, "pure (not built: symphony-emu core --build)")


def test_a_build_missing_a_file_is_not_used(tmp_path):
    build = _fake_build(tmp_path)
    os.remove(build / "runtime" / "wire.so")
    paths, status = compiled.check(str(build))
    assert paths is None and status.startswith("pure (incomplete build")


RUN = textwrap.dedent("""
    import dataclasses, json, os, sys, tempfile
    from runtime import compiled
    from emulator.sim.run import run_sim
    from emulator.spec import load
    out = {"status": compiled.status,
           "wire": type(sys.modules["runtime.wire"].__loader__).__name__}
    with tempfile.TemporaryDirectory() as t:
        for spec, scheme, sets in [("runs/table1.toml", "symphony", ["jobs.0.passes=1"]),
                                   ("runs/table1.toml", "pq", ["jobs.0.passes=1"]),
                                   ("runs/fig9.toml", "baseline", [])]:
            m = run_sim(load(spec, sets), scheme, 3, os.path.join(t, scheme + spec[-9:]))
            out[f"{spec} {scheme}"] = [
                m.sim.end_s, m.sim.events, m.sim.data_packets, m.sim.port_drops,
                {n: dataclasses.asdict(s) for n, s in sorted(m.rank_summaries.items())},
                {sw: a.counters for sw, a in sorted(m.agents.items())}]
    print(json.dumps(out, sort_keys=True, default=repr))
""")


def _simulate(pure: bool) -> dict:
    env = dict(os.environ)
    env.pop(compiled.PURE_ENV, None)
    if pure:
        env[compiled.PURE_ENV] = "1"
    res = subprocess.run([sys.executable, "-c", RUN], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


@pytest.mark.skipif(compiled.check()[0] is None,
                    reason=f"no current compiled core ({compiled.check()[1]}); "
                           "symphony-emu core --build makes one")
def test_the_compiled_core_gives_exactly_the_sources_results():
    """Three simulated runs (Symphony's marks, pq's two classes, DCQCN under two flows
    into one port): every counter, time and rank summary the same to the bit."""
    fast, slow = _simulate(pure=False), _simulate(pure=True)
    assert fast.pop("status") == "compiled" and fast.pop("wire") == "ExtensionFileLoader"
    assert slow.pop("status") == "pure (SYMPHONY_PURE is set)"
    assert slow.pop("wire") == "SourceFileLoader"
    assert fast == slow


def test_the_command_says_whether_the_core_is_compiled():
    res = subprocess.run([sys.executable, "-m", "emulator", "core"], cwd=REPO,
                         capture_output=True, text=True, env=dict(os.environ,
                                                                  **{compiled.PURE_ENV: "1"}))
    assert res.returncode == 0, res.stderr
    assert res.stdout == "pure (SYMPHONY_PURE is set): " + ", ".join(compiled.MODULES) + "\n"
