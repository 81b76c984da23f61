"""AMD machines for the profile table (tests/profiles.py): ROCm topologies recorded from real machines.

GPUs come from the AMD probe replaying tests/fixtures/kfd/<name>.json (each naming the issue
whose rocminfo it records); frameworks are the builds the cited issues ran. Where a profile
needs a GPU no recording here has (MI100, MI210, MI50), it is given by name and gfx target as
AMD's GPU hardware specifications list them (rules/knowledge/amd.toml [[gfx]] sources).
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

from fakes.kfd import build

from hwcheck.probes.amd import gpu as amd_probe

# torch 2.5.1+rocm6.2 and its HIP: pytorch/pytorch#132570 ('torch 2.5.1+rocm6.2').
TORCH_ROCM62 = {
    "frameworks": {"torch": {"version": "2.5.1+rocm6.2", "cuda": None, "rocm_build": True, "rocm": "6.2"}}
}
TORCH_CUDA124 = {"frameworks": {"torch": {"version": "2.5.1+cu124", "cuda": "12.4", "rocm_build": False}}}


def amd(machine: str, *, boards: int | None = None, rocm: str | None = None) -> dict[str, Any]:
    """The "gpus" and "rocm" facts the AMD probe reads from a recorded topology; `boards` repeats the GPU."""
    with tempfile.TemporaryDirectory() as folder:
        result = amd_probe.probe(root=build(Path(folder), machine, rocm_version=rocm), environ={})
    facts = copy.deepcopy(result.facts)
    if boards:
        first = facts["gpus"][0]
        # Identity fields are left unknown on the repeats: the recording has one GPU.
        facts["gpus"] = [first] + [
            {**first, "index": index, "uuid": None, "pci_bus_id": None} for index in range(1, boards)
        ]
    return facts


def by_name(name: str, arch: str, count: int = 1, start: int = 0) -> dict[str, Any]:
    """AMD GPUs given by name and gfx target (AMD's GPU hardware specifications)."""
    return {"gpus": [{"index": start + i, "vendor": "amd", "name": name, "arch": arch} for i in range(count)]}


def amd_profiles(profile: Any, machine: Any, cpu: Any) -> list[Any]:
    """The AMD profiles, built with profiles.py's Profile, machine() and cpu() (passed in: no cycle)."""
    epyc = cpu("amd-zen4-epyc-9654")
    mi300x = amd("mi300x", boards=8, rocm="6.2.0")
    device_is_cuda = frozenset({"amd-torch-device-is-cuda"})

    def torch(*parts: dict[str, Any]) -> dict[str, Any]:
        return machine(epyc, *parts)

    return [
        profile(
            "amd-mi300x-x8-torch-rocm62",
            "Eight MI300X (the gfx942 recording of ROCm/legacy-rocm-build#4414, repeated), ROCm 6.2, "
            "torch 2.5.1+rocm6.2: CDNA 3 matrix cores run bfloat16.",
            torch(mi300x, TORCH_ROCM62),
            "mixed_bfloat16",
            "gpu",
            device_is_cuda,
            framework="torch",
        ),
        profile(
            "amd-mi300x-x8-prefer-float16",
            "The same MI300X node with float16 preferred.",
            torch(mi300x, TORCH_ROCM62),
            "mixed_float16",
            "gpu",
            device_is_cuda,
            framework="torch",
            prefer="float16",
        ),
        profile(
            "amd-mi300x-x8-rocr-visible-devices-out-of-range",
            "The MI300X node with ROCR_VISIBLE_DEVICES=8: the runtime stops at an index out of range.",
            torch(mi300x, TORCH_ROCM62, {"environment": {"ROCR_VISIBLE_DEVICES": "8"}}),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-visible-devices-hides-all"}),
            framework="torch",
        ),
        profile(
            "amd-mi300x-x8-hip-visible-devices-two",
            "The MI300X node with HIP_VISIBLE_DEVICES=0,1: the process sees two GPUs.",
            torch(mi300x, TORCH_ROCM62, {"environment": {"HIP_VISIBLE_DEVICES": "0,1"}}),
            "mixed_bfloat16",
            "gpu",
            device_is_cuda | {"amd-visible-devices-subset"},
            framework="torch",
        ),
        profile(
            "amd-rx7900xtx-cuda-torch",
            "The RX 7900 XTX of ROCm/legacy-rocm-build#2866 with a CUDA wheel of torch: no ROCm in it.",
            torch(amd("rx7900xtx"), TORCH_CUDA124),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-framework-not-rocm"}),
            framework="torch",
        ),
        profile(
            "amd-rx7900xtx-override-lies",
            "The RX 7900 XTX with HSA_OVERRIDE_GFX_VERSION=10.3.0 (RDNA 2's target on an RDNA 3 GPU).",
            torch(amd("rx7900xtx"), TORCH_ROCM62, {"environment": {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}}),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-override-lies"}),
            framework="torch",
        ),
        profile(
            "amd-rx7900xtx-override-unneeded",
            "The RX 7900 XTX with HSA_OVERRIDE_GFX_VERSION=11.0.0, its own target, which ROCm 6.2 supports.",
            torch(amd("rx7900xtx"), TORCH_ROCM62, {"environment": {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}}),
            "mixed_bfloat16",
            "gpu",
            device_is_cuda | {"amd-override-unneeded"},
            framework="torch",
        ),
        profile(
            "amd-w6600-gfx1032-no-override",
            "The Radeon PRO W6600 (gfx1032) of ROCm/legacy-rocm-build#1797 with torch 2.5.1+rocm6.2, "
            "no override.",
            torch(amd("w6600-gfx1032"), TORCH_ROCM62),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-build-unsupported-gpu"}),
            framework="torch",
        ),
        profile(
            "amd-w6600-gfx1032-override",
            "The same W6600 with HSA_OVERRIDE_GFX_VERSION=10.3.0: 'That actually works' (the issue's title).",
            torch(
                amd("w6600-gfx1032"), TORCH_ROCM62, {"environment": {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}}
            ),
            "float32",
            "gpu",
            device_is_cuda | {"amd-override-standard"},
            framework="torch",
        ),
        profile(
            "amd-w6600-gfx1032-rocm633-no-framework",
            "The W6600 under ROCm 6.3.3 with no framework installed: the advice is for the hardware.",
            machine(epyc, amd("w6600-gfx1032", rocm="6.3.3")),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-system-rocm-unsupported-gpu", "framework-not-installed"}),
            framework="torch",
        ),
        profile(
            "amd-mi100-torch-rocm62",
            "An MI100 (gfx908, AMD's GPU hardware specifications): float16 matrix rate twice bfloat16's.",
            torch(by_name("AMD Instinct MI100", "gfx908"), TORCH_ROCM62),
            "mixed_float16",
            "gpu",
            device_is_cuda,
            framework="torch",
        ),
        profile(
            "amd-mi50-torch-rocm62",
            "An MI50 (gfx906) under ROCm 6.2, which lists it as deprecated; no matrix cores.",
            torch(by_name("AMD Instinct MI50", "gfx906"), TORCH_ROCM62),
            "float32",
            "gpu",
            device_is_cuda | {"amd-gpu-deprecated"},
            framework="torch",
        ),
        profile(
            "amd-mi210-plus-mi100",
            "An MI210 (gfx90a) beside an MI100 (gfx908): one policy follows the MI100.",
            torch(
                {
                    "gpus": by_name("AMD Instinct MI210", "gfx90a")["gpus"]
                    + by_name("AMD Instinct MI100", "gfx908", start=1)["gpus"]
                },
                TORCH_ROCM62,
            ),
            "mixed_float16",
            "gpu",
            device_is_cuda | {"amd-mixed-generations"},
            framework="torch",
        ),
        profile(
            "amd-unknown-gfx-target",
            "The RX 7900 XTX recording with a gfx target the table lacks (gfx1250), as a newer kernel "
            "may print.",
            torch({"gpus": [{**amd("rx7900xtx")["gpus"][0], "arch": "gfx1250"}]}, TORCH_ROCM62),
            "mixed_bfloat16",  # the Zen 4 EPYC's torch evidence: bf16 on the CPU
            "cpu",
            frozenset({"amd-build-unsupported-gpu", "amd-unknown-target-finding"}),
            framework="torch",
        ),
        profile(
            "amd-unknown-gfx-target-release-unknown",
            "A gfx1250 GPU with a ROCm build whose release the table lacks (ROCm 9.9): nothing says "
            "it cannot run.",
            torch(
                {"gpus": [{**amd("rx7900xtx")["gpus"][0], "arch": "gfx1250"}]},
                {"frameworks": {"torch": {"version": "9.9.0+rocm9.9", "rocm_build": True, "rocm": "9.9"}}},
            ),
            "float32",
            "gpu",
            device_is_cuda | {"amd-unknown-target-finding"},
            framework="torch",
        ),
    ]
