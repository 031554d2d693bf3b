"""The ground floor: what a host process and a switch process both stand on
(docs/architecture.md §1). The wire format (``wire``), the emulation scale (``scale``),
the one telemetry writer and reader (``telemetry``), the one codec of every process's
typed configuration (``codec``), prompt wake-ups and CPU pinning (``sched``) and sockets
in another network namespace (``netns``). Nothing here imports from the floors above
it: ``hosts``, ``switch_agent``, ``emulator``, ``topologies``.
"""

from runtime import compiled as _compiled

_compiled.install()     # before any module it compiles is imported (runtime/compiled.py)
