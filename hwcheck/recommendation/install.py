"""Which PyTorch, JAX or TensorFlow build runs this machine's accelerators, and the command that installs it.

By compute capability and driver together (never the driver alone): the newest PyTorch release
whose CUDA variant carries every visible GPU's architecture and runs on the driver, else the last
release that did; the ROCm index by gfx target; XPU; the CPU. The builds and their architectures
are rules/knowledge/torch.toml and amd.toml; the commands and their sources rules/knowledge/install.toml.
Every value in a printed command is quoted (shlex): commands are data.
"""

from __future__ import annotations

from hwcheck import knowledge
from hwcheck.base.versions import major_minor, version_key
from hwcheck.devices import tegra
from hwcheck.devices.nvidia import gpu_capability
from hwcheck.engine import verified
from hwcheck.facts import installed, section
from hwcheck.recommendation.install_cuda import (
    commands,
    driver_runs,
    jax_cuda_plan,
    no_command,
    sources,
    tensorflow_cuda_plan,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PACKAGES = ("torch", "jax", "tensorflow")


def machine_gpus(facts: dict[str, Any], package: str) -> list[dict[str, Any]]:
    """The GPUs doctor advises for `package` on this machine: the probes', a Jetson's integrated
    GPU, else those a verifying run of the framework listed (the one read of the device view)."""
    seen = verified.with_observed_gpus(tegra.with_integrated_gpu(facts), package)
    return [gpu for gpu in seen.get("gpus") or [] if isinstance(gpu, dict)]


def install_plan(facts: dict[str, Any], package: str) -> dict[str, Any]:
    """The build of `package` for the machine in `facts`: target, index, the pip and uv commands, why."""
    table = knowledge.load("install")
    gpus = machine_gpus(facts, package)
    vendors = {str(gpu.get("vendor") or "nvidia") for gpu in gpus}
    jetson = _jetson_release(facts, gpus)
    if jetson is not None:
        plan = _jetson(package, jetson, table)
    elif "nvidia" in vendors:
        plan = _nvidia(
            facts, package, [gpu for gpu in gpus if (gpu.get("vendor") or "nvidia") == "nvidia"], table
        )
    elif "amd" in vendors:
        plan = _amd(package, [gpu for gpu in gpus if gpu.get("vendor") == "amd"], table)
    elif "intel" in vendors and package == "torch":
        plan = _plain(package, "xpu", table["torch"]["xpu_index"], "an Intel GPU: PyTorch's XPU build", table)
    else:
        plan = _cpu(facts, package, gpus, table)
    return {"package": package, **plan}


def _plain(
    package: str, target: str, index_url: str | None, why: str, table: dict[str, Any]
) -> dict[str, Any]:
    return {
        "target": target,
        "index_url": index_url,
        **commands(package, index_url),
        "why": why,
        "sources": sources(table, package),
    }


def _nvidia(
    facts: dict[str, Any], package: str, gpus: list[dict[str, Any]], table: dict[str, Any]
) -> dict[str, Any]:
    # Distinct capabilities: a 100,000-GPU inventory has a handful (the plan is linear in devices).
    capabilities = sorted({cc for cc in (gpu_capability(gpu) for gpu in gpus) if cc})
    names = ", ".join(sorted({str(gpu.get("name") or "NVIDIA GPU") for gpu in gpus}))
    driver = section(facts, "nvidia_driver").get("version")
    if package == "torch":
        return _torch_cuda(names, capabilities, driver, table)
    if package == "jax":
        return jax_cuda_plan(names, capabilities, driver, table)
    return tensorflow_cuda_plan(names, capabilities, table)


def _jetson_release(facts: dict[str, Any], gpus: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The L4T row of a Jetson whose CUDA is not the SBSA one pip's aarch64 wheels are built for."""
    nvidia = {
        (gpu.get("name"), gpu.get("pci_device_id")) for gpu in gpus if gpu.get("vendor", "nvidia") == "nvidia"
    }
    named = any(
        (knowledge.gpu_model(str(name or ""), device) or {}).get("segment") == "jetson"
        for name, device in nvidia
    )
    if not nvidia or not (section(facts, "tegra") or named):
        return None
    row = tegra.release(section(facts, "tegra").get("l4t"))
    return {"jetpack": "", "cuda": "", "sbsa": False} if row is None else (None if row["sbsa"] else row)


def _jetson(package: str, release: dict[str, Any], table: dict[str, Any]) -> dict[str, Any]:
    """NVIDIA's build for this JetPack: PyPI's aarch64 wheels are not built for its CUDA."""
    jetpack = str(release.get("jetpack") or "")
    named = f"JetPack {jetpack}" if jetpack else "this Jetson's JetPack (L4T release unknown)"
    if package == "torch":
        rows = [row for row in table["torch"]["jetson_index"] if jetpack and row["jetpack"] == jetpack]
        if rows:
            why = (
                f"a Jetson on {named} (CUDA {release['cuda']}): NVIDIA's PyTorch build for it from the "
                "Jetson AI Lab index (PyPI's aarch64 wheels are not built for JetPack's CUDA)"
            )
            return _plain(package, "jetpack", rows[0]["index_url"], why, table)
        return no_command(
            f"a Jetson on {named}: install NVIDIA's PyTorch build for it from "
            f"{table['torch']['jetson_page']} "
            "(PyPI's aarch64 wheels are not built for JetPack's CUDA)",
            table,
            package,
        )
    if package == "tensorflow" and jetpack:
        index = table["tensorflow"]["jetson_index"] + jetpack.replace(".", "")
        why = f"a Jetson on {named}: NVIDIA's TensorFlow build for it"
        return {**_plain(package, "jetpack", index, why, table), **commands(package, index, extra=True)}
    if package == "tensorflow":
        why = (
            "a Jetson whose JetPack is unknown: install NVIDIA's TensorFlow build for it, pip install "
            f"--extra-index-url {table['tensorflow']['jetson_index']}<JetPack version, e.g. 61> tensorflow"
        )
        return no_command(why, table, package)
    return no_command(f"a Jetson on {named}: hwcheck's tables hold no {package} build for it", table, package)


def _torch_cuda(
    names: str, capabilities: list[str], driver: str | None, table: dict[str, Any]
) -> dict[str, Any]:
    releases = sorted(
        {row["version"] for row in knowledge.load("torch")["release"]}, key=version_key, reverse=True
    )
    newest = releases[0]
    for release in releases:
        # Newest CUDA first: cu130 before cu128 before cu126 (variant_cuda gives each one's CUDA).
        variants = sorted(
            knowledge.torch_variants(release) or [],
            key=lambda variant: version_key(
                (knowledge.torch_build(release, variant) or {}).get("cuda") or "0"
            ),
            reverse=True,
        )
        for variant in variants:
            build = knowledge.torch_build(release, variant)
            if not build or not build["index_url"]:
                continue
            kernels = knowledge.torch_kernels(release, variant)
            runs = [knowledge.gpu_kernels(kernels, cc) for cc in capabilities]
            if (
                not all(kernel and kernel.runs for kernel in runs)
                or driver_runs(driver, build["cuda"]) is False
            ):
                continue
            requirement = "torch" if release == newest else f"torch=={release}.*"
            carried = ", ".join(sorted(set(capabilities))) or "unknown"
            why = (
                f"{names} (compute capability {carried}): the {variant} build of PyTorch {release} carries "
                f"code for {'them' if len(set(capabilities)) > 1 else 'it'} (its architectures: "
                f"{', '.join(build['sm'])})"
            )
            if driver:
                why += f", and driver {driver} runs CUDA {build['cuda']} builds"
            else:
                why += (
                    "; the driver is unknown: CUDA "
                    + build["cuda"]
                    + " builds need the driver its minor version compatibility names"
                )
            if release != newest:
                blocked = _newest_carrying(newest, capabilities)
                if blocked:
                    why += (
                        f". PyTorch {newest}'s {blocked['variant']} build carries them too but needs CUDA "
                        f"{blocked['cuda']}'s driver (update the driver for the current release); "
                        f"with this driver {release} is the newest that runs"
                    )
                else:
                    why += f". No current release (PyTorch {newest}) runs these GPUs: {release} was the last"
            return {
                "target": variant,
                "release": release,
                "index_url": build["index_url"],
                **commands(requirement, build["index_url"]),
                "why": why,
                "sources": sources(table, "torch"),
            }
    return no_command(
        (
            f"{names}: no PyTorch build in hwcheck's tables runs these GPUs on driver {driver or 'unknown'} "
            "(update the driver, or build PyTorch from source)"
        ),
        table,
        "torch",
    )


def _newest_carrying(release: str, capabilities: list[str]) -> dict[str, Any] | None:
    """The build of `release` that carries every GPU's architecture, whatever the driver; None if none."""
    for variant in knowledge.torch_variants(release) or []:
        kernels = knowledge.torch_kernels(release, variant)
        runs = [knowledge.gpu_kernels(kernels, cc) for cc in capabilities]
        if all(kernel and kernel.runs for kernel in runs):
            return knowledge.torch_build(release, variant)
    return None


def _amd(package: str, gpus: list[dict[str, Any]], table: dict[str, Any]) -> dict[str, Any]:
    targets = sorted({str(gpu.get("arch") or "").split(":")[0] for gpu in gpus if gpu.get("arch")})
    names = ", ".join(sorted({str(gpu.get("name") or "AMD GPU") for gpu in gpus}))
    if package != "torch":
        why = (
            f"{names}: hwcheck's tables hold no {package} ROCm wheel; see the sources for AMD's instructions"
        )
        return no_command(why, table, package)
    rows = sorted(
        knowledge.load("amd").get("torch_rocm_wheels", ()),
        key=lambda row: version_key(row["torch"]),
        reverse=True,
    )
    for row in rows:
        for variant in sorted(
            row["variants"], key=lambda v: version_key(v.removeprefix("rocm")), reverse=True
        ):
            rocm = variant.removeprefix("rocm")
            if targets and all(
                knowledge.rocm_support(rocm, target) in ("supported", "deprecated") for target in targets
            ):
                index_url = f"{table['torch']['rocm_index']}{variant}"
                requirement = f"torch=={row['torch']}.*"
                why = (
                    f"{names} ({', '.join(targets)}): ROCm {major_minor(rocm)} supports "
                    f"{'them' if len(targets) > 1 else 'it'}, and PyTorch {row['torch']} is the newest "
                    f"release hwcheck's tables list on the {variant} index"
                )
                return {
                    "target": variant,
                    "release": row["torch"],
                    "index_url": index_url,
                    **commands(requirement, index_url),
                    "why": why,
                    "sources": sources(table, "torch"),
                }
    where = ", ".join(targets) or "gfx target unknown"
    why = f"{names} ({where}): no ROCm release in hwcheck's tables supports it"
    return no_command(why, table, "torch")


def _cpu(
    facts: dict[str, Any], package: str, gpus: list[dict[str, Any]], table: dict[str, Any]
) -> dict[str, Any]:
    system = str((facts.get("os") or {}).get("system") or "")
    apple = any(gpu.get("vendor") == "apple" for gpu in gpus) or system == "Darwin"
    row = table[package]
    if package == "torch" and not apple and system in ("Linux", "Windows", ""):
        why = "no NVIDIA, AMD or Intel GPU: PyTorch's CPU build (without the CUDA libraries)"
        return _plain(package, "cpu", row["cpu_index"], why, table)
    why = (
        "Apple silicon: the default wheel runs on the Apple GPU (MPS)"
        if apple and package == "torch"
        else "no accelerator hwcheck can build for: the CPU build"
    )
    return _plain(row.get("cpu_requirement", package), "cpu", None, why, table)


# The package each framework's scripts run on (Keras: its backend; a trainer: PyTorch).
RUNS_ON = {"tensorflow": "tensorflow", "keras-custom": "tensorflow", "torch": "torch", "jax": "jax"}


def install_line(facts: dict[str, Any], framework: str) -> str:
    """The one command line that installs `framework` (a framework or trainer) for this machine.

    install_plan's pip command for the package the framework runs on, then what the framework
    adds (Keras, a trainer's package); where no build runs the machine, the plan's reason.
    """
    from hwcheck.engine.trainers import TRAINERS, trainer_row

    if framework == "keras":
        return _then(facts, runs_on(facts, framework), "pip install keras")
    if framework in TRAINERS:
        return _then(facts, "torch", str(trainer_row(framework)["install"]))
    plan = install_plan(facts, RUNS_ON.get(framework, framework))
    return str(plan["pip"] or plan["why"])


def runs_on(facts: dict[str, Any], framework: str) -> str:
    """The framework package `framework` runs on: Keras's backend, a trainer's PyTorch, or itself."""
    from hwcheck.engine.trainers import TRAINERS

    if framework == "keras":
        backend = str(section(facts, "environment").get("KERAS_BACKEND") or "tensorflow")
        return backend if backend in RUNS_ON else "tensorflow"
    return "torch" if framework in TRAINERS else RUNS_ON.get(framework, framework)


def _then(facts: dict[str, Any], package: str, own: str) -> str:
    """`own` install after the framework `package` it runs on: its line only where it is missing."""
    if installed(section(facts, "frameworks"), package):
        return own
    return f"{install_line(facts, package)}; then {own}"
