"""What the rules make of the libraries a framework will really load (facts["loaded"]) and of
JAX's plugin versions, and of several visible MIG instances."""

from __future__ import annotations

import json

from hwcheck.engine import build_context
from hwcheck.recommendation import recommend

V100 = {"index": 0, "name": "Tesla V100-SXM2-32GB", "compute_capability": "7.0"}
A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}


def _facts(**parts):
    return {"schema_version": 1, "os": {"system": "Linux"}, **parts}


def _findings(facts, framework):
    recommendation = recommend(facts, framework=framework)
    return recommendation, {finding.id: finding for finding in recommendation.findings}


def _torch(version, cuda, built, loaded, environment=None):
    return _facts(
        gpus=[V100],
        environment=environment or {},
        frameworks={"torch": {"version": version, "cuda": cuda, "cudnn": built}},
        loaded={"torch": {"cudnn": loaded}},
    )


def test_an_older_cudnn_first_on_ld_library_path_is_an_error_with_the_path_to_drop():
    # pytorch/pytorch#80637
    shadow = "/public/apps/cudnn/v8.0.3.33-cuda.11.0/cuda/lib64"
    facts = _torch(
        "1.12.0+cu113",
        "11.3",
        "8.3.2",
        {
            "version": "8.0.3",
            "path": f"{shadow}/libcudnn.so.8",
            "source": "LD_LIBRARY_PATH",
            "found_by": "LD_LIBRARY_PATH",
        },
        {"LD_LIBRARY_PATH": f"{shadow}:/public/apps/cuda/11.0/lib64"},
    )
    recommendation, found = _findings(facts, "torch")
    error = found["cudnn-shadowed-older-than-build"]
    assert error.severity == "error"
    assert "built with cuDNN 8.3.2" in error.message and "cuDNN 8.0.3 first" in error.message
    assert (
        f"Take {shadow} out of LD_LIBRARY_PATH (export LD_LIBRARY_PATH=/public/apps/cuda/11.0/lib64)"
        in error.remedy
    )
    assert recommendation.device == "gpu"  # the GPU stays the target once the library is fixed


def test_an_older_pip_cudnn_gets_the_pinned_wheel():
    facts = _torch(
        "2.4.1+cu121",
        "12.1",
        "9.1.0.70",
        {
            "version": "9.0.0.312",
            "path": "/site/nvidia/cudnn/lib/libcudnn.so.9",
            "source": "pip",
            "found_by": "RPATH",
        },
    )
    _, found = _findings(facts, "torch")
    assert "pip install nvidia-cudnn-cu12==9.1.0.70 " in found["cudnn-shadowed-older-than-build"].remedy


def test_a_cudnn_as_new_or_newer_in_the_same_major_is_fine():
    for version in ("9.1.0.70", "9.1.1", "9.5.0"):
        facts = _torch(
            "2.4.1+cu121", "12.1", "9.1.0.70", {"version": version, "source": "pip", "found_by": "RPATH"}
        )
        assert "cudnn-shadowed-older-than-build" not in _findings(facts, "torch")[1]
    assert not build_context(_torch("2.4.1", "12.1", None, {"version": "8.0.3"}), framework="torch")["libs"][
        "cudnn_too_old"
    ]  # a wheel that pins nothing (bundled cuDNN) gives nothing to compare with


def test_tensorflow_judges_the_copy_it_will_load():
    facts = _facts(
        gpus=[V100],
        frameworks={"tensorflow": {"version": "2.12.0", "cuda_build": True, "cuda": "11.8", "cudnn": "8"}},
        cudnn={"version": "8.6.0", "source": "pip"},
        loaded={
            "tensorflow": {
                "cudnn": {
                    "version": "8.0.5",
                    "path": "/usr/local/cuda/lib64/libcudnn.so.8",
                    "found_by": "LD_LIBRARY_PATH",
                    "source": "LD_LIBRARY_PATH",
                }
            }
        },
    )
    _, found = _findings(facts, "tensorflow")
    assert (
        "cuDNN 8.0.5 (/usr/local/cuda/lib64/libcudnn.so.8, found by LD_LIBRARY_PATH)"
        in found["cudnn-older-minor-than-build"].message
    )


def _jax(**jax):
    base = {
        "version": "0.9.0.1",
        "jaxlib": "0.9.0.1",
        "cuda_build": True,
        "cuda": "12",
        "plugin": "jax-cuda12-plugin",
    }
    return _facts(gpus=[A100], frameworks={"jax": {**base, **jax}})


