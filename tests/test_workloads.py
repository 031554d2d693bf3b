"""emulator.spec.workloads: the models built from their public definitions, DDP bucketing, the
scaled program of a training job, and the spec keys that ask for one."""

import pytest

from emulator.spec import workloads
from emulator.plan.layout import collective_bytes, layout, theoretical_cct_s
from emulator.spec import load
from runtime.scale import Scale
from tests.toml_util import assert_spec_error, to_toml

MB = 2**20


# --- the models ------------------------------------------------------------------------

@pytest.mark.parametrize("model, params", [
    ("vgg16", 138_357_544),          # torchvision.models.vgg16: sum of p.numel()
    ("resnet50", 25_557_032),        # torchvision.models.resnet50
])
def test_cnn_parameter_counts_match_the_reference_implementations(model, params):
    assert workloads.params(model) == params


def test_transformer_base_has_the_papers_size():
    # 6 encoder + 6 decoder layers of d_model 512, d_ff 2048, and a 37000 x 512 tied
    # embedding: 44.1 M in the layers + 18.9 M embedding.
    assert workloads.params("transformer") == pytest.approx(63.1e6, rel=0.01)


@pytest.mark.parametrize("model, gflops", [("vgg16", 30.9), ("resnet50", 8.2)])
def test_forward_flops_per_image_are_the_published_ones(model, gflops):
    # VGG16: 15.5 G multiply-adds; ResNet-50 (v1.5): 4.1 G multiply-adds.
    total = sum(layer.fwd_flops for layer in workloads.MODELS[model].layers)
    assert total / 1e9 == pytest.approx(gflops, rel=0.02)


def test_cnns_are_communication_bound_and_the_transformer_compute_bound():
    # Lockstep ring all-reduce of all gradients over 4 ranks at 10 Gb/s vs compute.
    def ratio(model):
        comm_s = 2 * 3 / 4 * workloads.params(model) * 4 * 8 / 10e9
        return comm_s / sum(workloads.iteration_compute_s(model))
    assert ratio("vgg16") > 3 and ratio("resnet50") > 3
    assert ratio("transformer") < 0.15


# --- buckets ---------------------------------------------------------------------------

def test_buckets_start_from_the_last_layer_and_close_at_the_bucket_size():
    bs = workloads.buckets("resnet50", 25 * MB)
    assert bs[0][0].name == "fc"
    assert bs[-1][-1].name == "conv1"
    sizes = [sum(layer.params for layer in b) * 4 for b in bs]
    assert all(s >= 25 * MB for s in sizes[:-1])
    # Each bucket closed at the first layer that took it over the size.
    assert all(s - b[-1].params * 4 < 25 * MB for s, b in zip(sizes, bs))
    assert sum(sizes) == workloads.params("resnet50") * 4


def test_a_layer_bigger_than_a_bucket_gets_one_of_its_own():
    bs = workloads.buckets("vgg16", 25 * MB)
    assert [layer.name for layer in bs[1]] == ["fc6"]       # 392 MiB


def test_parameterless_layers_add_compute_to_the_next_bucket():
    bs = workloads.buckets("transformer", 25 * MB)
    assert bs[0][0].name == "generator" and bs[0][0].params == 0
    assert sum(len(b) for b in bs) == len(workloads.MODELS["transformer"].layers)


# --- the program -----------------------------------------------------------------------

def test_program_scales_bytes_and_compute_by_the_same_factor():
    sc = Scale(2000)
    g = 1 / 256
    prog = workloads.program("resnet50", 1, g, 25 * MB, 1.0, sc.time_s, 16)
    real_bytes = [sum(layer.params for layer in b) * 4 for b in workloads.buckets("resnet50", 25 * MB)]
    assert all(c.nbytes % 16 == 0 and 0 <= c.nbytes - b * g < 16
               for c, b in zip(prog, real_bytes))
    fwd, bwd = workloads.iteration_compute_s("resnet50")
    # The last bucket is ready when the whole backward pass is done.
    assert prog[-1].ready_s == pytest.approx(sc.time_s((fwd + bwd) * g))
    assert prog[0].ready_s > sc.time_s(fwd * g)
    assert [c.begins_iteration for c in prog] == [True] + [False] * (len(prog) - 1)
    assert list(prog[0].layers)[0] == "fc"


def test_program_repeats_per_iteration_and_speedup_divides_compute():
    sc = Scale(2000)
    one = workloads.program("vgg16", 1, 1 / 256, 25 * MB, 1.0, sc.time_s, 16)
    three = workloads.program("vgg16", 3, 1 / 256, 25 * MB, 1.0, sc.time_s, 16)
    fast = workloads.program("vgg16", 1, 1 / 256, 25 * MB, 64.0, sc.time_s, 16)
    assert three == one * 3
    assert [c.nbytes for c in fast] == [c.nbytes for c in one]
    assert [c.ready_s * 64 for c in fast] == pytest.approx([c.ready_s for c in one])


