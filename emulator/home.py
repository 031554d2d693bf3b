"""Where the project's own files are -- the specs in ``runs/``, the output folders under
``runs/out/``, ``docs/``: in the checkout the code runs from (the README's set-up installs
it editable), or, for a package installed with ``pip install .`` or from a wheel, in the
folder the command runs in (docs/usage.md, "The simulator alone")."""

from __future__ import annotations

import os

from topologies.wiring import REPO_ROOT


def root() -> str:
    """The checkout if the code runs from one (it has ``runs/``), else the working folder."""
    return REPO_ROOT if os.path.isdir(os.path.join(REPO_ROOT, "runs")) else os.getcwd()


def path(*parts: str) -> str:
    """``parts`` under :func:`root`."""
    return os.path.join(root(), *parts)
