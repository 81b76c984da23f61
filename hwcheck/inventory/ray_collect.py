"""Collect reports from every alive node of a Ray cluster: one probe task pinned to each node."""

from __future__ import annotations

import logging
import socket
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.numbers import parse_whole
from hwcheck.inventory.merge import Merger
from hwcheck.inventory.reports import report_problem

CONNECT_SECONDS = 5.0
MAX_PORT = 65535

# The set-up form of README.md and docs/inventory.md: hwcheck is installed from a checkout, not from an index.
RAY_INSTALL = "pip install '.[ray]' (from a checkout of hwcheck)"


def collect_from_ray(
    merger: Merger, address: str, *, node_timeout: float = 120.0, probe_timeout: float = 5.0
) -> None:
    """Probe each alive node once (node affinity, not soft) and add its report to `merger`.

    A node that fails, or gives no report within `node_timeout` seconds, is rejected
    with the reason; the others are merged. Connects to the cluster at `address` unless
    this process is already a Ray driver, and disconnects afterwards only if it connected.
    """
    ray = _import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    connected_here = not ray.is_initialized()
    if connected_here:
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise InputError(f"ray {address}", f"cannot join the Ray cluster: {_one_line(error)}") from None
    try:
        probe = ray.remote(num_cpus=0, max_retries=0)(probe_node)
        pending = {}
        for node in sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: n["NodeID"]):
            pinned = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            pending[probe.options(scheduling_strategy=pinned).remote(probe_timeout)] = node
        if not pending:
            raise InputError(f"ray {address}", "the cluster has no alive node")
        # The tasks run side by side, so one deadline is each node's timeout.
        ready, late = ray.wait(list(pending), num_returns=len(pending), timeout=node_timeout)
        for ref in ready:
            node = pending[ref]
            try:
                answer = ray.get(ref)
            except ray.exceptions.RayError as error:
                merger.reject(_source(node), f"probe failed: {_task_failure(error)}")
                continue
            _add_answer(merger, node, answer)
        for ref in late:
            ray.cancel(ref, force=True)
            merger.reject(_source(pending[ref]), f"no report within {node_timeout:g} s")
    finally:
        if connected_here:
            ray.shutdown()


def probe_node(probe_timeout: float) -> dict[str, Any]:
    """Runs on a Ray node: probe it, recommend, and return the stamped report and node id."""
    import ray

    from hwcheck.facts.identity import machine_fingerprint, read_machine_id
    from hwcheck.probes import collect
    from hwcheck.recommendation import recommend
    from hwcheck.render.report import build_report, this_host

    collected = collect(timeout=probe_timeout)
    recommendation = recommend(collected.facts, probes=collected.statuses)
    fingerprint = machine_fingerprint(collected.facts, read_machine_id())
    report = build_report(
        collected.facts,
        collected.statuses,
        recommendation,
        stamped=True,
        host=this_host(),
        fingerprint=fingerprint,
    )
    return {"node_id": ray.get_runtime_context().get_node_id(), "report": report}


def _add_answer(merger: Merger, node: dict[str, Any], answer: dict[str, Any]) -> None:
    source = _source(node)
    if answer.get("node_id") != node["NodeID"]:
        merger.reject(source, f"the probe ran on node {answer.get('node_id')}, not this one")
        return
    problem = report_problem(answer.get("report"))
    if problem:
        merger.reject(source, problem)
    else:
        merger.add(answer["report"], source, node_id=node["NodeID"])


def _check_reachable(address: str) -> None:
    # ray.init retries an unreachable GCS for minutes; a typo in the address should fail fast.
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isascii() or not port.isdigit():
        return  # "auto" or a form Ray resolves itself
    number = parse_whole(port, f"ray {address}: the port", maximum=MAX_PORT)
    try:
        socket.create_connection((host.strip("[]"), number), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        raise InputError(
            f"ray {address}",
            f"cannot join the Ray cluster: nothing answers there ({error.strerror or error})",
        ) from None


def _source(node: dict[str, Any]) -> str:
    return f"ray node {node['NodeID']} ({node.get('NodeManagerAddress', '?')})"


def _task_failure(error: Exception) -> str:
    cause = getattr(error, "cause", None)
    if isinstance(cause, ModuleNotFoundError):
        return f"{cause} (is hwcheck installed there with {RAY_INSTALL}?)"
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {_one_line(cause)}"
    return f"{type(error).__name__}: {_one_line(error)}"


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--ray", f"Ray is not installed: {RAY_INSTALL} on every node") from None
    return ray
