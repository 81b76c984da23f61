"""Which release of one package another needs (rules/knowledge/pairings.toml), as rule variables."""

from __future__ import annotations

from hwcheck.engine import pairings


def _facts(torch=None, **packages):
    facts = {"packages": packages}
    if torch is not None:
        facts["frameworks"] = {"torch": {"version": torch}}
    return facts


def test_a_torchvision_of_another_torch_release_is_off():
    found = pairings.variables(_facts("2.6.0", torchvision="0.23.0"))["torchvision_for_torch"]
    assert found == {"wanted": "0.21", "installed": "0.23.0", "off": True}


def test_the_torchvision_of_the_same_release_with_a_local_tag_is_not_off():
    found = pairings.variables(_facts("2.8.0+cu128", torchvision="0.23.0+cu128"))["torchvision_for_torch"]
    assert found["wanted"] == "0.23" and found["off"] is False


def test_unknown_or_absent_releases_are_never_off():
    variables = pairings.variables(_facts(None, torchvision="0.23.0"))
    assert variables["torchvision_for_torch"] == {"wanted": None, "installed": "0.23.0", "off": False}
    absent = pairings.variables(_facts("2.6.0", torchvision=""))["torchvision_for_torch"]
    assert absent["installed"] is None and absent["off"] is False  # "" is not installed: nothing to pair


def test_a_minimum_takes_the_last_row_at_or_below_the_version():
    assert pairings.variables({"packages": {"jax": "0.2.26", "jaxlib": "0.1.69"}})["jaxlib_for_jax"]["off"]
    newer = pairings.variables({"packages": {"jax": "0.3.3", "jaxlib": "0.1.75"}})["jaxlib_for_jax"]
    assert newer["wanted"] == "0.3.0" and newer["off"]
    older = pairings.variables({"packages": {"jax": "0.2.14", "jaxlib": "0.1.69"}})["jaxlib_for_jax"]
    assert older["wanted"] is None and not older["off"]  # below every row: the table says nothing


def test_the_c_library_floor_of_a_torch_build():
    facts = {"os": {"glibc": "2.12"}, "frameworks": {"torch": {"version": "1.0.0"}}}
    assert pairings.variables(facts)["glibc_for_torch"] == {
        "wanted": "2.17",
        "installed": "2.12",
        "off": True,
    }
    facts["os"]["glibc"] = ""  # musl: not glibc, no floor applies
    assert pairings.variables(facts)["glibc_for_torch"]["off"] is False
