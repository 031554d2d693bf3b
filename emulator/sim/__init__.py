"""The simulation backend (``--backend sim``): a spec's run on a virtual clock, with the
emulator's own protocol code -- ``hosts.nic_core`` (NIC scheduler, go-back-N, DCQCN, the
notification point), ``hosts.rank`` (the rank programs and collectives, buffers verified),
``switch_agent.pipeline`` (queue model, RED, Symphony, PQ) -- moving real packets over a
simulated fabric (:mod:`emulator.sim.network`). No root, no namespaces, no sockets; times
at the plan's emulated scale, so they compare with emulated runs directly.

:func:`emulator.sim.run.run_sim` writes the same run folder the emulator writes
(``"backend": "sim"``), so ``report``, the plots and the exports read it unchanged.
"""
