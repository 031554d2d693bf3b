"""The multi-pod fabric plan (pure: the Topo graph and the route tables, no network):
port names match Mininet's numbering, every host reaches every other over loop-free
paths, the core links run at the oversubscribed rate, and the spec keys are checked."""

import ipaddress
import itertools

import pytest

from emulator import plan as planning
from emulator.spec import load
from tests.toml_util import assert_spec_error, to_toml
from topologies import wiring
from topologies.leafspine import LeafSpineTopo
from topologies.wiring import neighbors, switch_names

SHAPES = [(2, 2, 2, 2, 2), (3, 2, 1, 2, 1), (2, 4, 4, 1, 4)]   # pods, leaves, spines, hpl, cores


def build(pods, leaves, spines, hpl, cores, **kw):
    return LeafSpineTopo(leaves, spines, hpl, pods=pods, cores=cores, with_agent=False, **kw)


@pytest.mark.parametrize("pods,leaves,spines,hpl,cores", SHAPES)
def test_port_toward_matches_mininets_port_numbers(pods, leaves, spines, hpl, cores):
    topo = build(pods, leaves, spines, hpl, cores)
    for a, b in topo.links():
        pa, pb = topo.port(a, b)
        for x, y, p in ((a, b, pa), (b, a, pb)):
            if x.startswith("h"):
                continue
            assert wiring.port_toward(x, y, hpl, leaves, spines) == f"{x}-eth{p}", (x, y)


def _owner_of(topo) -> dict:
    """Interface address -> node, from the links' parameters."""
    out = {}
    for a, b, info in topo.links(withInfo=True):
        for node, key in ((a, "params1"), (b, "params2")):
            ip = info.get(key, {}).get("ip")
            if ip:
                out[ip.split("/")[0]] = node
    return out


def _lookup(routes, dst):
    best = None
    for prefix, hops in routes:
        net = ipaddress.ip_network(prefix)
        if ipaddress.ip_address(dst) in net and (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, hops)
    return best[1] if best else []


@pytest.mark.parametrize("pods,leaves,spines,hpl,cores", SHAPES)
def test_every_host_reaches_every_other_over_loop_free_paths(pods, leaves, spines, hpl, cores):
    topo = build(pods, leaves, spines, hpl, cores)
    owner = _owner_of(topo)
    hosts = [h for h in topo.hosts()]
    for src, dst in itertools.permutations(hosts, 2):
        dst_ip = topo.nodeInfo(dst)["ip"].split("/")[0]
        dst_leaf = wiring.leaf_name(int(dst[1:]) // hpl)
        src_leaf = wiring.leaf_name(int(src[1:]) // hpl)
        frontier, seen, paths = [src_leaf], set(), 0
        while frontier:                      # every ECMP branch
            node = frontier.pop()
            if node == dst_leaf:
                paths += 1
                continue
            assert node not in seen or node.startswith("core") or node.startswith("spine"), node
            seen.add(node)
            hops = _lookup(topo.nodeInfo(node)["routes"], dst_ip)
            assert hops, f"{node} has no route to {dst} ({dst_ip})"
            nxt = [owner[h] for h in hops]
            assert all(n not in (src_leaf,) for n in nxt), "a path turns back"
            frontier += nxt
        same_pod = int(src_leaf[4:]) // leaves == int(dst_leaf[4:]) // leaves
        expected = 1 if src_leaf == dst_leaf else spines if same_pod else spines * cores * spines
        assert paths == expected, (src, dst, paths)


def test_core_links_run_at_the_oversubscribed_rate():
    topo = build(2, 4, 2, 2, 2, rate_bps=8e6, oversubscription=4.0)
    # A spine has 4 leaf links of 8 Mb/s; 2 core links at 4 Mb/s make it 4:1.
    spine = topo.nodeInfo("spine1")["port_rate_bps"]
    assert spine == {"spine1-eth5": 4e6, "spine1-eth6": 4e6}
    core = topo.nodeInfo("core0")["port_rate_bps"]
    assert core == {f"core0-eth{g + 1}": 4e6 for g in range(4)}
    assert topo.nodeInfo("leaf0")["port_rate_bps"] is None


@pytest.mark.parametrize("kw, message", [
    (dict(pods=2, cores=0), "at least one core"),
    (dict(pods=2, cores=1, routing="static"), "ecmp only"),
    (dict(pods=0, cores=1), "pods must be in 1..16"),
    (dict(pods=2, cores=1, oversubscription=0), "oversubscription must be > 0"),
])
def test_bad_shapes_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        LeafSpineTopo(2, 2, 2, with_agent=False, **kw)


# --- the spec --------------------------------------------------------------------------

BASE = {"name": "mp", "topology": {"kind": "leafspine", "pods": 2, "leaves": 2, "spines": 2,
                                   "hosts_per_leaf": 2, "cores": 2, "oversubscription": 2.0},
        "jobs": [{"id": 1, "hosts": "all", "chunk_bytes": 4096}]}


def spec_file(tmp_path, **topo):
    raw = dict(BASE, topology=dict(BASE["topology"], **topo))
    path = tmp_path / "mp.toml"
    path.write_text(to_toml(raw))
    return str(path)


def test_a_multipod_spec_has_every_pods_hosts_and_switches(tmp_path):
    spec = load(spec_file(tmp_path))
    t = spec.topology
    assert t.host_names == [f"h{i}" for i in range(8)]
    assert switch_names(t) == ["leaf0", "leaf1", "leaf2", "leaf3", "spine0", "spine1",
                               "spine2", "spine3", "core0", "core1"]
    assert neighbors(t, "spine2") == ["leaf2", "leaf3", "core0", "core1"]
    assert neighbors(t, "core1") == ["spine0", "spine1", "spine2", "spine3"]
    assert neighbors(t, "leaf3") == ["h6", "h7", "spine2", "spine3"]
    assert planning.port_toward(spec, "spine2", "core1") == "spine2-eth4"
    assert planning.port_toward(spec, "leaf3", "spine3") == "leaf3-eth4"


def test_a_perturbation_on_a_core_link_is_accepted(tmp_path):
    raw = dict(BASE, perturbations=[{"kind": "imbalance", "switch": "spine0", "toward": "core1",
                                     "ratio": 1.2}])
    path = tmp_path / "p.toml"
    path.write_text(to_toml(raw))
    spec = load(str(path))
    assert planning.compile(spec, "baseline", 1).fabric.port_rates == {"spine0": {"spine0-eth4": 10e9 / 1000 / 1.2}}


@pytest.mark.parametrize("topo, words", [
    ({"cores": 0}, ["topology.cores = 0", ">= 1 with several pods"]),
    ({"pods": 17}, ["topology.pods = 17", "1..16"]),
    ({"routing": "static"}, ["topology.routing = 'static'", "ecmp only"]),
    ({"oversubscription": 0}, ["topology.oversubscription = 0.0", "must be > 0"]),
    ({"kind": "dumbbell"}, ["topology.pods = 2", "leafspine only"]),
])
def test_bad_multipod_keys_are_named(tmp_path, topo, words):
    assert_spec_error(spec_file(tmp_path, **topo), *words)
