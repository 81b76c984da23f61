"""Every install remedy in the advice, written from install_plan: doctor, config and install agree.

Apart from install.py, which loads the knowledge tables and the device plug-ins: most advice has
no install remedy, and doctor's start-up (the remembered advice) does not pay for them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Findings whose remedy is the command that installs the framework for this machine.
INSTALL_FINDINGS = (
    "framework-not-installed",
    "tf-not-installed",
    "cuda-build-without-gpu",
    "verify-framework-not-installed",
)
# Every finding whose remedy is rewritten here: those, a trainer's, and a Jetson's pip wheel.
REWRITTEN = frozenset((*INSTALL_FINDINGS, "trainer-not-installed", "tegra-pip-torch-wheel"))


def with_install_lines(findings: tuple[Any, ...], facts: dict[str, Any], framework: str) -> tuple[Any, ...]:
    """The findings with every install remedy written from install_plan (one plan for every command)."""
    if not any(finding.id in REWRITTEN for finding in findings):
        return findings
    from hwcheck.recommendation.install import install_line, install_plan, runs_on

    result = []
    for finding in findings:
        remedy = finding.remedy
        if finding.id in INSTALL_FINDINGS or finding.id == "trainer-not-installed":
            remedy = install_line(facts, framework)
            if finding.id == "cuda-build-without-gpu":  # the CUDA build replaced by the one for here
                package = runs_on(facts, framework)
                remedy = f"pip uninstall {package}; then {install_line(facts, package)}"
        elif finding.id == "tegra-pip-torch-wheel" and remedy and ", or move" in remedy:
            plan = install_plan(facts, "torch")
            if plan["pip"]:
                remedy = (
                    f"Install NVIDIA's build for this JetPack: {plan['pip']}"
                    + remedy[remedy.index(", or move") :]
                )
        result.append(finding._replace(remedy=remedy) if remedy != finding.remedy else finding)
    return tuple(result)
