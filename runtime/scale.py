"""Emulation scale (time dilation), docs/architecture.md §7. The one module that converts.

Python on a couple of cores cannot forward the paper's 10 Gbps, so the emulator runs
the same network D times slower: link rates are divided by D and every protocol timer
(Symphony's T_win, DCQCN's timers, CNP interval, ...) is multiplied by D. Byte
quantities (queue thresholds, buffers, MTU) stay as they are, so queues hold the same
packets and every bandwidth-delay product is unchanged. Nothing else multiplies by D:
code that needs an emulated value asks a :class:`Scale`.

With the default D = 1000: 10 Gbps -> 10 Mbps, 100 µs -> 100 ms, 50 µs -> 50 ms.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DILATION = 1000.0
# The dilations a run may use: at 1e-3 a 10 Gb/s link would be emulated at 10 Tb/s, at 1e7
# at 1 kb/s (a 4 KB frame every 33 s); ``[scale] dilation`` reads them from here.
MIN_DILATION, MAX_DILATION = 1e-3, 1e7

# Real-scale reference values (paper Table 1; docs/architecture.md §3.2): the defaults of
# the spec's link rate and of DCQCN's notification point, declared here once.
PAPER_LINK_RATE_BPS = 10e9
CNP_INTERVAL_S = 50e-6


@dataclass(frozen=True)
class Scale:
    dilation: float = DEFAULT_DILATION

    def __post_init__(self):
        if not MIN_DILATION <= self.dilation <= MAX_DILATION:     # NaN too
            raise ValueError(f"dilation must be in [{MIN_DILATION:g}, {MAX_DILATION:g}], "
                             f"got {self.dilation}")

    def rate_bps(self, real_rate_bps: float) -> float:
        """Emulated rate of a real-scale rate."""
        return real_rate_bps / self.dilation

    def time_s(self, real_time_s: float) -> float:
        """Emulated duration of a real-scale duration."""
        return real_time_s * self.dilation

    def real_time_s(self, emulated_time_s: float) -> float:
        """Real-scale duration of an emulated one (for reporting next to the paper)."""
        return emulated_time_s / self.dilation

    def real_rate_bps(self, emulated_rate_bps: float) -> float:
        return emulated_rate_bps * self.dilation


DEFAULT = Scale()
