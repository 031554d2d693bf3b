"""Transport profiles: a name for a set of spec settings, each of them an ordinary key.

``profile = "hpcc"`` at a spec's top level, or ``--set profile=hpcc``, applies the
profile's settings at that point, as if each were a ``--set`` item: keys the file sets
are overridden, ``--set`` items after it override the profile. So every item can be
ablated on its own (``--set profile=hpcc --set transport.ack_every=8``).

``zhu``: what every result in the dated journal (journal@827c2ab) measured before issue 19 ran (Zhu et
al.'s DCQCN with the paper's text's thresholds); the same keys as ``hpcc``.

``hpcc``: the paper ran its simulations with "the RDMA configuration of HPCC" (its ref.
[46], the HPCC ns-3 simulator). Each setting below names the file and function of that
simulator's code it follows (simulation/src/point-to-point/model/ and simulation/run.py
with ``--cc dcqcn``). The profile leaves the fabric as the spec has it: HPCC's lossless
PFC over a shared switch buffer is ``topology.flow_control = "pfc"`` (both backends;
docs/architecture.md §5.6), its default drop-tail ports with every run counting its
drops. What it cannot give: marking at dequeue (HPCC's switch decides on the bytes a
packet leaves behind, ours on the backlog it finds).
"""

from __future__ import annotations

# (key, value, where HPCC ns-3 has it)
HPCC = (
    ("dcqcn.variant", "mlx",
     "rdma-hw.cc: the Mellanox-style reaction point is the only DCQCN it runs"),
    ("dcqcn.clamp_target_rate", False,
     "rdma-hw.cc CheckRateDecreaseMlx with CLAMP_TARGET_RATE 0 (run.py)"),
    ("dcqcn.first_cut_at_once", False,
     "rdma-hw.cc cnp_received_mlx: the first decrease check a decrease interval later"),
    ("dcqcn.min_rate_gbps", 1.0, "run.py: the minimum rate, 1 Gb/s"),
    ("transport.congestion_flag", "ack",
     "rdma-hw.cc ReceiveUdp: the ACK of an ECN-marked packet carries the congestion flag"),
    ("transport.ack_every", 1, "run.py: L2_ACK_INTERVAL 1, an ACK per packet"),
    ("switch.kmin_bytes", 40000, "run.py: Kmin 100 KB x bw/25 Gb/s, at 10 Gb/s"),
    ("switch.kmax_bytes", 160000, "run.py: Kmax 400 KB x bw/25 Gb/s, at 10 Gb/s"),
    ("switch.red_scale_with_rate", True,
     "run.py: Kmin/Kmax set per port from its bandwidth (a slower port, lower thresholds)"),
)

# The transport every figure in the dated journal (journal@827c2ab) was measured with before the paper's specs
# moved to "hpcc" (issue 19): Zhu et al.'s DCQCN, a CNP per flow per 50 µs at most, an
# ACK every 8 packets, the paper's text's RED thresholds on every port. The same keys as
# "hpcc", so either profile undoes the other.
ZHU = (
    ("dcqcn.variant", "paper", "Zhu et al., SIGCOMM'15: cut on every CNP, byte counter"),
    ("dcqcn.clamp_target_rate", True, "mlx only: Rt <- Rc on every cut"),
    ("dcqcn.first_cut_at_once", True, "mlx only: the first CNP's decrease check is now"),
    ("dcqcn.min_rate_gbps", 0.1, "Rmin 100 Mb/s"),
    ("transport.congestion_flag", "cnp", "a CNP per flow per 50 µs at most (Zhu et al.)"),
    ("transport.ack_every", 8, "an ACK every 8 packets"),
    ("switch.kmin_bytes", 50000, "the paper's text (§4.1)"),
    ("switch.kmax_bytes", 100000, "the paper's text (§4.1)"),
    ("switch.red_scale_with_rate", False, "the same thresholds on every port"),
)

PROFILES = {"hpcc": HPCC, "zhu": ZHU}


def overrides(name: str) -> list[str]:
    """The profile's settings as ``--set`` items (KeyError if there is no such profile)."""
    return [f"{key}={_toml(value)}" for key, value, _ in PROFILES[name]]


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)
