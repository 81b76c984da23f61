"""Apple silicon, Intel GPU and TPU-runtime machines from public reports, and their advice.

Each facts document holds only what its source recorded (collect_env's OS, CPU and versions,
sysfs trees replayed through the Intel probe, pip listings); where a value the rules read was
not recorded, the machine text names the stand-in and why it does not change the advice.
tests/profiles.py adds these to PROFILES.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fakes.drm import build_root

from hwcheck.probes.intel import gpu as intel_probe


# A Mac as its facts come out of the probes: platform, the Apple probe (chip, macOS) and the CPU
# (on macOS the CPU probe reads the same brand string; its flags are not recorded here).
def mac(chip: str, macos: str | None, python: str | None = None, **frameworks: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "schema_version": 1,
        "os": {"system": "Darwin", "machine": "arm64", "macos": macos},
        "cpu": {"arch": "arm64", "vendor": "Apple", "model": chip},
        "gpus": [{"index": 0, "vendor": "apple", "name": chip, "unified_memory": True}],
        "tpu": {"present": False},
        "frameworks": frameworks,
    }
    if python:
        facts["python"] = {"version": python}
    return facts


def linux(**parts: Any) -> dict[str, Any]:
    return {"schema_version": 1, "os": {"system": "Linux", "machine": "x86_64"}, **parts}


def intel_replay(machine: str) -> dict[str, Any]:
    """The Intel probe's facts for a recorded sysfs tree (tests/fixtures/sysfs/MACHINE.json)."""
    with tempfile.TemporaryDirectory(prefix="hwcheck-sysfs-") as scratch:
        return intel_probe.probe(root=build_root(Path(scratch), machine)).facts