def test_tiny_buckets_still_send_one_aligned_chunk_per_rank():
    prog = workloads.program("resnet50", 1, 1e-9, 25 * MB, 1.0, Scale(1).time_s, 64)
    assert all(c.nbytes == 64 for c in prog)


# --- the spec --------------------------------------------------------------------------

BASE = {
    "name": "train",
    "topology": {"kind": "leafspine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2},
    "jobs": [{"id": 1, "hosts": "all", "workload": "resnet50", "iterations": 2}],
}


def spec_file(tmp_path, **job):
    raw = dict(BASE, jobs=[dict(BASE["jobs"][0], **job)])
    raw["jobs"][0] = {k: v for k, v in raw["jobs"][0].items() if v is not None}
    path = tmp_path / "train.toml"
    path.write_text(to_toml(raw))
    return str(path)


def test_a_workload_job_lays_out_its_program(tmp_path):
    spec = load(spec_file(tmp_path))
    (lay,) = [layout(j, spec.topology, Scale(spec.scale.dilation).time_s) for j in spec.jobs]
    assert lay.passes == 2 * len(workloads.buckets("resnet50", 25 * MB))
    assert lay.program[0][2] is True and lay.program[4][2] is True
    assert [collective_bytes(lay, i) for i in range(lay.passes)] == [c[0] for c in lay.program]
    # Rail rings of 2 ranks: chunks of float32 -> multiples of 8 bytes.
    assert all(c[0] % 8 == 0 for c in lay.program)
    assert theoretical_cct_s(lay, 5e6, 4096, nbytes=lay.program[0][0]) < \
        theoretical_cct_s(lay, 5e6, 4096, nbytes=4 * lay.program[0][0])


@pytest.mark.parametrize("job, words", [
    ({"workload": "gpt5"}, ["jobs[0].workload = 'gpt5'", "allowed: vgg16, resnet50, transformer"]),
    ({"workload": "vgg16", "chunk_bytes": 4096}, ["jobs[0].chunk_bytes = 4096", "not with a workload"]),
    ({"workload": "vgg16", "passes": 3}, ["jobs[0].passes = 3", "give iterations"]),
    ({"workload": "vgg16", "algorithm": "ring_allgather"},
     ["jobs[0].algorithm = 'ring_allgather'", "ring_allreduce or ring2d_allreduce"]),
    ({"iterations": 0}, ["jobs[0].iterations = 0", "1..1000"]),
    ({"gradient_scale": 0}, ["jobs[0].gradient_scale = 0.0", "(0, 1]"]),
    ({"gradient_scale": 2}, ["jobs[0].gradient_scale = 2.0", "(0, 1]"]),
    ({"bucket_mb": -1}, ["jobs[0].bucket_mb = -1.0", "> 0"]),
    ({"compute_speedup": 0}, ["jobs[0].compute_speedup = 0.0", "> 0"]),
    ({"in_flight": -1}, ["jobs[0].in_flight = -1", "0..1000 (0: no limit"]),
    ({"in_flight": 2.5}, ["jobs[0].in_flight = 2.5", "must be an integer"]),
    ({"workload": None, "iterations": None, "chunk_bytes": 4096, "in_flight": 0},
     ["jobs[0].in_flight = 0", "only with a workload"]),
])
def test_bad_workload_keys_are_named(tmp_path, job, words):
    assert_spec_error(spec_file(tmp_path, **job), *words)


def test_without_a_workload_the_chunk_message_mentions_it(tmp_path):
    assert_spec_error(spec_file(tmp_path, workload=None, iterations=None),
                      "give exactly one of chunk_bytes and size_bytes (or a workload)")


def test_a_workload_on_the_2d_ring_lays_out_one_group_of_every_host(tmp_path):
    spec = load(spec_file(tmp_path, algorithm="ring2d_allreduce", grid=[2, 2]))
    (lay,) = [layout(j, spec.topology, Scale(spec.scale.dilation).time_s) for j in spec.jobs]
    assert lay.grid == ((0, 1), (2, 3)) and lay.passes == 2 * len(
        workloads.buckets("resnet50", 25 * MB))
    # aligned to the 2D ring's chunks of float32 (2 on a 2 x 2 grid), the rows and
    # columns taking part: every bucket divides evenly
    assert all(c[0] % 8 == 0 for c in lay.program)
    assert lay.schedule(0, lay.program[0][0]).steps
