"""Runs verified by checksums (``run.verify``; hosts/collectives/checksums.py) in the
simulator, without root: every algorithm's results verified on 8 ranks, the same run as
on real buffers event for event (the bytes on the wire have the same sizes), and the
console saying how a run verifies."""

import os

import pytest

from emulator.cli import main as cli_main
from emulator.home import root as project_root
from emulator.rundir import RunFolder
from emulator.sim.run import run_sim
from emulator.spec import load
from runtime.records import CollectiveDone, FlowReceived, FlowSent

TOPOLOGY = 'kind = "leafspine"\nleaves = 2\nspines = 2\nhosts_per_leaf = 4'
JOBS = {"ring_allreduce": "", "ring_reducescatter": "", "ring_allgather": "",
        "halving_doubling_allreduce": "", "ring2d_allreduce": "grid = [2, 4]\n"}


def spec_of(tmp_path, algorithm: str, verify: str):
    path = tmp_path / f"{algorithm}.toml"
    path.write_text(f'name = "{algorithm}"\n[topology]\n{TOPOLOGY}\n'
                    f'[[jobs]]\nid = 1\nhosts = "all"\nalgorithm = "{algorithm}"\n'
                    f'rings = "single"\nchunk_bytes = 32768\npasses = 2\n{JOBS[algorithm]}'
                    '[run]\nschemes = ["baseline"]\n')
    return load(str(path), [f"run.verify={verify}"])


def simulate(tmp_path, algorithm: str, verify: str):
    rundir = str(tmp_path / verify / "baseline-seed1")
    meas = run_sim(spec_of(tmp_path, algorithm, verify), "baseline", 1, rundir)
    done = sorted((c.rank, c.pass_index, c.start_s, c.end_s, c.verified)
                  for c in RunFolder(rundir).host_records(CollectiveDone))
    flows = sorted(repr(r) for kind in (FlowSent, FlowReceived)      # every field
                   for r in RunFolder(rundir).host_records(kind))
    return meas, done, flows


@pytest.mark.parametrize("algorithm", list(JOBS))
def test_every_algorithm_verified_by_checksums_runs_as_on_real_buffers(tmp_path, algorithm):
    """8 ranks, 2 passes: every rank's every pass verified by checksums, and every
    collective's start and end, every flow's record (times, rate samples, CNPs) and the
    simulator's event count exactly the real buffers' run's."""
    meas, done, flows = simulate(tmp_path, algorithm, "checksums")
    assert len(done) == 8 * 2 and all(c[-1] for c in done), done
    assert all(s.ok for s in meas.rank_summaries.values())
    real, real_done, real_flows = simulate(tmp_path, algorithm, "buffers")
    assert flows and done == real_done and flows == real_flows
    assert (meas.sim.events, meas.sim.data_packets, meas.sim.end_s) == \
        (real.sim.events, real.sim.data_packets, real.sim.end_s)


def test_the_plan_gives_every_rank_the_runs_verification(tmp_path):
    from emulator import plan as planning
    for verify in ("buffers", "checksums"):
        plan = planning.compile(spec_of(tmp_path, "ring_allreduce", verify), "baseline", 1)
        assert plan.verify == verify
        assert {r.verify for h in plan.hosts.values() for r in h.ranks} == {verify}


def test_the_console_says_when_a_run_verifies_by_checksums(tmp_path, capsys):
    fig5 = os.path.join(project_root(), "runs", "fig5.toml")
    sets = ["--set", "jobs.0.chunk_bytes=65536", "--set", "jobs.0.passes=1"]
    for verify, said in (("checksums", True), ("auto", False)):
        rc = cli_main(["run", fig5, "--backend", "sim", "--seeds", "1", "--scheme",
                       "baseline", "--no-plots", "--out", str(tmp_path / verify), *sets,
                       "--set", f"run.verify={verify}"])
        out = capsys.readouterr().out
        assert rc == 0
        assert ("symphony-emu run: results verified by checksums (run.verify = "
                '"checksums"' in out) == said, out


def test_a_message_is_fitted_as_it_arrives_and_never_held_whole(tmp_path, monkeypatch):
    """With 1 KB blocks (32 KB chunks): every message received goes through a Fitting
    that never keeps more than a block and a packet, the sends are generated a block at a
    time, and the run is the real buffers' run, event for event."""
    from hosts.collectives import checksums as cs
    monkeypatch.setattr(cs, "STREAM_BYTES", 1024)
    kept, results, blocks = [], [], []
    feed, result, make = cs.Fitting.feed, cs.Fitting.result, cs.Generated._make

    def watched_feed(self, chunk):
        feed(self, chunk)
        kept.append(len(self.pending) + sum(len(h) for h in self.head) * 4)

    def watched_result(self):
        results.append(self.rng)
        return result(self)

    def watched_make(self, at, nbytes):
        make(self, at, nbytes)
        blocks.append(len(self.block))

    monkeypatch.setattr(cs.Fitting, "feed", watched_feed)
    monkeypatch.setattr(cs.Fitting, "result", watched_result)
    monkeypatch.setattr(cs.Generated, "_make", watched_make)
    meas, done, flows = simulate(tmp_path, "ring_allreduce", "checksums")
    received = sum(1 for f in flows if f.startswith("FlowReceived"))
    assert received == 8 * 2 * 2 * 7 and len(results) == received     # 14 steps a pass
    assert max(kept) < 1024 + 4096 + 1024 and max(blocks) <= 4096 + 4
    assert len(done) == 16 and all(c[-1] for c in done)
    real, real_done, real_flows = simulate(tmp_path, "ring_allreduce", "buffers")
    assert done == real_done and flows == real_flows and meas.sim.events == real.sim.events
