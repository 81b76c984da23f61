"""One install plan: doctor's fix lines, config's warning and `hwcheck install` print the same
command for the same machine, over every replayed machine in tests/fixtures/facts/ (their
recorded hardware, with the frameworks taken out so that every command has something to install).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from hwcheck.cli import main
from hwcheck.recommendation import recommend
from hwcheck.recommendation.install import install_plan

FACTS = sorted((Path(__file__).parent / "fixtures" / "facts").glob("*.json"))
# The framework doctor and config advise -> the package `hwcheck install` installs for it.
FRAMEWORKS = {"torch": "torch", "jax": "jax", "lightning": "torch", "keras-custom": "tensorflow"}
NOT_INSTALLED = ("framework-not-installed", "tf-not-installed", "trainer-not-installed")


def without_frameworks(path: Path, tmp_path: Path) -> Path:
    facts = json.loads(path.read_text())
    facts["frameworks"] = {}
    replay = tmp_path / path.name
    replay.write_text(json.dumps(facts))
    return replay


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize("path", FACTS, ids=[path.stem for path in FACTS])
def test_doctor_config_and_install_print_one_command_per_machine(path, tmp_path, capsys):
    replay = without_frameworks(path, tmp_path)
    facts = json.loads(replay.read_text())
    for framework, package in FRAMEWORKS.items():
        plan = install_plan(facts, package)
        status, printed, _ = run(capsys, "install", package, "--facts", str(replay))
        assert status == (0 if plan["pip"] else 1)
        expected = plan["pip"] or plan["why"]
        if plan["pip"]:
            assert plan["pip"] in printed.splitlines(), (framework, printed)
        engine_framework = "tensorflow" if framework == "keras-custom" else framework
        advice = recommend(facts, framework=engine_framework)
        remedies = [f.remedy or "" for f in advice.findings if f.id in NOT_INSTALLED]
        assert remedies and all(expected in remedy for remedy in remedies), (framework, remedies)
        _, printed, _ = run(
            capsys, "doctor", "--facts", str(replay), "--framework", engine_framework, "--json"
        )
        doctor = json.loads(printed)["recommendation"]["findings"]
        assert [f["remedy"] for f in doctor if f["id"] in NOT_INSTALLED] == remedies
        script = tmp_path / f"train-{framework}.py"
        _, _, warned = run(
            capsys, "config", "--facts", str(replay), "--framework", framework, "-o", str(script)
        )
        assert expected in " ".join(warned.split()), (framework, warned)


def test_no_cuda_wheel_is_proposed_for_a_machine_without_a_usable_gpu():
    cpu = json.loads(
        (Path(__file__).parent / "fixtures" / "facts" / "cpu-amx-torch213-jax0102.json").read_text()
    )
    assert (
        install_plan(cpu, "torch")["pip"]
        == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    )
    assert install_plan(cpu, "jax")["pip"] == "pip install jax"


def test_a_cuda_build_on_a_machine_without_a_gpu_is_a_finding_whose_fix_is_the_cpu_build():
    # The machine of cpu-amx-torch213-jax0102.json with the torch that `pip install torch` put
    # there: 2.14.1+cu130 (what following the plain command installed on it); no NVIDIA on the bus.
    cpu = json.loads(
        (Path(__file__).parent / "fixtures" / "facts" / "cpu-amx-torch213-jax0102.json").read_text()
    )
    facts = {
        **cpu,
        "frameworks": {"torch": {"version": "2.14.1+cu130", "cuda": "13.0"}},
        "pci": {"devices": []},
    }
    advice = recommend(facts, framework="torch", probes={"gpu": {"status": "absent"}})
    [finding] = [f for f in advice.findings if f.id == "cuda-build-without-gpu"]
    assert "2.14.1+cu130 is a CUDA build" in finding.message
    assert finding.remedy == (
        "pip uninstall torch; then pip install torch --index-url https://download.pytorch.org/whl/cpu"
    )
    # The CPU build, or an NVIDIA GPU on the bus: nothing to say.
    cpu_build = {**facts, "frameworks": {"torch": {"version": "2.13.0+cpu"}}}
    assert "cuda-build-without-gpu" not in [f.id for f in recommend(cpu_build, framework="torch").findings]
    unknown_bus = {key: value for key, value in facts.items() if key != "pci"}
    assert "cuda-build-without-gpu" not in [f.id for f in recommend(unknown_bus, framework="torch").findings]


def test_a_jetson_that_doctor_advises_on_its_gpu_gets_nvidia_s_build_not_the_cpu_wheel():
    # jetson-orin-nx-jp62-torch260-cu126.json: a Jetson Orin NX under JetPack 6.2 (L4T 36.4.3).
    path = Path(__file__).parent / "fixtures" / "facts" / "jetson-orin-nx-jp62-torch260-cu126.json"
    facts = json.loads(path.read_text())
    assert recommend(facts, framework="torch").device == "gpu"
    plan = install_plan(facts, "torch")
    assert plan["target"] == "jetpack"
    assert plan["pip"] == "pip install torch --index-url https://pypi.jetson-ai-lab.io/jp6/cu126"
    assert "whl/cpu" not in (plan["pip"] or "")
    tensorflow = install_plan(facts, "tensorflow")["pip"]
    assert tensorflow == (
        "pip install tensorflow --extra-index-url https://developer.download.nvidia.com/compute/redist/jp/v61"
    )
    # JetPack 7 (L4T 38) runs the SBSA CUDA of download.pytorch.org's aarch64 wheels.
    thor = {**facts, "tegra": {**facts["tegra"], "l4t": "38.2", "compute_capability": "11.0"}}
    assert install_plan(thor, "torch")["target"] != "jetpack"


def test_a_gpu_only_the_framework_saw_gets_the_cuda_build_doctor_advises_for():
    # h100-unprobed-torch-verified.json: no GPU probed, PyTorch itself listed the H100.
    path = Path(__file__).parent / "fixtures" / "facts" / "h100-unprobed-torch-verified.json"
    facts = json.loads(path.read_text())
    assert recommend(facts, framework="torch").device == "gpu"
    assert "download.pytorch.org/whl/cu" in install_plan(facts, "torch")["pip"]


def test_the_plan_is_linear_in_distinct_devices():
    # 100,000 GPUs of one recorded kind (the Tesla T4 of tests/fixtures/nvml/tesla-t4.json).
    t4 = {"vendor": "nvidia", "name": "Tesla T4", "compute_capability": "7.5"}
    few = {
        "schema_version": 1,
        "os": {"system": "Linux"},
        "gpus": [t4],
        "nvidia_driver": {"version": "515.105.01"},
    }
    many = {**few, "gpus": [dict(t4, index=i) for i in range(100_000)]}
    started = time.perf_counter()
    assert install_plan(many, "torch")["pip"] == install_plan(few, "torch")["pip"]
    # 0.05 s idle on the 2-core dev VM (27 s when every GPU was checked against every build).
    assert time.perf_counter() - started < 2.0
