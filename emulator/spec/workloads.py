"""Data-parallel training workloads (paper §4.4, Table 2 and Fig 6): every iteration is a
forward pass, then a backward pass during which gradient buckets are all-reduced as soon as
all their layers' gradients exist (PyTorch DDP's scheme), one all-reduce at a time.

The models are built from their public definitions, layer by layer, so the parameter count
(= gradient bytes / 4) and the forward FLOPs of every layer are computed, not copied:

* ``vgg16``       Simonyan & Zisserman, arXiv:1409.1556, configuration D (224x224 input):
                  13 3x3 convolutions and 3 fully connected layers, 138.4 M parameters.
* ``resnet50``    He et al., arXiv:1512.03385, Table 1, "50-layer" (bottleneck blocks
                  [3, 4, 6, 3], stride on the 3x3 convolution as torchvision's v1.5,
                  batch-norm scale and shift counted), 25.6 M parameters.
* ``transformer`` Vaswani et al., arXiv:1706.03762, "base" (d_model 512, d_ff 2048, 8 heads,
                  6 encoder + 6 decoder layers, 37000-token shared and tied embedding),
                  63 M parameters (the paper's 65 M counts the embedding differently).

Compute time of a layer = its FLOPs x batch / device FLOP/s; the backward pass costs twice
the forward. Defaults per model (``MODELS``) are documented there; ``compute_speedup``
divides every compute time (Fig 6: faster accelerators, the same network).

Scaling to the emulator (docs/architecture.md §7): the emulated network is ``dilation`` times slower,
and a workload sends ``gradient_scale`` of the real gradient bytes. A real transfer of B
bytes that takes B / R seconds takes B g D / R emulated seconds, so every real compute
time is multiplied by g D as well: the ratio of communication to computation, which is
what decides how much Symphony can win (Fig 6), is the real one.

This module is pure: no clock, no I/O. ``program()`` returns the collectives of one job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    name: str
    params: int            # parameters (gradient elements)
    fwd_flops: float       # forward FLOPs for one sample (multiply-add = 2)


@dataclass(frozen=True)
class Model:
    name: str
    source: str
    layers: tuple          # in forward order
    batch_per_rank: int    # samples (sequences for the Transformer) per rank and iteration
    device_tflops: float   # sustained FLOP/s of one accelerator, in 1e12


@dataclass(frozen=True)
class Collective:
    """One gradient all-reduce of a program."""
    nbytes: int            # bytes per rank, emulated
    ready_s: float         # earliest start, emulated seconds after its iteration started
    begins_iteration: bool  # the first collective of an iteration
    layers: tuple          # names of the layers whose gradients it carries


def _conv(name, c_in, c_out, k, out_hw, bias=True, bn=False) -> Layer:
    params = k * k * c_in * c_out + (c_out if bias else 0) + (2 * c_out if bn else 0)
    return Layer(name, params, 2.0 * k * k * c_in * c_out * out_hw * out_hw)


def _fc(name, n_in, n_out) -> Layer:
    return Layer(name, n_in * n_out + n_out, 2.0 * n_in * n_out)


def vgg16_layers() -> tuple:
    cfg = [(64, 224), (64, 224), (128, 112), (128, 112), (256, 56), (256, 56), (256, 56),
           (512, 28), (512, 28), (512, 28), (512, 14), (512, 14), (512, 14)]
    layers, c_in = [], 3
    for i, (c_out, hw) in enumerate(cfg):
        layers.append(_conv(f"conv{i + 1}", c_in, c_out, 3, hw))
        c_in = c_out
    return tuple(layers + [_fc("fc6", 512 * 7 * 7, 4096), _fc("fc7", 4096, 4096),
                           _fc("fc8", 4096, 1000)])


def resnet50_layers() -> tuple:
    layers = [_conv("conv1", 3, 64, 7, 112, bias=False, bn=True)]
    c_in = 64
    for stage, (width, blocks, hw) in enumerate([(64, 3, 56), (128, 4, 28), (256, 6, 14),
                                                 (512, 3, 7)]):
        for b in range(blocks):
            p = f"layer{stage + 1}.{b}"
            # The first block of stages 2-4 halves the size on its 3x3 convolution, so
            # its 1x1 reduction still runs at the previous stage's size.
            in_hw = hw * 2 if (b == 0 and stage > 0) else hw
            layers.append(_conv(f"{p}.conv1", c_in, width, 1, in_hw, bias=False, bn=True))
            layers.append(_conv(f"{p}.conv2", width, width, 3, hw, bias=False, bn=True))
            layers.append(_conv(f"{p}.conv3", width, 4 * width, 1, hw, bias=False, bn=True))
            if b == 0:
                layers.append(_conv(f"{p}.downsample", c_in, 4 * width, 1, hw, bias=False,
                                    bn=True))
            c_in = 4 * width
    return tuple(layers + [_fc("fc", 2048, 1000)])


def transformer_layers(seq_len: int = 512) -> tuple:
    """Per-sequence FLOPs: 2 x params x tokens for every matrix product plus the attention
    scores and their weighted sum (2 x 2 x seq_len^2 x d_model per attention block)."""
    d, ff, vocab = 512, 2048, 37000
    attn_params = 4 * (d * d + d)
    ffn_params = d * ff + ff + ff * d + d
    ln = 2 * d
    attn_scores = 4.0 * seq_len * seq_len * d

    def block(name, params, score_blocks):
        return Layer(name, params, 2.0 * params * seq_len + score_blocks * attn_scores)

    layers = [Layer("embedding", vocab * d, 0.0)]   # a lookup: no FLOPs
    layers += [block(f"encoder{i}", attn_params + ffn_params + 2 * ln, 1) for i in range(6)]
    layers += [block(f"decoder{i}", 2 * attn_params + ffn_params + 3 * ln, 2) for i in range(6)]
    # Output projection, tied to the embedding: FLOPs, but no parameters of its own.
    layers.append(Layer("generator", 0, 2.0 * vocab * d * seq_len))
    return tuple(layers)


# Defaults: a V100-class accelerator at a sustained 30 TFLOP/s (mixed precision). CNNs
# train with 32 images per rank (ImageNet): communication-bound on 10 Gbps links (VGG16's
# lockstep all-reduce takes 7x its compute, ResNet-50's 5x). The Transformer takes 512
# sequences of 512 tokens per rank, so it is compute-bound (communication is 8 % of a
# lockstep iteration), as the paper's Transformer, where Symphony changes JCT by 0.07 %.
MODELS = {
    "vgg16": Model("vgg16", "Simonyan & Zisserman, arXiv:1409.1556 (configuration D)",
                   vgg16_layers(), 32, 30.0),
    "resnet50": Model("resnet50", "He et al., arXiv:1512.03385 (Table 1, 50-layer)",
                      resnet50_layers(), 32, 30.0),
    "transformer": Model("transformer", "Vaswani et al., arXiv:1706.03762 (base)",
                         transformer_layers(), 512, 30.0),
}
WORKLOAD_NAMES = tuple(MODELS)
BYTES_PER_PARAM = 4        # fp32 gradients


def params(model: str) -> int:
    return sum(layer.params for layer in MODELS[model].layers)


def buckets(model: str, bucket_bytes: int) -> list[list[Layer]]:
    """Layers grouped into all-reduce buckets in the order their gradients appear in the
    backward pass (last layer first). A bucket closes once it holds ``bucket_bytes`` (a
    layer bigger than that gets a bucket of its own), as DDP does."""
    out, cur, size = [], [], 0
    for layer in reversed(MODELS[model].layers):
        cur.append(layer)           # a layer without parameters adds compute time only
        size += layer.params * BYTES_PER_PARAM
        if size >= bucket_bytes:
            out.append(cur)
            cur, size = [], 0
    if cur:
        out.append(cur)
    return out


def iteration_compute_s(model: str, compute_speedup: float = 1.0) -> tuple[float, float]:
    """(forward, backward) compute seconds of one iteration at real scale."""
    m = MODELS[model]
    fwd = sum(layer.fwd_flops for layer in m.layers) * m.batch_per_rank / (m.device_tflops * 1e12)
    return fwd / compute_speedup, 2 * fwd / compute_speedup


def program(model: str, iterations: int, gradient_scale: float, bucket_bytes: int,
            compute_speedup: float, time_s, align_bytes: int) -> tuple[Collective, ...]:
    """The collectives of ``iterations`` training iterations.

    ``time_s`` converts real-scale seconds to emulated seconds (the scale's dilation);
    compute times are also multiplied by ``gradient_scale`` (see the module docstring).
    Each bucket's bytes are scaled and rounded up to a multiple of ``align_bytes`` (the
    ring needs equal float32 chunks). A bucket may start once the backward pass has
    produced all its gradients: forward + the backward time of every layer from the last
    one down to the bucket's first layer."""
    m = MODELS[model]
    per_sample = m.batch_per_rank / (m.device_tflops * 1e12) / compute_speedup

    def emulated(real_s: float) -> float:
        return time_s(real_s * gradient_scale)

    fwd_s, _ = iteration_compute_s(model, compute_speedup)
    one = []
    backward_s = 0.0
    for i, bucket in enumerate(buckets(model, bucket_bytes)):
        backward_s += sum(2 * layer.fwd_flops * per_sample for layer in bucket)
        real = sum(layer.params for layer in bucket) * BYTES_PER_PARAM
        nbytes = max(align_bytes, math.ceil(real * gradient_scale / align_bytes) * align_bytes)
        one.append(Collective(nbytes, emulated(fwd_s + backward_s), i == 0,
                              tuple(layer.name for layer in bucket)))
    return tuple(one) * iterations
