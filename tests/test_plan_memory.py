"""emulator/plan/memory.py: a run's peak memory from its shape, and so how its ranks
verify -- on real buffers while that peak is within ``run.verify_budget_gb``, by
checksums above it or when the spec says so."""

import os

import pytest

from emulator import plan as planning
from emulator.home import root as project_root
from emulator.plan import memory
from emulator.spec import load

PAPER = os.path.join(project_root(), "runs", "table1-paper.toml")
EIGHT_MB = ["jobs.0.passes=1", "jobs.0.chunk_bytes=8388608", "variants=[]", "paper=[]"]
MIB = 2**20


def test_auto_keeps_real_buffers_within_the_budget_and_takes_checksums_over_it():
    small = planning.verification(load(PAPER))                # 32 ranks x 2 MiB
    assert small.mode == "buffers" and small.line() is None
    assert small.buffers_bytes == memory.RUN_OWN_BYTES + 3.5 * 32 * 2 * MIB
    big = planning.verification(load(PAPER, EIGHT_MB))        # 32 ranks x 64 MiB
    assert big.mode == "checksums" and big.buffers_bytes > 7e9
    assert big.line() == ("results verified by checksums (real buffers would need about "
                          "7.8 GB at the peak, over run.verify_budget_gb = 4; "
                          "docs/architecture.md §4)")
    roomy = planning.verification(load(PAPER, EIGHT_MB + ["run.verify_budget_gb=16"]))
    assert roomy.mode == "buffers"


@pytest.mark.parametrize("verify", ["buffers", "checksums"])
def test_the_spec_can_name_the_verification_whatever_the_size(verify):
    for sets in ([], EIGHT_MB):
        v = planning.verification(load(PAPER, sets + [f"run.verify={verify}"]))
        assert v.mode == verify
    if verify == "checksums":
        assert v.line().startswith('results verified by checksums (run.verify = "checksums"')


def test_by_checksums_a_run_holds_a_block_of_each_message_not_its_buffers():
    """32 ranks x 64 MiB, 8 MiB messages: the codes (a byte an element) and four 256 KiB
    blocks a rank, whatever the messages' size or the algorithm."""
    block = memory.STREAM_BYTES
    assert block == 256 * 1024
    for algorithm in ("ring_allreduce", "halving_doubling_allreduce"):
        lays = planning.layouts(load(PAPER, EIGHT_MB + [f"jobs.0.algorithm={algorithm}"]))
        assert memory.peak_bytes(lays, "checksums") == (
            memory.RUN_OWN_BYTES + 64 * MIB // 4 + memory.STREAMS * 32 * block)
        assert memory.rank_bytes(lays[0]) == 4 * block + 64 * MIB // 4


def test_a_training_workload_holds_every_bucket_size_not_only_the_largest():
    """ResNet-50's four DDP buckets on 512 ranks at 1/16 of its gradients: 6.4 MB a rank,
    not its largest bucket's 1.9 MB (taken so, the run was thought to fit the 4 GB budget
    and took 12 GB)."""
    spec = load(os.path.join(project_root(), "runs", "paper-scale", "table2-512.toml"), [
        'jobs=[{id = 1, hosts = "all", algorithm = "ring2d_allreduce", grid = [16, 32], '
        'workload = "resnet50", iterations = 2, gradient_scale = 0.0625, bucket_mb = 25.0}]'])
    lay, = planning.layouts(spec)
    sizes = {n for n, _, _ in lay.program}
    assert len(sizes) == 4 and lay.nbytes == max(sizes)
    assert memory.buffer_bytes(lay) == sum(sizes) > 6e6
    v = planning.verification(spec)
    assert v.buffers_bytes > 11e9 and v.mode == "checksums"
