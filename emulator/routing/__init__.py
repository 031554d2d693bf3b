"""The fabric as the backends that route flows themselves see it: its links and the
kernel's equal-cost routes (``graph``), and the ECMP hash that picks among them
(``ecmp``). The flow-level model (``emulator.model``) and the simulation
(``emulator.sim``) both stand on it; neither reaches into the other for it."""
