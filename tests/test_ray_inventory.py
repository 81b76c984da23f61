"""`hwcheck inventory --ray`: a real local Ray cluster of three nodes, every node probed once."""

from __future__ import annotations

import json
import os
import socket

import pytest

from conftest import ROOT
from hwcheck.cli import main

ray = pytest.importorskip("ray")

# Small enough for a 2-core CI machine: one CPU and Ray's 75 MB store minimum (plus a
# little) per node, each node told apart by its own custom resource.
NODE = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024}


@pytest.fixture(scope="module")
def ray_cluster():
    """A head and two worker nodes on this machine; hwcheck importable by their workers."""
    from ray.cluster_utils import Cluster

    with pytest.MonkeyPatch.context() as patch:
        # Raylets pass their environment on to the workers that run the probe.
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        cluster = Cluster(
            initialize_head=True,
            head_node_args={**NODE, "resources": {"hwcheck_node_0": 1}, "include_dashboard": False},
        )
        try:
            for number in (1, 2):
                cluster.add_node(**NODE, resources={f"hwcheck_node_{number}": 1})
            cluster.wait_for_nodes()
            yield cluster
        finally:
            if ray.is_initialized():
                ray.shutdown()
            cluster.shutdown()


def test_every_node_of_the_cluster_is_probed_and_merged(ray_cluster, capsys):
    status = main(["inventory", "--ray", ray_cluster.address, "--json"])
    document = json.loads(capsys.readouterr().out)
    assert status == 0, document["rejected"]
    members = [m for c in document["classes"] for m in c["members"]]
    assert {m["node_id"] for m in members} == {n.node_id for n in ray_cluster.list_all_nodes()}
    assert len(members) == 3 and document["summary"]["nodes"] == 3
    # Three Ray nodes on one machine share its host name: the node id keeps them apart.
    assert {m["host"] for m in members} == {socket.gethostname()}
    assert document["summary"]["superseded"] == 0
    (node_class,) = document["classes"]
    assert node_class["policy"] in ("mixed_bfloat16", "float32", "mixed_float16")
    assert document["cluster"]["policy"] == node_class["policy"]
    assert not ray.is_initialized()  # it connected, so it disconnected


def test_nodes_that_miss_the_deadline_are_listed_as_failed(ray_cluster, capsys):
    status = main(["inventory", "--ray", ray_cluster.address, "--json", "--node-timeout", "0.001"])
    document = json.loads(capsys.readouterr().out)
    assert status == 1
    assert document["summary"]["nodes"] == 0
    reasons = {r["source"]: r["reason"] for r in document["rejected"]}
    assert len(reasons) == 3
    assert set(reasons.values()) == {"no report within 0.001 s"}
    for node in ray_cluster.list_all_nodes():
        assert any(node.node_id in source for source in reasons)


def test_no_cluster_at_the_address_is_bad_input(capsys):
    status = main(["inventory", "--ray", "127.0.0.1:1", "--json", "--node-timeout", "5"])
    assert status == 2
    assert "cannot join the Ray cluster" in capsys.readouterr().err