def test_a_plugin_of_another_version_than_jaxlib_leaves_jax_on_the_cpu():
    recommendation, found = _findings(_jax(plugin_version="0.9.2", pjrt_version="0.9.2"), "jax")
    error = found["jax-plugin-version-mismatch"]
    assert "0.9.2" in error.message and "0.9.0.1" in error.message
    assert error.remedy.startswith("pip install 'jax[cuda12]==0.9.0.1'")
    assert recommendation.device == "cpu"


def test_matching_plugin_pjrt_and_jaxlib_and_dev_suffixes_are_fine():
    for plugin, pjrt in (("0.9.0.1", "0.9.0.1"), ("0.9.0.1", None)):
        recommendation, found = _findings(_jax(plugin_version=plugin, pjrt_version=pjrt), "jax")
        assert "jax-plugin-version-mismatch" not in found and recommendation.device == "gpu"
    _, found = _findings(_jax(plugin_version="0.9.0.1", pjrt_version="0.9.1"), "jax")
    assert "PJRT runtime 0.9.1" in found["jax-plugin-version-mismatch"].message


def test_cusparse_or_cudnn_older_than_the_plugin_allows_is_an_error():
    facts = _jax(plugin_version="0.9.0.1", requires={"cusparse": "12.5.4.2", "cudnn": "9.8"})
    facts["loaded"] = {
        "jax": {
            "cusparse": {
                "version": "12.0.2.55",
                "path": "/usr/local/cuda-12.0/lib64/libcusparse.so.12",
                "found_by": "LD_LIBRARY_PATH",
            },
            "cudnn": {"version": "9.10.1.4", "path": "/site/nvidia/cudnn/lib/libcudnn.so.9", "source": "pip"},
        }
    }
    recommendation, found = _findings(facts, "jax")
    error = found["jax-cuda-library-too-old"]
    assert (
        "cuSPARSE 12.0.2.55 (/usr/local/cuda-12.0/lib64/libcusparse.so.12) is older than 12.5.4.2"
        in error.message
    )
    assert "cuDNN 9.10" not in error.message  # 9.10 is newer than 9.8
    assert recommendation.device == "cpu"


def test_mig_devices_listed_in_cuda_visible_devices_name_the_first_as_the_one_used():
    gpu = {
        **A100,
        "uuid": "GPU-1",
        "mig": True,
        "mig_devices": [
            {
                "index": 0,
                "uuid": "MIG-aaaa",
                "profile": "3g.40gb",
                "gpu_instance_id": 1,
                "compute_instance_id": 0,
            },
            {
                "index": 1,
                "uuid": "MIG-bbbb",
                "profile": "3g.40gb",
                "gpu_instance_id": 2,
                "compute_instance_id": 0,
            },
        ],
    }
    facts = _facts(gpus=[gpu], environment={"CUDA_VISIBLE_DEVICES": "MIG-bbbb,MIG-aaaa"})
    _, found = _findings(facts, "torch")
    warning = found["gpu-mig-several-instances"]
    assert (
        "will use NVIDIA A100-SXM4-80GB MIG 3g.40gb (GPU 0, GI 2 CI 0, MIG-bbbb), the first listed"
        in warning.message
    )
    one = _facts(gpus=[gpu], environment={"CUDA_VISIBLE_DEVICES": "MIG-aaaa"})
    assert "gpu-mig-several-instances" not in _findings(one, "torch")[1]


def test_a_library_known_by_its_soname_alone_is_a_warning_not_an_error_on_a_working_h100():
    # Recorded on an H100 where JAX listed CudaDevice(id=0) and trained (docs/measurements/
    # h100-2026-11-27/machine.txt): its cuSPARSE was read as the soname's "12", and "12" against the
    # plugin's floor 12.6.2.49 used to be an error that sent the advice to the CPU.
    from conftest import ROOT

    facts = json.loads((ROOT / "tests/fixtures/facts/h100-2026-11-27.json").read_text())
    recommendation, found = _findings(facts, "jax")
    assert "jax-cuda-library-too-old" not in found
    unsure = found["jax-cuda-library-version-unknown"]
    assert unsure.severity == "warning" and "cuSPARSE 12 " in unsure.message
    assert "import jax; print(jax.devices())" in unsure.remedy
    assert (recommendation.device, recommendation.policy) == ("gpu", "mixed_bfloat16")
    # a version that is known and older stays an error
    facts["loaded"]["jax"]["cusparse"]["version"] = "12.5.1.3"
    recommendation, found = _findings(facts, "jax")
    assert found["jax-cuda-library-too-old"].severity == "error"
    assert "jax-cuda-library-version-unknown" not in found
