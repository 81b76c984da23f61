"""Collect reports from every alive node of a Ray cluster: one probe task pinned to each node."""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

from hwcheck.base.errors import InputError
from hwcheck.base.inputs import MAX_DOCUMENT_BYTES, parse_json
from hwcheck.base.numbers import parse_whole
from hwcheck.inventory.merge import Merger
from hwcheck.inventory.reports import report_problem, short_repr

CONNECT_SECONDS = 5.0
MAX_PORT = 65535
# Ray's node ids are 28 bytes written in hex (56 characters); an address is an IP or a host name.
MAX_NODE_ID = 128
MAX_ADDRESS = 255
# The longest reason a node's failure adds to the inventory: a task's error text can be megabytes.
MAX_REASON = 300

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
        for node in _alive_nodes(merger, ray.nodes()):
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


def _alive_nodes(merger: Merger, nodes: Any) -> list[dict[str, Any]]:
    """The alive nodes of `ray.nodes()` by id; an entry that is no node Ray describes is rejected."""
    if not isinstance(nodes, list):
        merger.reject("ray nodes", f"Ray listed its nodes as {type(nodes).__name__}, not a list")
        return []
    alive = []
    for number, node in enumerate(nodes):
        problem = _node_problem(node)
        if problem:
            merger.reject(f"ray node #{number}", problem)
        elif node.get("Alive") is True:
            alive.append(node)
    return sorted(alive, key=lambda node: node["NodeID"])


def _node_problem(node: Any) -> str | None:
    if not isinstance(node, dict):
        return f"Ray described the node as {type(node).__name__}, not a mapping"
    node_id = node.get("NodeID")
    if not _is_node_id(node_id):
        return f"the node id {short_repr(node_id, 40)} is not a Ray node id (hex digits)"
    address = node.get("NodeManagerAddress", "?")
    if not isinstance(address, str) or not address.isprintable() or not 0 < len(address) <= MAX_ADDRESS:
        return f"the node address {short_repr(address, 40)} is not an IP address or host name"
    return None


def _is_node_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_NODE_ID
        and value.isascii()
        and all(char in "0123456789abcdefABCDEF" for char in value)
    )


def _add_answer(merger: Merger, node: dict[str, Any], answer: Any) -> None:
    """Check a node's answer as a report is checked before anything reads it, then merge or reject it."""
    source = _source(node)
    if type(answer) is not dict:  # not a subclass: nothing of the answer's own runs here
        merger.reject(source, f"the probe answered {type(answer).__name__}, not a report and node id")
        return
    node_id = answer.get("node_id")
    if not _is_node_id(node_id):
        merger.reject(source, f"the probe answered the node id {short_repr(node_id, 40)}, not a Ray node id")
        return
    if node_id != node["NodeID"]:
        merger.reject(source, f"the probe ran on node {node_id}, not this one")
        return
    try:
        report = _as_json(answer.get("report"))
    except InputError as error:
        merger.reject(source, _bounded(f"the report is not a JSON document: {error.problem}"))
        return
    problem = report_problem(report)
    if problem:
        merger.reject(source, _bounded(problem))
    else:
        merger.add(report, source, node_id=node["NodeID"])


def _as_json(value: Any) -> Any:
    """`value` through JSON text and back, as a report file would be read: plain JSON values only.

    Ray hands back whatever the node's Python pickled (a set, bytes, a tuple, a dict subclass,
    a 5,000-digit number); written and read again it is a document like any report file, with
    the same limits, or an InputError.
    """
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False, check_circular=True)
    except (TypeError, ValueError, RecursionError) as error:
        raise InputError("the answer", _one_line(error)) from None
    if len(text) > MAX_DOCUMENT_BYTES:
        raise InputError("the answer", f"larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MB")
    return parse_json(text, "the answer")


def _check_reachable(address: str) -> None:
    # ray.init retries an unreachable GCS for minutes; a typo in the address should fail fast.
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isascii() or not port.isdigit():
        return  # "auto" or a form Ray resolves itself
    number = parse_whole(port, f"ray {address}: the port", maximum=MAX_PORT)
    try:
        socket.create_connection((host.strip("[]"), number), timeout=CONNECT_SECONDS).close()
    except UnicodeError:
        # A label longer than 63 characters (or empty) fails the IDNA encoding of the host name.
        raise InputError(
            f"ray {short_repr(address)}", "cannot join the Ray cluster: the host name is not a valid DNS name"
        ) from None
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
        return _bounded(f"{_one_line(cause)} (is hwcheck installed there with {RAY_INSTALL}?)")
    if isinstance(cause, BaseException):
        return _bounded(f"{type(cause).__name__}: {_one_line(cause)}")
    return _bounded(f"{type(error).__name__}: {_one_line(error)}")


def _one_line(error: BaseException) -> str:
    """The last line of the error's text (a traceback ends with the error), at most MAX_REASON characters."""
    try:
        # Only the tail is read: a task's error carries its remote traceback, and can be megabytes.
        text = str(error)[-MAX_REASON * 16 :]
    except Exception:
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _bounded(lines[-1]) if lines else type(error).__name__


def _bounded(text: str) -> str:
    """`text` as one printable line of at most MAX_REASON characters."""
    line = "".join(char if char.isprintable() else "?" for char in " ".join(text[: MAX_REASON * 4].split()))
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 3] + "..."


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("--ray", f"Ray is not installed: {RAY_INSTALL} on every node") from None
    return ray
