"""The frameworks probe against fake site-packages trees and this machine's real venv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from hwcheck.facts import validate_facts
from hwcheck.probes import ABSENT, OK, frameworks

BUILD_INFO = Path(__file__).parent / "fixtures" / "build_info"
# torch 2.13.0+cpu's torch/version.py (from the dev venv); a CUDA wheel writes the same
# lines with its CUDA version in `cuda`.
TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda!r}
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""


def dist(site: Path, name: str, version: str) -> None:
    """A dist-info directory as pip writes it (name with underscores, then the version)."""
    directory = site / f"{name.replace('-', '_')}-{version}.dist-info"
    directory.mkdir(parents=True)
    (directory / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def tensorflow(site: Path, package: str, version: str, build_info: str | None) -> None:
    dist(site, package, version)
    platform_dir = site / "tensorflow" / "python" / "platform"
    platform_dir.mkdir(parents=True)
    if build_info is not None:
        (platform_dir / "build_info.py").write_text(build_info)


def real_build_info(wheel: str) -> str:
    return (BUILD_INFO / f"{wheel}.txt").read_text()


def test_full_tensorflow_wheel_is_a_cuda_build_with_its_versions(tmp_path):
    tensorflow(tmp_path, "tensorflow", "2.21.0", real_build_info("tensorflow-2.21.0"))
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.status == OK and result.reason is None
    assert result.facts["frameworks"]["tensorflow"] == {
        "version": "2.21.0",
        "package": "tensorflow",
        "location": str(tmp_path / "tensorflow"),
        "cuda_build": True,
        "rocm_build": False,
        "cuda": "12.5.1",
        "cudnn": "9",
        # the wheel's own record of what it carries (TF_CUDA_COMPUTE_CAPABILITIES)
        "arch_list": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
        "metal_plugin": None,
    }
    validate_facts({"schema_version": 1, **result.facts}, "frameworks probe")


def test_tensorflow_2_15_wheel_built_for_cuda_12_2(tmp_path):
    tensorflow(tmp_path, "tensorflow", "2.15.1", real_build_info("tensorflow-2.15.1"))
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert (facts["cuda_build"], facts["cuda"], facts["cudnn"]) == (True, "12.2", "8")


def test_cpu_wheel_is_not_a_cuda_build_and_names_no_cuda(tmp_path):
    tensorflow(tmp_path, "tensorflow-cpu", "2.21.0", real_build_info("tensorflow-cpu-2.21.0"))
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["package"] == "tensorflow-cpu"
    assert (facts["cuda_build"], facts["rocm_build"]) == (False, False)
    assert "cuda" not in facts and "cudnn" not in facts


def test_tensorflow_2_1_style_module_level_build_names(tmp_path):
    # Before build_info became a dict, TF's gen_build_info wrote one name per fact
    # (--key_value cuda_version_number=... cudnn_version_number=...).
    old = (
        "is_rocm_build = False\nis_cuda_build = True\n"
        "cuda_version_number = '10.1'\ncudnn_version_number = '7'\n"
    )
    tensorflow(tmp_path, "tensorflow-gpu", "2.1.0", old)
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert (facts["package"], facts["cuda_build"], facts["cuda"], facts["cudnn"]) == (
        "tensorflow-gpu",
        True,
        "10.1",
        "7",
    )


def test_build_info_is_parsed_never_executed(tmp_path):
    hostile = 'raise SystemExit("build_info.py was executed")\n' + real_build_info("tensorflow-2.21.0")
    tensorflow(tmp_path, "tensorflow", "2.21.0", hostile)
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["cuda_build"] is True and facts["cuda"] == "12.5.1"


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "is missing"), ("build_info = {'is_cuda_build': True\n", "is unreadable (SyntaxError)")],
)
def test_missing_or_broken_build_info_keeps_the_version_and_says_why(tmp_path, content, problem):
    tensorflow(tmp_path, "tensorflow", "2.21.0", content)
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.status == OK
    assert result.facts["frameworks"]["tensorflow"]["version"] == "2.21.0"
    assert "cuda_build" not in result.facts["frameworks"]["tensorflow"]
    assert problem in result.reason and "build_info.py" in result.reason


@pytest.mark.parametrize(
    ("packages", "expected"),
    [
        ([("tf-nightly", "2.19.0.dev20241001")], "tf-nightly"),
        ([("tensorflow-macos", "2.12.0")], "tensorflow-macos"),
        ([("intel-tensorflow", "2.14.0")], "intel-tensorflow"),
        # Windows: `pip install tensorflow` also installs tensorflow-intel.
        ([("tensorflow-intel", "2.15.1"), ("tensorflow", "2.15.1")], "tensorflow"),
    ],
)
def test_tensorflow_package_name(tmp_path, packages, expected):
    for name, version in packages:
        dist(tmp_path, name, version)
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["package"] == expected
    assert facts["version"] == dict(packages)[expected]


def test_first_copy_on_the_path_wins(tmp_path):
    user, system = tmp_path / "user", tmp_path / "system"
    tensorflow(user, "tensorflow", "2.21.0", real_build_info("tensorflow-2.21.0"))
    tensorflow(system, "tensorflow-cpu", "2.16.1", real_build_info("tensorflow-cpu-2.21.0"))
    facts = frameworks.probe(site_dirs=[user, system], environ={}).facts["frameworks"]["tensorflow"]
    assert (facts["package"], facts["version"], facts["cuda_build"]) == ("tensorflow", "2.21.0", True)


@pytest.mark.parametrize(
    ("tf", "keras", "tf_keras", "environ", "legacy", "major"),
    [
        ("2.21.0", "3.15.1", None, {}, False, 3),
        ("2.21.0", "3.15.1", "2.21.0", {}, False, 3),
        ("2.21.0", "3.15.1", "2.21.0", {"TF_USE_LEGACY_KERAS": "1"}, True, 2),
        ("2.21.0", "3.15.1", "2.21.0", {"TF_USE_LEGACY_KERAS": "true"}, True, 2),
        ("2.21.0", "3.15.1", "2.21.0", {"TF_USE_LEGACY_KERAS": "True"}, True, 2),
        # TensorFlow compares the exact strings "true", "True", "1".
        ("2.21.0", "3.15.1", "2.21.0", {"TF_USE_LEGACY_KERAS": "TRUE"}, False, 3),
        ("2.21.0", "3.15.1", "2.21.0", {"TF_USE_LEGACY_KERAS": "0"}, False, 3),
        # Legacy asked for but tf_keras missing: tf.keras fails to import.
        ("2.21.0", "3.15.1", None, {"TF_USE_LEGACY_KERAS": "1"}, True, None),
        ("2.16.1", None, None, {}, False, None),
        ("2.15.1", "2.15.0", None, {}, False, 2),
        ("2.15.1", "2.15.0", "2.15.1", {"TF_USE_LEGACY_KERAS": "1"}, True, 2),
        # TF 2.15 already routes by the installed keras: Keras 3 forced over it wins.
        ("2.15.1", "3.0.5", None, {}, False, 3),
        ("2.14.1", "2.14.0", None, {"TF_USE_LEGACY_KERAS": "1"}, True, 2),
    ],
)
def test_what_tf_keras_resolves_to(tmp_path, tf, keras, tf_keras, environ, legacy, major):
    dist(tmp_path, "tensorflow", tf)
    if keras:
        dist(tmp_path, "keras", keras)
    if tf_keras:
        dist(tmp_path, "tf-keras", tf_keras)
    facts = frameworks.probe(site_dirs=[tmp_path], environ=environ).facts["frameworks"]["keras"]
    assert facts == {"version": keras, "tf_keras": tf_keras, "legacy": legacy, "tf_keras_major": major}


def test_keras_without_tensorflow_has_no_tf_keras(tmp_path):
    dist(tmp_path, "keras", "3.15.1")
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.facts["frameworks"] == {
        "keras": {"version": "3.15.1", "tf_keras": None, "legacy": False, "tf_keras_major": None}
    }


@pytest.mark.parametrize(("version", "cuda"), [("2.13.0+cpu", None), ("2.5.1+cu124", "12.4")])
def test_torch_version_and_its_cuda_from_version_py(tmp_path, version, cuda):
    dist(tmp_path, "torch", version)
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "version.py").write_text(TORCH_VERSION_PY.format(version=version, cuda=cuda))
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    # No torch/lib here: whether it has MPS is unknown; no XPU build, no IPEX, no torch_xla.
    assert facts == {
        "torch": {
            "version": version,
            "cuda": cuda,
            "mps_built": None,
            "xpu": None,
            "hip": None,
            "rocm_build": False,
            "rocm": None,
            "ipex": None,
            "xla": None,
        }
    }


def test_jax_and_a_cpu_only_jaxlib(tmp_path):
    dist(tmp_path, "jax", "0.4.35")
    dist(tmp_path, "jaxlib", "0.4.35")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    assert facts == {"jax": {"version": "0.4.35", "jaxlib": "0.4.35", "cuda_build": False, "cuda": None}}


@pytest.mark.parametrize(
    ("extra", "jaxlib", "expected"),
    [
        (
            "jax-cuda12-plugin",
            "0.4.35",
            {"cuda_build": True, "cuda": "12", "plugin": "jax-cuda12-plugin", "plugin_version": "0.4.35"},
        ),
        (
            "jax-cuda12-pjrt",
            "0.4.35",
            {"cuda_build": True, "cuda": "12", "plugin": "jax-cuda12-pjrt", "pjrt_version": "0.4.35"},
        ),
        (
            "jax-cuda13-plugin",
            "0.7.2",
            {"cuda_build": True, "cuda": "13", "plugin": "jax-cuda13-plugin", "plugin_version": "0.4.35"},
        ),
        (None, "0.1.59+cuda111", {"cuda_build": True, "cuda": "11.1"}),
        (None, "0.4.9+cuda11.cudnn86", {"cuda_build": True, "cuda": "11"}),
    ],
)
def test_jax_cuda_builds(tmp_path, extra, jaxlib, expected):
    dist(tmp_path, "jax", jaxlib.partition("+")[0])
    dist(tmp_path, "jaxlib", jaxlib)
    if extra:
        dist(tmp_path, extra, "0.4.35")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts
    assert facts["frameworks"]["jax"] == {"version": jaxlib.partition("+")[0], "jaxlib": jaxlib, **expected}
    validate_facts({"schema_version": 1, **facts}, "probe")


def test_conda_jaxlib_with_cuda_inside_is_not_called_cpu_only(tmp_path):
    dist(tmp_path, "jaxlib", "0.4.32")
    (tmp_path / "jaxlib" / "cuda").mkdir(parents=True)
    (tmp_path / "jaxlib" / "cuda" / "_versions.so").write_bytes(b"\x7fELF")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]
    assert facts == {"jax": {"version": None, "jaxlib": "0.4.32"}}


def test_no_framework_is_absent(tmp_path):
    dist(tmp_path, "numpy", "2.4.6")
    result = frameworks.probe(site_dirs=[tmp_path, tmp_path / "missing"], environ={})
    assert (result.status, result.facts["frameworks"]) == (ABSENT, {})
    assert result.reason == "no ML framework installed (tensorflow, keras, torch, jax)"
    assert result.facts["packages"]["numpy"] == "2.4.6"  # the atlas's packages are read all the same


def test_packages_listed_in_the_table_are_read_without_importing_them(tmp_path):
    dist(tmp_path, "numpy", "1.26.4")
    dist(tmp_path, "flash-attn", "2.5.8")  # flash_attn-2.5.8.dist-info: the name normalized
    dist(tmp_path, "typing_extensions", "4.5.0")
    dist(tmp_path, "not-in-the-table", "1.0")
    packages = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["packages"]
    assert packages["numpy"] == "1.26.4"
    assert packages["flash-attn"] == "2.5.8"
    assert packages["typing-extensions"] == "4.5.0"
    assert packages["protobuf"] == ""  # looked for and not installed: absent, not unknown
    assert "not-in-the-table" not in packages
    validate_facts({"schema_version": 1, "packages": packages}, "packages")


def test_a_package_version_too_long_to_record_is_left_out_as_unknown(tmp_path):
    dist(tmp_path, "numpy", "9" * 200)
    packages = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["packages"]
    assert "numpy" not in packages and packages["scipy"] == ""


@pytest.mark.host("tensorflow")
def test_this_venvs_tensorflow_cpu_wheel():
    facts = frameworks.probe(environ={}).facts["frameworks"]
    tf = facts["tensorflow"]
    if tf["package"] != "tensorflow-cpu":
        pytest.skip(f"installed TensorFlow is {tf['package']}")
    assert tf["cuda_build"] is False and "cuda" not in tf
    assert Path(tf["location"], "python", "platform", "build_info.py").is_file()
    assert facts["keras"]["tf_keras_major"] == (3 if facts["keras"]["version"].startswith("3.") else 2)


def test_probing_imports_no_framework():
    script = (
        "import json, sys\n"
        "from hwcheck.probes import frameworks\nfrom hwcheck.probes.nvidia import cuda, gpu\n"
        "results = {m.__name__: m.probe().status for m in (gpu, cuda, frameworks)}\n"
        "heavy = sorted(n for n in sys.modules if n.split('.')[0] in "
        "('tensorflow', 'torch', 'jax', 'jaxlib', 'keras', 'tf_keras'))\n"
        "print(json.dumps({'results': results, 'heavy': heavy}))\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    output = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=60,
        check=True,
    ).stdout
    report = json.loads(output)
    assert report["heavy"] == []
    assert set(report["results"]) == {
        "hwcheck.probes.nvidia.gpu",
        "hwcheck.probes.nvidia.cuda",
        "hwcheck.probes.frameworks",
    }


# torch.version.hip of torch 2.7.0.dev20250123+rocm6.3, as collect_env printed it ("ROCM used to
# build PyTorch: 6.3.42131-fa1d09cbd"), https://github.com/pytorch/pytorch/issues/145670.
ROCM_TORCH = ("2.7.0.dev20250123+rocm6.3", "6.3.42131-fa1d09cbd")


def test_a_rocm_torch_names_its_hip_and_rocm_release(tmp_path):
    version, hip = ROCM_TORCH
    dist(tmp_path, "torch", version)
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "version.py").write_text(
        TORCH_VERSION_PY.format(version=version, cuda=None).replace(
            "hip: Optional[str] = None", f"hip: Optional[str] = {hip!r}"
        )
    )
    torch = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]
    rocm_keys = {key: torch[key] for key in ("version", "cuda", "hip", "rocm_build", "rocm")}
    assert rocm_keys == {"version": version, "cuda": None, "hip": hip, "rocm_build": True, "rocm": "6.3"}


def test_a_cuda_torch_is_no_rocm_build(tmp_path):
    dist(tmp_path, "torch", "2.5.1+cu124")
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "version.py").write_text(
        TORCH_VERSION_PY.format(version="2.5.1+cu124", cuda="12.4")
    )
    torch = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]
    assert (torch["rocm_build"], torch["hip"], torch["rocm"]) == (False, None, None)


@pytest.mark.parametrize(("plugin", "rocm"), [("jax-rocm60-plugin", "6.0"), ("jax-rocm7-pjrt", "7")])
def test_a_jax_rocm_plugin_makes_jax_a_rocm_build(tmp_path, plugin, rocm):
    dist(tmp_path, "jax", "0.4.35")
    dist(tmp_path, "jaxlib", "0.4.35")
    dist(tmp_path, plugin, "0.4.35")
    jax = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["jax"]
    assert (jax["rocm_build"], jax["rocm"], jax["plugin"]) == (True, rocm, plugin)
    assert "cuda_build" not in jax


def test_tensorflow_arch_list_keeps_only_architecture_names_and_is_bounded(tmp_path):
    hostile = ["sm_90", "sm_90\x1b[31m", "compute_120", "sm_1234", 7, "../sm_80"] + ["sm_80"] * 500
    build_info = f"build_info = {{'is_cuda_build': True, 'cuda_compute_capabilities': {hostile!r}}}\n"
    tensorflow(tmp_path, "tf-nightly", "2.22.0.dev20260501", build_info)
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["arch_list"][:2] == ["sm_90", "compute_120"]
    assert len(facts["arch_list"]) == 64 and set(facts["arch_list"][2:]) == {"sm_80"}
    validate_facts({"schema_version": 1, "frameworks": {"tensorflow": facts}}, "frameworks probe")


# --------------------------------------------------------------------------- Apple, Intel, TPU runtimes

MACHO = Path(__file__).parent / "fixtures" / "macho"


def torch_install(
    site: Path, version: str, *, lib: dict[str, bytes] | None = None, xpu: str | None = None
) -> None:
    """A torch install: its dist-info, torch/version.py as the wheel writes it, and torch/lib files."""
    dist(site, "torch", version)
    (site / "torch" / "lib").mkdir(parents=True)
    xpu_line = f"xpu: Optional[str] = {xpu!r}\n"
    (site / "torch" / "version.py").write_text(
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
        f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = None\n"
        "git_version = '2236df1770800ffea5697b11b0bb0d910b2e59e1'\nhip: Optional[str] = None\n" + xpu_line
    )
    for name, data in (lib or {}).items():
        (site / "torch" / "lib" / name).write_bytes(data)


def test_the_macos_arm64_wheel_is_built_with_mps_by_its_load_commands(tmp_path):
    # torch 2.6.0's own version.py and the head of its libtorch_cpu.dylib (tests/fixtures/macho).
    head = (MACHO / "torch-2.6.0-macosx_11_0_arm64-libtorch_cpu.dylib.head").read_bytes()
    torch_install(tmp_path, "2.6.0", lib={"libtorch_cpu.dylib": head})
    torch = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]
    assert (torch["mps_built"], torch["xpu"]) == (True, None)


def test_a_libtorch_cpu_linking_no_metal_is_a_build_without_mps(tmp_path):
    head = (MACHO / "torch-2.6.0-macosx_11_0_arm64-libomp.dylib.head").read_bytes()
    torch_install(tmp_path, "2.6.0", lib={"libtorch_cpu.dylib": head})
    assert (
        frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]["mps_built"] is False
    )


def test_a_linux_build_has_no_mps(tmp_path):
    torch_install(tmp_path, "2.13.0+cpu", lib={"libtorch_cpu.so": b"\x7fELF"})
    assert (
        frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]["mps_built"] is False
    )


@pytest.mark.parametrize(
    "garbage", [b"", b"\xcf\xfa\xed\xfe" + b"\0" * 12, b"\xcf\xfa\xed\xfe" + b"\xff" * 28]
)
def test_an_unreadable_libtorch_cpu_leaves_mps_unknown_and_says_why(tmp_path, garbage):
    torch_install(tmp_path, "2.6.0", lib={"libtorch_cpu.dylib": garbage})
    result = frameworks.probe(site_dirs=[tmp_path], environ={})
    assert result.status == OK
    assert result.facts["frameworks"]["torch"]["mps_built"] is None
    assert "libtorch_cpu.dylib" in result.reason and "MPS is unknown" in result.reason


def test_an_xpu_build_names_its_sycl_toolchain_and_ipex_and_torch_xla_are_read(tmp_path):
    # 'XPU used to build PyTorch: 20250201' (collect_env, intel/torch-xpu-ops#2024) is torch.version.xpu.
    torch_install(tmp_path, "2.8.0+xpu", xpu="20250201")
    dist(tmp_path, "intel_extension_for_pytorch", "2.8.10+xpu")
    dist(tmp_path, "torch_xla", "2.8.0")
    torch = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["torch"]
    assert (torch["xpu"], torch["ipex"], torch["xla"]) == ("20250201", "2.8.10+xpu", "2.8.0")


def test_tensorflow_metal_is_read_beside_tensorflow(tmp_path):
    tensorflow(tmp_path, "tensorflow", "2.18.0", real_build_info("tensorflow-cpu-2.21.0"))
    dist(tmp_path, "tensorflow_metal", "1.1.0")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["metal_plugin"] == "1.1.0"


def test_tensorflow_for_tpus_is_a_tensorflow_package(tmp_path):
    tensorflow(tmp_path, "tensorflow-tpu", "2.18.0", real_build_info("tensorflow-cpu-2.21.0"))
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["tensorflow"]
    assert facts["package"] == "tensorflow-tpu"


def test_jax_metal_is_a_plugin_beside_a_cpu_jaxlib(tmp_path):
    dist(tmp_path, "jax", "0.4.26")
    dist(tmp_path, "jaxlib", "0.4.26")
    dist(tmp_path, "jax_metal", "0.0.7")
    facts = frameworks.probe(site_dirs=[tmp_path], environ={}).facts["frameworks"]["jax"]
    assert facts == {
        "version": "0.4.26",
        "jaxlib": "0.4.26",
        "cuda_build": False,
        "cuda": None,
        "plugin": "jax-metal",
        "plugin_version": "0.0.7",
    }