def vendor_profiles(profile: type) -> list[Any]:
    """The Apple, Intel and TPU-runtime profiles (built with tests/profiles.py's Profile)."""
    arc = intel_replay("intel-arc-a770-i915")
    flex = intel_replay("intel-flex-170-no-driver")
    ryzen = {
        "cpu": {"arch": "x86_64", "vendor": "AuthenticAMD", "model": "AMD Ryzen 7 7700X 8-Core Processor"}
    }
    return [
        # ------------------------------------------------------------ Apple silicon
        profile(
            "mac-m2max-macos13-torch210",
            "pytorch/pytorch#164943 (collect_env): PyTorch 2.10.0.dev20251008, 'OS: macOS 13.7.4 (arm64)', "
            "'CPU: Apple M2 Max', Python 3.11.9; moving a tensor to 'mps' fails ('The MPS backend is "
            "supported on MacOS 13.0+'), which only an MPS build says: mps_built true.",
            mac(
                "Apple M2 Max", "13.7.4", "3.11.9", torch={"version": "2.10.0.dev20251008", "mps_built": True}
            ),
            "float32",
            "cpu",
            frozenset({"mps-macos-too-old-for-torch"}),
            framework="torch",
        ),
        profile(
            "mac-m1-macos12-torch113",
            "pytorch/pytorch#78343 (collect_env): PyTorch 1.13.0.dev20220525, 'OS: macOS 12.2.1 (arm64)', "
            "an M1 MacBook Pro 13-inch, Python 3.9.12; torch.backends.mps.is_built() True, "
            "is_available() False.",
            mac("Apple M1", "12.2.1", "3.9.12", torch={"version": "1.13.0.dev20220525", "mps_built": True}),
            "float32",
            "cpu",
            frozenset({"mps-macos-too-old-for-torch"}),
            framework="torch",
        ),
        profile(
            "mac-m1-torch18-before-mps",
            "pytorch/pytorch#48145 ('Enable PyTorch compilation on Apple Silicon'): PyTorch "
            "1.8.0.dev20201117 on an M1 Mac, collect_env 'OS: Mac OSX 11.0': no release had MPS before 1.12.",
            mac("Apple M1", "11.0", torch={"version": "1.8.0.dev20201117"}),
            "float32",
            "cpu",
            frozenset({"mps-torch-without-mps"}),
            framework="torch",
        ),
        profile(
            "mac-torch28-macos14-float16",
            "huggingface/accelerate#3373: PyTorch 2.8.0 on a MacBook Pro runs float16 autocast with "
            "GradScaler and bfloat16 autocast on MPS. Stand-ins: the chip (not stated; 'Apple M1') and macOS "
            "14.0, the floor bfloat16 needs, which the bf16 run shows it met; neither changes the advice.",
            mac("Apple M1", "14.0", torch={"version": "2.8.0", "mps_built": True}),
            "mixed_float16",
            "mps",
            frozenset(),
            framework="torch",
        ),
        profile(
            "mac-torch28-macos14-prefer-bfloat16",
            "The accelerate#3373 MacBook Pro (above) with bfloat16 preferred: its bf16 run.",
            mac("Apple M1", "14.0", torch={"version": "2.8.0", "mps_built": True}),
            "mixed_bfloat16",
            "mps",
            frozenset(),
            framework="torch",
            prefer="bfloat16",
        ),
        profile(
            "mac-m4-torch26-macos-unknown",
            "Comfy-Org/ComfyUI#6719: a Mac mini M4 with PyTorch 2.6.0 and Python 3.12.8; the macOS "
            "release is not stated.",
            mac("Apple M4", None, "3.12.8", torch={"version": "2.6.0"}),
            "float32",
            "mps",
            frozenset({"mps-macos-unknown"}) | {"mps-torch-without-mps"},
            framework="torch",
        ),
        profile(
            "mac-m2max-tf218-metal110",
            "tensorflow/tensorflow#84167: Apple M2 Max (38-core GPU), macOS 15.2, Python 3.11.11, "
            "tensorflow-metal 1.1.0: TensorFlow 2.18 fails to load libmetal_plugin.dylib.",
            mac(
                "Apple M2 Max",
                "15.2",
                "3.11.11",
                tensorflow={"version": "2.18.0", "package": "tensorflow", "metal_plugin": "1.1.0"},
            ),
            "float32",
            "cpu",
            frozenset({"mps-tensorflow-metal-mismatch"}),
        ),
        profile(
            "mac-m2max-tf217-metal110",
            "tensorflow/tensorflow#84167, the same M2 Max before the upgrade: tensorflow-metal 1.1.0 with "
            "TensorFlow 2.17 lists the GPU ('PhysicalDevice(name='/physical_device:GPU:0')').",
            mac(
                "Apple M2 Max",
                "15.2",
                "3.11.11",
                tensorflow={"version": "2.17.0", "package": "tensorflow", "metal_plugin": "1.1.0"},
            ),
            "mixed_float16",
            "mps",
            frozenset({"output-float32"}),
        ),
        profile(
            "mac-m2max-tf217-metal110-prefer-bfloat16",
            "The tensorflow/tensorflow#84167 M2 Max on TensorFlow 2.17 (macOS 15.2) with bfloat16 preferred.",
            mac(
                "Apple M2 Max",
                "15.2",
                "3.11.11",
                tensorflow={"version": "2.17.0", "package": "tensorflow", "metal_plugin": "1.1.0"},
            ),
            "mixed_bfloat16",
            "mps",
            frozenset({"output-float32"}),
            prefer="bfloat16",
        ),
        profile(
            "mac-tf215-without-metal",
            "sun1638650145/Libraries-and-Extensions-for-TensorFlow-for-Apple-Silicon#20: TensorFlow "
            "2.15.0 (the macosx_14_0_arm64 wheel, so macOS 14 or later), Python 3.11.1, "
            "tf.config.list_physical_devices('GPU') == []: tensorflow-metal is not installed. Stand-ins: "
            "the chip (not stated) and macOS 14.0, the wheel's floor.",
            mac(
                "Apple M1",
                "14.0",
                "3.11.1",
                tensorflow={"version": "2.15.0", "package": "tensorflow", "metal_plugin": None},
            ),
            "float32",
            "cpu",
            frozenset({"mps-tensorflow-without-metal"}),
        ),
        profile(
            "mac-m1max-jax-metal-jaxlib0428",
            "jax-ml/jax#21383: Mac Studio, Apple M1 Max (64 GB), Darwin 23.5.0 (macOS 14.5), jax-metal from "
            "Apple's guide with jax and jaxlib 0.4.28: 'Mismatched PJRT plugin PJRT API version (0.47) and "
            "framework PJRT API version 0.51'. Stand-in: jax-metal 0.0.7 (0.0.7 and 0.1.0, both current "
            "then, share jaxlib 0.4.26 and macOS 14.4 in Apple's table).",
            mac(
                "Apple M1 Max",
                "14.5",
                "3.10.13",
                jax={
                    "version": "0.4.28",
                    "jaxlib": "0.4.28",
                    "cuda_build": False,
                    "cuda": None,
                    "plugin": "jax-metal",
                    "plugin_version": "0.0.7",
                },
            ),
            "float32",
            "cpu",
            frozenset({"mps-jax-metal-mismatch"}),
            framework="jax",
        ),
        profile(
            "mac-m1max-jax-metal-jaxlib0426",
            "jax-ml/jax#21383, the same Mac Studio after 'pip install jax==0.4.26 jaxlib==0.4.26': "
            "jax.devices() lists METAL(id=0).",
            mac(
                "Apple M1 Max",
                "14.5",
                "3.10.13",
                jax={
                    "version": "0.4.26",
                    "jaxlib": "0.4.26",
                    "cuda_build": False,
                    "cuda": None,
                    "plugin": "jax-metal",
                    "plugin_version": "0.0.7",
                },
            ),
            "float32",
            "mps",
            frozenset(),
            framework="jax",
        ),
        profile(
            "mac-m1max-jax-metal-compatibility",
            "The jax-ml/jax#21383 Mac Studio on jaxlib 0.4.28 with ENABLE_PJRT_COMPATIBILITY=1, the "
            "workaround Apple's jax-metal page gives for a newer jaxlib.",
            {
                **mac(
                    "Apple M1 Max",
                    "14.5",
                    "3.10.13",
                    jax={
                        "version": "0.4.28",
                        "jaxlib": "0.4.28",
                        "cuda_build": False,
                        "cuda": None,
                        "plugin": "jax-metal",
                        "plugin_version": "0.0.7",
                    },
                ),
                "environment": {"ENABLE_PJRT_COMPATIBILITY": "1"},
            },
            "float32",
            "mps",
            frozenset({"mps-jax-metal-compatibility"}),
            framework="jax",
        ),
        profile(
            "mac-m1max-jax034-cpu",
            "blackjax-devs/blackjax#200: Apple M1 Max with jax 0.3.4 and jaxlib 0.3.0; 'The CPU works "
            "great ... the GPU is not detected' (no jax-metal). The macOS release is not stated.",
            mac(
                "Apple M1 Max",
                None,
                jax={"version": "0.3.4", "jaxlib": "0.3.0", "cuda_build": False, "cuda": None},
            ),
            "float32",
            "cpu",
            frozenset({"mps-jax-cpu"}),
            framework="jax",
        ),
        # ------------------------------------------------------------ Intel GPUs
        profile(
            "arc-a770-i915-torch212-xpu",
            "talmolab/sleap-nn#206: Ryzen 7700X with an Intel Arc A770 on i915 (sysfs replayed: "
            "tests/fixtures/sysfs/intel-arc-a770-i915.json), torch 2.12.0+xpu from "
            "download.pytorch.org/whl/xpu.",
            linux(**ryzen, **arc, frameworks={"torch": {"version": "2.12.0+xpu"}}, tpu={"present": False}),
            "mixed_bfloat16",
            "xpu",
            frozenset(),
            framework="torch",
        ),
        profile(
            "arc-a770-i915-torch212-xpu-prefer-float16",
            "The talmolab/sleap-nn#206 Arc A770 with float16 preferred.",
            linux(**ryzen, **arc, frameworks={"torch": {"version": "2.12.0+xpu"}}, tpu={"present": False}),
            "mixed_float16",
            "xpu",
            frozenset(),
            framework="torch",
            prefer="float16",
        ),
        profile(
            "max1100-torch27-xpu",
            'mag-/gpu_benchmark#5: \'Tested only on "Intel(R) Data Center GPU Max 1100" with '
            "torch=2.7.0+xpu'. collect_env on Max 1100 machines (intel/torch-xpu-ops#2188) shows its PCI id "
            "0xBDA and 49136 MB.",
            linux(
                gpus=[
                    {
                        "index": 0,
                        "vendor": "intel",
                        "name": "Intel(R) Data Center GPU Max 1100",
                        "pci_device_id": "0x0bda",
                        "memory_mib": 49136,
                    }
                ],
                frameworks={"torch": {"version": "2.7.0+xpu"}},
                tpu={"present": False},
            ),
            "mixed_bfloat16",
            "xpu",
            frozenset(),
            framework="torch",
        ),
        profile(
            "arc-a770-windows-torch211-cpu",
            "jamiepine/voicebox#585: Windows with an 'Intel(R) Arc(TM) A770 Graphics'; the venv held "
            "CPU-only PyTorch 2.11.0+cpu, so Voicebox fell back to the CPU.",
            {
                "schema_version": 1,
                "os": {"system": "Windows", "machine": "AMD64"},
                "gpus": [{"index": 0, "vendor": "intel", "name": "Intel(R) Arc(TM) A770 Graphics"}],
                "frameworks": {"torch": {"version": "2.11.0+cpu", "cuda": None, "xpu": None}},
                "tpu": {"present": False},
            },
            "float32",
            "cpu",
            frozenset({"xpu-torch-without-xpu"}),
            framework="torch",
        ),
        profile(
            "flex-170-no-driver",
            "strongtz/i915-sriov-dkms#293: i915 refuses the Flex 170 (56c0) at 0000:03:00.0 "
            "('use i915.force_probe=56c0'); sysfs replayed: "
            "tests/fixtures/sysfs/intel-flex-170-no-driver.json. No framework is named, and none is "
            "installed: the advice is for the hardware and names no framework to install.",
            linux(**flex, tpu={"present": False}),
            "float32",
            "cpu",
            frozenset({"xpu-gpu-without-driver", "framework-assumed"}),
            framework=None,
        ),
        profile(
            "meteor-lake-155h-ipex",
            "zzc0721/torch-performance-test-data#36: 'Intel(R) Arc(TM) Graphics' of a Core Ultra 7 155H "
            "running PyTorch 2.1.0a0+cxx11.abi on xpu (an intel-extension-for-pytorch build). Stand-ins: the "
            "PCI id 0x7dd5 (a Core Ultra 7 155H's, intel/AI-Playground#31) and IPEX 2.1.10+xpu (any 2.1 xpu "
            "release gives the same advice).",
            linux(
                gpus=[
                    {
                        "index": 0,
                        "vendor": "intel",
                        "name": "Intel(R) Arc(TM) Graphics",
                        "pci_device_id": "0x7dd5",
                    }
                ],
                frameworks={"torch": {"version": "2.1.0a0+cxx11.abi", "ipex": "2.1.10+xpu"}},
                tpu={"present": False},
            ),
            "float32",
            "xpu",
            frozenset({"xpu-ipex"}),
            framework="torch",
        ),
        # ------------------------------------------------------------ TPUs without their runtime
        profile(
            "tpu-v3-8-jax0212-without-libtpu",
            "jax-ml/jax#13321: a TPU v3-8 VM with 'pip install jax==0.2.12' (no libtpu): 'No GPU/TPU found, "
            "falling back to CPU'.",
            linux(
                tpu={"present": True, "type": "v3", "libtpu": None},
                frameworks={"jax": {"version": "0.2.12", "jaxlib": None}},
            ),
            "float32",
            "cpu",
            frozenset({"tpu-runtime-missing"}),
            framework="jax",
        ),
        profile(
            "kaggle-tpu-torch200-without-torch-xla",
            "pytorch/xla#5510: a Kaggle TPU notebook whose environment has PyTorch 2.0.0 (CPU) and "
            "Python 3.10 but no torch_xla. The TPU generation is not stated.",
            linux(
                tpu={"present": True, "libtpu": None},
                frameworks={"torch": {"version": "2.0.0+cpu", "cuda": None, "xla": None}},
                python={"version": "3.10"},
            ),
            "float32",
            "cpu",
            frozenset({"tpu-runtime-missing"}),
            framework="torch",
        ),
    ]
