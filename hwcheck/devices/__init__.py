"""Devices: one plug-in per vendor family, and the devices a training process will see.

Each plug-in (record.Plugin) owns its vendor: which of its devices the process sees after
the vendor's visibility variables (`visible`), the variables of its rule namespaces
(`variables`), what it infers into the facts (`complete`) and its doctor row. The engine
builds the vendor namespaces by looping over PLUGINS; fit, config, nfd and inventory read
`Device` records from `visible`. A new vendor is a module with a PLUGIN, registered here
(or, from outside the package, with `register`).
"""

from __future__ import annotations

from hwcheck.devices import accelerators, amd, apple, intel, nvidia, tpu
from hwcheck.devices.record import Asked, Device, Plugin

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "PLUGINS",
    "Asked",
    "Device",
    "Plugin",
    "compat_variables",
    "complete",
    "hiding_variables",
    "installed",
    "register",
    "unregister",
    "variables",
    "visible",
]

# The built-in vendors; a registered plug-in goes last.
PLUGINS: list[Plugin] = [
    nvidia.PLUGIN,
    amd.PLUGIN,
    tpu.PLUGIN,
    apple.PLUGIN,
    intel.PLUGIN,
    accelerators.PLUGIN,
]

# Their devices are read from the facts' own sections by whoever reports what is installed.
BUILT_IN = frozenset(plugin.name for plugin in PLUGINS)


def register(plugin: Plugin) -> None:
    """Add a vendor's plug-in (replacing one of the same name): every command then sees its devices."""
    unregister(plugin.name)
    PLUGINS.append(plugin)


def unregister(name: str) -> None:
    """Remove the plug-in of that name, if registered."""
    PLUGINS[:] = [plugin for plugin in PLUGINS if plugin.name != name]


def complete(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts with what each plug-in infers added (a Jetson's integrated GPU among the GPUs)."""
    for plugin in PLUGINS:
        if plugin.complete is not None:
            facts = plugin.complete(facts)
    return facts


def visible(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """Every device the training process sees, vendor by vendor, each in its runtime's numbering.

    `framework` is the runtime that will run (torch, tensorflow, jax): JAX_PLATFORMS hides a
    vendor's GPUs from JAX only. None: any runtime.
    """
    return [device for plugin in PLUGINS for device in plugin.visible(facts, framework)]


def training(facts: dict[str, Any], framework: str | None = None) -> list[Device]:
    """The devices one training job runs on: the visible ones of the first runtime that has any.

    A job's processes all run on one runtime: a laptop's integrated Intel GPU does not join its
    NVIDIA GPU, so the plan is for the devices of the first vendor in PLUGINS that has some.
    """
    found = visible(facts, framework)
    return [device for device in found if device.runtime == found[0].runtime] if found else []


def hiding_variables(facts: dict[str, Any], framework: str | None = None) -> list[str]:
    """The environment variables that hide every installed GPU from the process (empty when none do).

    Any vendor's: the first variable without which some GPU would be visible; else the
    variables that hide them together (CUDA_VISIBLE_DEVICES and JAX_PLATFORMS for JAX).
    """
    if any(device.kind == "gpu" for device in visible(facts, framework)):
        return []
    given = facts.get("environment")
    environment: dict[str, Any] = given if isinstance(given, dict) else {}
    names = list(environment)

    def seen_without(removed: list[str]) -> bool:
        rest = {key: value for key, value in environment.items() if key not in removed}
        return any(device.kind == "gpu" for device in visible({**facts, "environment": rest}, framework))

    single = next((name for name in names if seen_without([name])), None)
    if single is not None:
        return [str(single)]
    if not seen_without(names):
        return []  # no GPU installed, or none this runtime drives
    needed = names
    for name in names:  # keep only the variables some GPU stays hidden without
        if seen_without([other for other in needed if other != name]):
            needed = [other for other in needed if other != name]
    return [str(name) for name in needed]


def installed(facts: dict[str, Any]) -> list[Device]:
    """Every device installed, of every plug-in: no visibility variable applied, any runtime."""
    return visible({**facts, "environment": {}}, None)


def variables(asked: Asked) -> dict[str, Any]:
    """Every plug-in's rule namespaces, in PLUGINS' order."""
    namespaces: dict[str, Any] = {}
    for plugin in PLUGINS:
        if plugin.variables is not None:
            namespaces.update(plugin.variables(asked))
    return namespaces


def compat_variables(facts: dict[str, Any], frameworks: dict[str, Any], framework: str) -> dict[str, Any]:
    """Every plug-in's namespaces that compare the framework's build with the vendor's runtime,
    from the framework variables (tf, torch, jax) the engine has built; in PLUGINS' order."""
    namespaces: dict[str, Any] = {}
    for plugin in PLUGINS:
        if plugin.compat is not None:
            namespaces.update(plugin.compat(facts, frameworks, framework))
    return namespaces


def cuda_gpus(facts: dict[str, Any], framework: str | None) -> list[dict[str, Any]]:
    """The GPUs a CUDA build of the framework runs on, as the framework-build checks read them."""
    return nvidia.described(facts, framework)
