"""One-switch dumbbell: N hosts on a single switch (small experiments, e.g. Fig 9's two
flows through one port).

    sudo mn --custom topologies/dumbbell.py --topo dumbbell,3 --controller none

It is the leaf-spine plan with one leaf and no spines: hosts h0..h(N-1) at 10.0.i.2.
"""

import inspect
import os
import sys

if __package__ in (None, ""):   # loaded by `mn --custom` (no __file__): find the project
    _here = inspect.currentframe().f_code.co_filename
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(_here))))

from topologies.leafspine import LeafSpineTopo  # noqa: E402


class DumbbellTopo(LeafSpineTopo):
    def build(self, hosts=3, **opts):
        super().build(leaves=1, spines=0, hosts_per_leaf=hosts, **opts)


def dumbbell(hosts=3):
    """`mn --topo dumbbell,N`"""
    return DumbbellTopo(int(hosts))


topos = {"dumbbell": dumbbell}
