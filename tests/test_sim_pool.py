"""Many simulated runs at once (emulator.sim.pool): on a Dask cluster of two worker
processes, each run simulated into the worker's own folder and sent back packed, gives
the very runs this process would have made."""

import json
import os

import pytest

from emulator.analysis import report
from emulator.cli import main as cli_main
from emulator.home import root as project_root
from emulator.sim import pool
from emulator.sim.run import SimError
from emulator.spec import load

distributed = pytest.importorskip("distributed", reason="Dask's distributed is not installed "
                                                        "(pip install 'symphony-emu[dask]')")
FIG5 = os.path.join(project_root(), "runs", "fig5.toml")
SMALL = ["jobs.0.chunk_bytes=65536", "jobs.0.passes=1"]


def _ccts(out) -> dict:
    s = report.summarize(str(out), plots=False, exports=False)
    return {(r.scheme, r.seed): [c.cct_s for c in r.jobs[0].collectives]
            for r in s.runs}


def test_a_two_worker_dask_cluster_makes_the_runs_this_process_would(tmp_path, capsys):
    spec = load(FIG5, SMALL)
    runs = [(scheme, seed) for scheme in ("baseline", "symphony") for seed in (1, 2)]
    tasks = lambda out: [(f"{s}-seed{k}", spec, s, k, str(out / f"{s}-seed{k}"), None, 1)
                         for s, k in runs]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        pool.run_many(tasks(tmp_path / "dask"), address=cluster.scheduler_address)
        workers = {w.split("//")[1].rsplit(":", 1)[0] for w in cluster.scheduler.workers}
    said = capsys.readouterr().out
    assert said.count("simulated") == 4 and " (on " in said, said
    pool.run_many(tasks(tmp_path / "here"), jobs=1)
    there, here = _ccts(tmp_path / "dask"), _ccts(tmp_path / "here")
    assert set(there) == set(runs) and there == here
    for scheme, seed in runs:                   # whole folders, nothing left half-unpacked
        d = tmp_path / "dask" / f"{scheme}-seed{seed}"
        assert sorted(os.listdir(d)) == sorted(os.listdir(tmp_path / "here" / d.name))
        assert json.load(open(d / "manifest.json"))["machine"]["node"]
    assert not [n for n in os.listdir(tmp_path / "dask") if n.startswith(".unpack")]
    assert workers


def test_a_worker_on_another_revision_refuses_the_run_naming_both(tmp_path):
    spec = load(FIG5, SMALL)
    task = ("baseline-seed1", spec, "baseline", 1, str(tmp_path / "x"), None, 1)
    with pytest.raises(SimError, match=r"runs revision .*; this sweep needs 0000000"):
        pool._packed(task, "0000000")
    assert not os.path.exists(tmp_path / "x")


def test_no_scheduler_at_the_address_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(pool, "CONNECT_TIMEOUT_S", 1)
    rc = cli_main(["run", FIG5, "--backend", "sim", "--seeds", "1", "--dask",
                   "tcp://127.0.0.1:9", "--out", str(tmp_path / "o"), *sum(
                       (["--set", x] for x in SMALL), [])])
    err = capsys.readouterr().err
    assert rc == 2 and "--dask tcp://127.0.0.1:9: no Dask scheduler answers there" in err, err
    assert len(err.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "o")
    rc = cli_main(["run", FIG5, "--dask", "tcp://127.0.0.1:9", "--out", str(tmp_path / "e")])
    assert rc == 2 and "--dask is for --backend sim" in capsys.readouterr().err


def test_a_packed_folder_with_a_name_outside_the_run_is_refused(tmp_path):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"x"
        info = tarfile.TarInfo("../escaped")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    with pytest.raises(SimError, match="not a plain file of a run folder"):
        pool._unpack(buf.getvalue(), str(tmp_path / "out" / "run"))
    assert not os.path.exists(tmp_path / "out" / "escaped")
    assert os.listdir(tmp_path / "out") == []         # nothing half-unpacked left
