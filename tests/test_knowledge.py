"""The knowledge tables in rules/knowledge/: their shape, their sources and the lookups over them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema_rs import Draft202012Validator, meta

from hwcheck import knowledge
from hwcheck.base.errors import InputError
from hwcheck.base.versions import parse_version

KNOWLEDGE_DIR = knowledge.rules_dir() / "knowledge"
SCHEMA_PATH = Path(knowledge.__file__).parent.parent / "facts" / "schema" / "knowledge-tables.schema.json"
TABLE_FILES = sorted(KNOWLEDGE_DIR.glob("*.toml"))


def _schema_for(table: str) -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    definition = table if table in schema["$defs"] else "table"
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{definition}"})


# --------------------------------------------------------------------------- every table


def test_the_schema_itself_is_valid() -> None:
    meta.validate(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def test_the_five_core_tables_are_shipped() -> None:
    # NVIDIA's three tables live in one vendor file (a vendor is one knowledge file).
    names = {path.stem for path in TABLE_FILES} | set(knowledge.load("nvidia"))
    assert {"gpus", "architectures", "tensorflow", "cuda_drivers", "cpu_features"} <= names


@pytest.mark.parametrize("path", TABLE_FILES, ids=lambda path: path.name)
def test_every_table_matches_its_schema_and_names_its_sources(path: Path) -> None:
    document = knowledge.read_toml(path)
    errors = [error.message for error in _schema_for(path.stem).iter_errors(document)]
    assert errors == []
    sources = document["meta"]["sources"]
    assert sources and all(isinstance(source, str) and source.strip() for source in sources)


def test_the_schema_rejects_a_gpu_without_a_compute_capability() -> None:
    document = knowledge.load("nvidia")["gpus"]
    broken = {**document, "gpu": [{"name": "NVIDIA X1", "segment": "consumer"}]}
    assert list(_schema_for("gpus").iter_errors(broken))


def test_a_table_without_sources_fails_the_schema() -> None:
    assert list(_schema_for("tpu").iter_errors({"meta": {"title": "no sources"}}))


def test_a_malformed_toml_file_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "gpus.toml"
    broken.write_text('[meta]\ntitle = "unterminated\n', encoding="utf-8")
    with pytest.raises(InputError) as raised:
        knowledge.read_toml(broken)
    message = str(raised.value)
    assert str(broken) in message
    assert "malformed TOML" in message
    assert "\n" not in message


def test_a_missing_table_raises_input_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file") as raised:
        knowledge.read_toml(tmp_path / "absent.toml")
    assert "absent.toml" in str(raised.value)


# --------------------------------------------------------------------------- GPU names

# Names exactly as NVML / deviceQuery printed them on real machines, with the compute
# capability the same capture reports (deviceQuery "CUDA Capability" or --query-gpu=compute_cap).
# Captures: /work/shared/fixtures/gpu-captures (see its SOURCES.md).
CAPTURED_WITH_CC = [
    ("NVIDIA A100-SXM4-80GB", "8.0", "thamada_gls/A100SXMx4_deviceQuery.txt"),
    ("NVIDIA A10", "8.6", "thamada_gls/A10_deviceQuery.txt"),
    ("NVIDIA A40", "8.6", "thamada_gls/A40x10_deviceQuery.txt"),
    ("NVIDIA GH200 480GB", "9.0", "thamada_gls/GH200_deviceQuery.txt"),
    ("NVIDIA GeForce GTX 1050 Ti", "6.1", "thamada_gls/GTX1050Ti_deviceQuery.txt"),
    ("NVIDIA GeForce GTX 680", "3.0", "thamada_gls/GTX680_deviceQuery.txt"),
    ("NVIDIA H100 NVL", "9.0", "thamada_gls/H100NVLx2_deviceQuery.txt"),
    ("NVIDIA H100 80GB HBM3", "9.0", "thamada_gls/H100SXMx8_deviceQuery.txt"),
    ("NVIDIA H200", "9.0", "thamada_gls/H200_deviceQuery.txt"),
    ("NVIDIA L40S", "8.9", "thamada_gls/L40S_deviceQuery.txt"),
    ("NVIDIA L4", "8.9", "thamada_gls/L4_deviceQuery.txt"),
    ("NVIDIA RTX 2000 Ada Generation", "8.9", "thamada_gls/RTX2000Ada_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 3070", "8.6", "thamada_gls/RTX3070_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 3080", "8.6", "thamada_gls/RTX3080_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 3090", "8.6", "thamada_gls/RTX3090_deviceQuery.txt"),
    ("NVIDIA RTX 4000 Ada Generation", "8.9", "thamada_gls/RTX4000Ada_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 4060 Ti", "8.9", "thamada_gls/RTX4060Ti_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 4090", "8.9", "thamada_gls/RTX4090_deviceQuery.txt"),
    ("NVIDIA GeForce RTX 5090", "12.0", "thamada_gls/RTX5090_deviceQuery.txt"),
    ("NVIDIA RTX 6000 Ada Generation", "8.9", "thamada_gls/RTX6000Ada_x8_deviceQuery.txt"),
    ("NVIDIA RTX A6000", "8.6", "thamada_gls/RTX_A6000_x9_deviceQuery.txt"),
    ("Tesla V100-SXM2-16GB", "7.0", "thamada_gls/V100_x8_deviceQuery.txt"),
    (
        "NVIDIA GeForce RTX 2080 SUPER",
        "7.5",
        "nvidia_gpu_exporter/internal_captures/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
    ),
    (
        "NVIDIA GeForce RTX 4080 SUPER",
        "8.9",
        "nvidia_gpu_exporter/internal_captures/linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt",
    ),
    ("NVIDIA H200", "9.0", "nvidia_gpu_exporter/internal_captures/linux-x86_64__nvidia-h200__590.48.01.txt"),
]

# Names NVML printed in captures that carry no compute capability (nvidia-smi -q -x); the
# expected value is NVIDIA's CUDA GPUs page for that model.
CAPTURED_NAME_ONLY = [
    ("NVIDIA A100-SXM4-40GB", "8.0", "netdata/a100-sxm4-mig.xml"),
    ("NVIDIA GeForce RTX 2080", "7.5", "netdata/rtx-2080-win.xml"),
    ("NVIDIA GeForce RTX 4090", "8.9", "netdata/rtx-4090-driver-535.xml"),
    ("NVIDIA RTX PRO 6000 Blackwell", "12.0", "netdata/rtx-pro-6000-driver-580.xml"),
    ("Tesla P100-PCIE-16GB", "6.0", "netdata/tesla-p100.xml"),
    ("GeForce GTX 1070 Ti", "6.1", "telegraf/gtx-1070-ti.xml"),
    ("Quadro P2000", "6.1", "telegraf/quadro-p2000-v12.xml"),
    ("Quadro P400", "6.1", "telegraf/quadro-p400.xml"),
    ("NVIDIA GeForce RTX 3060", "8.6", "telegraf/rtx-3060-v12.xml"),
    ("NVIDIA GeForce RTX 3080", "8.6", "telegraf/rtx-3080-v13.xml"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "8.9", "telegraf/rtx-4000-sff-ada-v13.xml"),
    ("Tesla T4", "7.5", "telegraf/tesla-t4.xml"),
    # Issue 19 deliberately changed this: the A10G was "unknown" until a cited row was added.
    ("NVIDIA A10G", "8.6", "telegraf/a10g.xml"),
]

# Captured names the table leaves unmatched on purpose: no official compute capability for the
# laptop parts not listed, and early drivers call a new board "Graphics Device".
CAPTURED_UNKNOWN = [
    ("NVIDIA GeForce RTX 3060 Laptop GPU", "netdata/rtx-3060.xml"),
    ("Graphics Device", "telegraf/gtx-1660-ti.xml"),
]


@pytest.mark.parametrize(("name", "capability", "capture"), CAPTURED_WITH_CC + CAPTURED_NAME_ONLY)
def test_captured_nvml_names_resolve_to_their_compute_capability(
    name: str, capability: str, capture: str
) -> None:
    assert knowledge.compute_capability_for(name) == capability, capture


# Names as NVML prints them for current parts: laptop, Blackwell workstation and data-centre.
@pytest.mark.parametrize(
    ("name", "model", "capability"),
    [
        ("NVIDIA GeForce RTX 5090 Laptop GPU", "GeForce RTX 5090 Laptop GPU", "12.0"),
        ("NVIDIA GeForce RTX 5060 Laptop GPU", "GeForce RTX 5060 Laptop GPU", "12.0"),
        ("NVIDIA GeForce RTX 4060 Laptop GPU", "GeForce RTX 4060 Laptop GPU", "8.9"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "GeForce RTX 4090 Laptop GPU", "8.9"),
        ("NVIDIA RTX 5000 Ada Generation Laptop GPU", "NVIDIA RTX 5000 Ada Generation Laptop GPU", "8.9"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "12.0",
        ),
        ("NVIDIA B200", "NVIDIA B200", "10.0"),
        ("NVIDIA GB300", "NVIDIA GB300", "10.3"),
    ],
)
def test_current_laptop_workstation_and_data_centre_names_resolve(
    name: str, model: str, capability: str
) -> None:
    entry = knowledge.gpu_model(name)
    assert entry is not None
    assert (entry["name"], entry["compute_capability"]) == (model, capability)


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GeForce RTX 6090 Laptop GPU",  # a future model
        "NVIDIA GeForce RTX 5070 Ti Laptop GPU",  # no recorded NVML name: not listed
        "NVIDIA GeForce RTX 3060 Laptop GPU",
        "NVIDIA B900",
    ],
)
def test_unlisted_laptop_and_future_names_never_borrow_a_desktop_entry(name: str) -> None:
    assert knowledge.gpu_model(name) is None


def test_every_laptop_entry_is_named_as_nvml_prints_it_and_cites_a_source() -> None:
    laptops = [
        entry for entry in knowledge.load("nvidia")["gpus"]["gpu"] if "laptop" in entry["name"].lower()
    ]
    assert laptops
    for entry in laptops:
        assert entry["name"].endswith(" Laptop GPU"), entry["name"]
        assert "source" in entry, entry["name"]
        desktop = knowledge.gpu_model(entry["name"].removesuffix(" Laptop GPU"))
        if desktop is not None:
            # Same architecture as the desktop namesake, yet a separate entry.
            assert desktop["name"] != entry["name"]
            assert desktop["compute_capability"] == entry["compute_capability"]


@pytest.mark.parametrize(("name", "capture"), CAPTURED_UNKNOWN)
def test_captured_names_without_an_official_capability_stay_unknown(name: str, capture: str) -> None:
    assert knowledge.gpu_model(name) is None, capture
    assert knowledge.compute_capability_for(name) is None


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100"),
        ("A100-SXM4-80GB", "NVIDIA A100"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100"),
        ("NVIDIA A100-SXM4-40GB MIG 1g.5gb", "NVIDIA A100"),
        ("Tesla V100-SXM2-16GB", "NVIDIA V100"),
        ("V100-SXM2-16GB", "NVIDIA V100"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100"),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"),
        ("GeForce RTX 3090", "GeForce RTX 3090"),
        ("RTX 3090", "GeForce RTX 3090"),
        ("nvidia geforce rtx 3090", "GeForce RTX 3090"),
        ("  NVIDIA  GeForce RTX 3090 ", "GeForce RTX 3090"),
        ("Tesla T4", "NVIDIA T4"),
        ("T4", "NVIDIA T4"),
        ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada"),
        (
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
        ),
    ],
)
def test_prefixes_and_suffixes_of_nvml_names_are_understood(name: str, model: str) -> None:
    assert knowledge.gpu_model(name)["name"] == model


@pytest.mark.parametrize(
    ("shorter", "longer"),
    [
        ("NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 3060 Ti"),
        ("NVIDIA A10", "NVIDIA A100-PCIE-40GB"),
        ("NVIDIA L4", "NVIDIA L40"),
        ("NVIDIA L40", "NVIDIA L40S"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 NVL"),
        ("NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080 SUPER"),
        ("Tesla P4", "Tesla P40"),
        ("NVIDIA T4", "NVIDIA T400"),
        ("NVIDIA A2", "NVIDIA RTX A2000"),
        ("NVIDIA RTX 4000 Ada Generation", "NVIDIA RTX 4000 SFF Ada Generation"),
        ("NVIDIA RTX PRO 6000 Blackwell", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
        ("NVIDIA GB200", "NVIDIA GB300"),
    ],
)
def test_similar_names_resolve_to_different_models(shorter: str, longer: str) -> None:
    assert knowledge.gpu_model(shorter)["name"] != knowledge.gpu_model(longer)["name"]


def test_names_that_differ_in_one_word_can_differ_in_compute_capability() -> None:
    # The Maxwell GeForce GTX TITAN X and the Pascal NVIDIA TITAN X.
    assert knowledge.compute_capability_for("GeForce GTX TITAN X") == "5.2"
    assert knowledge.compute_capability_for("NVIDIA TITAN X") == "6.1"
    # An RTX 6000 Ada is not a Quadro RTX 6000 (Turing).
    assert knowledge.compute_capability_for("Quadro RTX 6000") == "7.5"
    assert knowledge.compute_capability_for("NVIDIA RTX 6000 Ada Generation") == "8.9"


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA A100X",
        "NVIDIA GeForce RTX 30",
        "RTX",
        "",
        "   ",
        "AMD Instinct MI300X",
        "NVIDIA GeForce RTX 3090 Ti Turbo Edition",
    ],
)
def test_unknown_or_partial_names_are_not_guessed(name: str) -> None:
    assert knowledge.gpu_model(name) is None


def test_a_non_string_name_is_unknown() -> None:
    assert knowledge.gpu_model(None) is None  # type: ignore[arg-type]
    assert knowledge.compute_capability_for(3090) is None  # type: ignore[arg-type]


def test_every_listed_gpu_has_a_known_architecture() -> None:
    families = {row["compute_capability"] for row in knowledge.load("nvidia")["architectures"]["capability"]}
    missing = {
        g["name"]: g["compute_capability"]
        for g in knowledge.load("nvidia")["gpus"]["gpu"]
        if g["compute_capability"] not in families
    }
    assert missing == {}


def test_no_two_gpu_entries_claim_the_same_name() -> None:
    table = knowledge.load("nvidia")["gpus"]
    drop = frozenset(table["matching"]["drop_leading"])
    seen: dict[tuple[str, ...], str] = {}
    for entry in table["gpu"]:
        for spelling in (entry["name"], *entry.get("aliases", ())):
            tokens = knowledge.gpus._name_tokens(spelling, drop)
            assert seen.setdefault(tokens, entry["name"]) == entry["name"], spelling


def test_every_alias_resolves_to_its_own_entry() -> None:
    for entry in knowledge.load("nvidia")["gpus"]["gpu"]:
        for spelling in (entry["name"], *entry.get("aliases", ())):
            assert knowledge.gpu_model(spelling)["name"] == entry["name"], spelling


def test_gpu_model_returns_a_copy() -> None:
    model = knowledge.gpu_model("NVIDIA L4")
    model["compute_capability"] = "1.0"
    assert knowledge.compute_capability_for("NVIDIA L4") == "8.9"


# --------------------------------------------------------------------------- features


@pytest.mark.parametrize(
    ("capability", "family", "tensor_cores", "tf32", "bf16", "fp8"),
    [
        ("6.0", "Pascal", False, False, False, False),
        ("6.1", "Pascal", False, False, False, False),
        ("7.0", "Volta", True, False, False, False),
        ("7.5", "Turing", True, False, False, False),
        ("8.0", "Ampere", True, True, True, False),
        ("8.6", "Ampere", True, True, True, False),
        ("8.7", "Ampere", True, True, True, False),
        ("8.9", "Ada", True, True, True, True),
        ("9.0", "Hopper", True, True, True, True),
        ("10.0", "Blackwell", True, True, True, True),
        ("12.0", "Blackwell", True, True, True, True),
    ],
)
def test_features_at_the_boundaries(
    capability: str, family: str, tensor_cores: bool, tf32: bool, bf16: bool, fp8: bool
) -> None:
    assert knowledge.architecture(capability) == {
        "compute_capability": capability,
        "family": family,
        "tensor_cores": tensor_cores,
        "tf32": tf32,
        "bf16": bf16,
        "fp8": fp8,
    }


def test_features_compare_capabilities_as_numbers_not_text() -> None:
    # "10.0" sorts before "8.9" as text.
    assert knowledge.architecture("10.0")["fp8"] is True
    assert knowledge.architecture("12.1")["bf16"] is True


def test_an_unlisted_future_capability_keeps_the_thresholds_but_no_family() -> None:
    future = knowledge.architecture("13.0")
    assert future["family"] is None
    assert future["tensor_cores"] and future["bf16"] and future["fp8"]


@pytest.mark.parametrize("garbage", ["", "abc", "seven"])
def test_an_unparseable_capability_has_no_features(garbage: str) -> None:
    features = knowledge.architecture(garbage)
    assert features["family"] is None
    assert not any(features[name] for name in knowledge.FEATURES)


def test_gtx_1660_ti_has_no_tensor_cores_despite_cc_7_5() -> None:
    features = knowledge.gpu_features("7.5", "NVIDIA GeForce GTX 1660 Ti")
    assert features["family"] == "Turing"
    assert features["tensor_cores"] is False
    assert "Tensor Cores" in features["exception"]
    # The same capability on an RTX part keeps them.
    assert knowledge.gpu_features("7.5", "NVIDIA GeForce RTX 2080 Ti")["tensor_cores"] is True
    assert knowledge.gpu_features("7.5", "Tesla T4")["tensor_cores"] is True


def test_the_gtx_16_exception_covers_models_the_table_does_not_list() -> None:
    # No compute capability is listed for the GTX 1650 SUPER, but NVML reports one.
    assert knowledge.gpu_model("NVIDIA GeForce GTX 1650 SUPER") is None
    assert knowledge.gpu_features("7.5", "NVIDIA GeForce GTX 1650 SUPER")["tensor_cores"] is False
    # GTX 1060 (Pascal) and GTX 1650 both start with "GTX 16"/"GTX 10" text; only 16xx match.
    assert "exception" not in knowledge.gpu_features("6.1", "NVIDIA GeForce GTX 1060")


def test_gpu_features_looks_the_capability_up_by_name_when_it_is_missing() -> None:
    assert knowledge.gpu_features(None, "NVIDIA A100-SXM4-80GB")["bf16"] is True
    assert knowledge.gpu_features(None, "NVIDIA GeForce GTX 1660 Ti")["compute_capability"] == "7.5"
    unknown = knowledge.gpu_features(None, "Graphics Device")
    assert unknown["family"] is None and unknown["tensor_cores"] is False


def test_the_reported_capability_wins_over_the_name() -> None:
    # MIG or a renamed board: NVML's own number is what counts.
    assert knowledge.gpu_features("9.0", "NVIDIA A100-SXM4-80GB")["fp8"] is True


# --------------------------------------------------------------------------- PCI device ids

# (name, PCI device id) pairs that nvidia-smi printed together for one board, so the name and
# the id must name the same model.
CAPTURED_NAME_AND_PCI_ID = [
    ("NVIDIA A100-SXM4-40GB", "0x20b0", "netdata/a100-sxm4-mig.xml"),
    ("NVIDIA A100-SXM4-80GB", "0x20b2", "thamada_gls/A100SXMx4_smi__q.txt"),
    ("NVIDIA GH200 480GB", "0x2342", "thamada_gls/GH200_smi__q.txt"),
    ("NVIDIA H100 80GB HBM3", "0x2330", "thamada_gls/H100SXMx8_smi__q.txt"),
    ("NVIDIA H200", "0x2335", "thamada_gls/H200_smi__q.txt"),
    ("NVIDIA L4", "0x27b8", "thamada_gls/L4_smi__q.txt"),
    ("NVIDIA L40S", "0x26b9", "nvidia_gpu_exporter/internal_captures/linux-x86_64__nvidia-l40s__595.80.txt"),
    ("NVIDIA GeForce RTX 3090", "0x2204", "thamada_gls/RTX3090_smi__q.txt"),
    (
        "NVIDIA GeForce RTX 2080 SUPER",
        "0x1e81",
        "nvidia_gpu_exporter/internal_captures/linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.txt",
    ),
    ("Tesla T4", "0x1eb8", "telegraf/tesla-t4.xml"),
    ("Tesla V100-SXM2-16GB", "0x1db1", "thamada_gls/V100_x8_smi__q.txt"),
    ("Tesla P100-PCIE-16GB", "0x15f8", "netdata/tesla-p100.xml"),
]


@pytest.mark.parametrize(("name", "device_id", "capture"), CAPTURED_NAME_AND_PCI_ID)
def test_a_captured_pci_id_names_the_same_model_as_its_board_name(
    name: str, device_id: str, capture: str
) -> None:
    assert knowledge.gpu_model_by_pci_id(device_id) == knowledge.gpu_model(name), capture


def test_graphics_device_with_the_gtx_1660_pci_id_is_a_gtx_1660_without_tensor_cores() -> None:
    # Driver 418.43 named a GTX 1660 "Graphics Device" (telegraf capture gtx-1660-ti.xml, 218410DE).
    model = knowledge.gpu_model("Graphics Device", "0x2184")
    assert model == knowledge.gpu_model_by_pci_id("0x2184")
    assert model["name"] == "GeForce GTX 1660"
    assert model["compute_capability"] == "7.5"
    assert model["tensor_cores"] is False
    assert "Tensor Cores" in model["exception"]
    features = knowledge.gpu_features("7.5", "Graphics Device", "0x2184")
    assert features["family"] == "Turing"
    assert not any(features[feature] for feature in knowledge.FEATURES)
    # The name alone says nothing, so without the id the CC 7.5 rule would claim Tensor Cores.
    assert knowledge.gpu_features("7.5", "Graphics Device")["tensor_cores"] is True


def test_the_pci_id_supplies_a_missing_capability() -> None:
    assert knowledge.gpu_features(None, "Graphics Device", "0x2184")["compute_capability"] == "7.5"
    assert knowledge.gpu_features(None, None, "0x2330")["fp8"] is True


def test_a_known_name_wins_over_the_pci_id() -> None:
    assert knowledge.gpu_model("NVIDIA GeForce RTX 3090", "0x2184")["name"] == "GeForce RTX 3090"
    assert knowledge.gpu_features("8.6", "NVIDIA GeForce RTX 3090", "0x2184")["tensor_cores"] is True


@pytest.mark.parametrize("device_id", ["0X2184", "2184", " 0x2184 "])
def test_pci_ids_are_read_in_any_case_with_or_without_0x(device_id: str) -> None:
    assert knowledge.gpu_model_by_pci_id(device_id)["name"] == "GeForce GTX 1660"


@pytest.mark.parametrize(
    "device_id",
    # 0x2183 is a bare TU116 in pci.ids (no product); 0x10de is the vendor, not a device.
    ["0x2183", "0x0000", "0xffff", "0x10de", "", "0x218410de", "0x218", "21 84", "0xg184", None, 0x2184],
)
def test_unknown_or_malformed_pci_ids_are_none(device_id: object) -> None:
    assert knowledge.gpu_model_by_pci_id(device_id) is None  # type: ignore[arg-type]
    assert knowledge.gpu_model("Graphics Device", device_id) is None  # type: ignore[arg-type]


def test_no_pci_id_is_claimed_by_two_gpu_entries() -> None:
    owners: dict[str, list[str]] = {}
    for entry in knowledge.load("nvidia")["gpus"]["gpu"]:
        for device_id in entry.get("pci_device_ids", ()):
            owners.setdefault(device_id, []).append(entry["name"])
    assert {device_id: names for device_id, names in owners.items() if len(names) > 1} == {}
    for device_id, (name,) in owners.items():
        assert knowledge.gpu_model_by_pci_id(device_id)["name"] == name


def test_every_gtx_16_desktop_model_the_table_lists_has_its_pci_ids() -> None:
    # pci.ids (pciutils/pciids @ c1c12547): TU116/TU117 (and TU106) boards named GeForce GTX 16xx.
    expected = {
        "0x2182": "GeForce GTX 1660 Ti",
        "0x2184": "GeForce GTX 1660",
        "0x21c4": "GeForce GTX 1660 SUPER",
        "0x1f09": "GeForce GTX 1660 SUPER",
        "0x1f82": "GeForce GTX 1650",
        "0x2188": "GeForce GTX 1650",
        "0x1f0a": "GeForce GTX 1650",
    }
    for device_id, name in expected.items():
        model = knowledge.gpu_model_by_pci_id(device_id)
        assert (model["name"], model["tensor_cores"]) == (name, False), device_id


@pytest.mark.parametrize("bad", ["0x2184DE", "0X2184", "2184", "0x21C4"])
def test_the_schema_rejects_a_pci_id_that_is_not_four_lower_case_hex_digits(bad: str) -> None:
    document = knowledge.load("nvidia")["gpus"]
    entry = {"name": "NVIDIA X1", "compute_capability": "7.5", "segment": "consumer", "pci_device_ids": [bad]}
    assert list(_schema_for("gpus").iter_errors({**document, "gpu": [entry]}))


# --------------------------------------------------------------------------- TensorFlow


def test_tensorflow_2_16_1_was_tested_with_cuda_12_3_and_cudnn_8_9() -> None:
    build = knowledge.tensorflow_build("2.16.1")
    assert build["cuda"] == "12.3"
    assert build["cudnn"] == "8.9"
    assert build["python"] == ["3.9", "3.10", "3.11", "3.12"]
    assert build["python_range"] == "3.9-3.12"
    assert build["compiler"] == "Clang 17.0.6"
    assert build["keras"] == 3


@pytest.mark.parametrize(
    ("version", "cuda", "cudnn"),
    [
        ("2.4.0", "11.0", "8.0"),
        ("2.11.1", "11.2", "8.1"),
        ("2.12.0", "11.8", "8.6"),
        ("2.14.1", "11.8", "8.7"),
        ("2.15.0.post1", "12.2", "8.9"),
        ("2.16.2", "12.3", "8.9"),
        ("2.18.0", "12.5", "9.3"),
        ("2.21.0", "12.5", "9.3"),
        ("2.21.0rc1", "12.5", "9.3"),
    ],
)
def test_tensorflow_releases_match_by_major_minor(version: str, cuda: str, cudnn: str) -> None:
    build = knowledge.tensorflow_build(version)
    assert (build["cuda"], build["cudnn"]) == (cuda, cudnn)


@pytest.mark.parametrize("version", ["2.3.0", "2.22.0", "1.15.0", "", "nightly"])
def test_tensorflow_releases_outside_the_table_are_unknown(version: str) -> None:
    assert knowledge.tensorflow_build(version) is None


def test_native_windows_gpu_support_ends_with_2_10() -> None:
    last = knowledge.tensorflow_build("2.10.1")
    assert last["windows_native_gpu"] is True
    assert last["windows_gpu"] == {
        "python": "3.7-3.10",
        "compiler": "MSVC 2019",
        "build_tools": "Bazel 5.1.1",
        "cudnn": "8.1",
        "cuda": "11.2",
    }
    after = knowledge.tensorflow_build("2.11.0")
    assert after["windows_native_gpu"] is False
    assert after["windows_gpu"] is None


def test_keras_3_is_tf_keras_from_2_16() -> None:
    assert knowledge.tensorflow_build("2.15.1")["keras"] == 2
    assert knowledge.tensorflow_build("2.16.1")["keras"] == 3


def test_every_tensorflow_cuda_has_a_driver_row() -> None:
    for row in knowledge.load("tensorflow")["build"]:
        minimum = knowledge.cuda_driver_minimum(row["cuda"])
        assert minimum and minimum["linux"], row["version"]


# --------------------------------------------------------------------------- CUDA drivers


def test_cuda_12_4_needs_driver_550_54_14_and_its_update_550_54_15() -> None:
    assert knowledge.cuda_driver_minimum("12.4") == {
        "cuda": "12.4",
        "toolkit": "CUDA 12.4 GA",
        "linux": "550.54.14",
        "windows": "551.61",
        "minor_compat_linux": "525",
        "minor_compat_windows": "525",
    }
    update = knowledge.cuda_driver_minimum("12.4.1")
    assert (update["toolkit"], update["linux"], update["windows"]) == (
        "CUDA 12.4 Update 1",
        "550.54.15",
        "551.78",
    )


def test_an_unlisted_update_needs_the_newest_listed_one_before_it() -> None:
    # 12.3 Update 2 is not in NVIDIA's table; Update 1 is.
    assert knowledge.cuda_driver_minimum("12.3.2")["linux"] == "545.23.08"


def test_cuda_11_0_ga_is_11_0_2_and_minor_compatibility_needs_450_80_02() -> None:
    minimum = knowledge.cuda_driver_minimum("11.0")
    assert minimum["toolkit"] == "CUDA 11.0.2 GA"
    assert minimum["linux"] == "450.51.05"
    assert (minimum["minor_compat_linux"], minimum["minor_compat_windows"]) == ("450.80.02", "452.39")


def test_cuda_13_has_no_windows_toolkit_driver_and_a_580_floor() -> None:
    minimum = knowledge.cuda_driver_minimum("13.0")
    assert minimum["linux"] == "580.65.06"
    assert minimum["windows"] is None
    assert minimum["minor_compat_linux"] == "580"


def test_an_unlisted_minor_keeps_the_family_floor_only() -> None:
    minimum = knowledge.cuda_driver_minimum("13.3")
    assert minimum["linux"] is None and minimum["toolkit"] is None
    assert minimum["minor_compat_linux"] == "580"


@pytest.mark.parametrize("version", ["10.2", "9.0", "12", "", "cuda"])
def test_cuda_versions_outside_the_table_are_unknown(version: str) -> None:
    assert knowledge.cuda_driver_minimum(version) is None


def test_toolkit_drivers_never_go_down_as_cuda_goes_up() -> None:
    rows = sorted(
        knowledge.load("nvidia")["cuda_drivers"]["toolkit"], key=lambda row: parse_version(row["version"])
    )
    drivers = [parse_version(row["linux"]) for row in rows]
    assert drivers == sorted(drivers)


def test_toolkit_labels_agree_with_their_versions() -> None:
    for row in knowledge.load("nvidia")["cuda_drivers"]["toolkit"]:
        major, minor, patch = row["version"].split(".")
        label = row["label"]
        assert label.startswith(f"CUDA {major}.{minor}"), label
        update = re.search(r"Update (\d+)", label)
        if update and not re.match(r"CUDA \d+\.\d+\.\d+", label):
            assert update.group(1) == patch, label


# --------------------------------------------------------------------------- CPU flags


def test_avx_is_what_the_tensorflow_wheels_need() -> None:
    avx = knowledge.cpu_feature("avx")
    assert avx["tensorflow_wheel_requires"] is True
    assert avx["tensorflow_wheel_requires_since"] == "1.6"
    assert knowledge.cpu_feature("avx2")["tensorflow_wheel_requires"] is False


def test_amx_bf16_is_the_fast_bf16_training_flag() -> None:
    assert knowledge.fast_bf16_flag(["avx512_bf16", "AMX_BF16"]) == "amx_bf16"
    assert knowledge.fast_bf16_flag(["avx512_bf16"]) is None
    assert knowledge.cpu_feature("bf16")["arch"] == "arm"


@pytest.mark.parametrize(
    ("flags", "family", "name"),
    [
        (["amx_bf16", "avx512_fp16", "avx512_bf16"], "x86", "amx_bf16"),
        (["avx512_fp16", "avx512_bf16"], "x86", "avx512_fp16"),
        (["avx512_bf16", "avx512f"], "x86", "avx512_bf16"),
        (["avx2", "fma"], "x86", "none"),
        (["bf16", "i8mm", "sve"], "arm", "arm_bf16"),
        # Arm's bf16 flag means nothing on x86, and x86 flags nothing on Arm.
        (["bf16"], "x86", "none"),
        (["avx512_bf16"], "arm", "none"),
        ([], "", "none"),
    ],
)
def test_bf16_class_is_the_first_whose_flags_fit(flags, family, name) -> None:
    assert knowledge.bf16_class(flags, arch_family=family)["name"] == name


def test_every_bf16_class_carries_evidence_with_a_source_for_every_runtime() -> None:
    for row in knowledge.load("cpu_features")["bf16_class"]:
        for runtime in ("torch", "tensorflow", "jax"):
            evidence = row["evidence"][runtime]
            assert evidence["verdict"] in ("faster", "slower", "tie", "split", "unknown")
            assert evidence["source"] and evidence["measured"], (row["name"], runtime)
            # A figure measured here names its date.
            if "measured by hwcheck" in evidence["source"]:
                assert "2026-" in evidence["source"], (row["name"], runtime)


def test_unknown_cpu_flags_are_none() -> None:
    assert knowledge.cpu_feature("sse2") is None
    assert knowledge.cpu_feature(None) is None  # type: ignore[arg-type]


# --------------------------------------------------------------------------- speed


def test_loading_every_table_in_a_fresh_interpreter_takes_a_few_milliseconds() -> None:
    # doctor calls these lookups on every run; measured ~6-9 ms for all five tables here.
    script = (
        "import time\n"
        "from hwcheck import knowledge as k\n"
        "start = time.perf_counter()\n"
        "k.gpu_features('7.5', 'NVIDIA GeForce GTX 1660 Ti'); k.tensorflow_build('2.16.1')\n"
        "k.gpu_features('7.5', 'Graphics Device', '0x2184')\n"
        "k.cuda_driver_minimum('12.4'); k.cpu_feature('avx')\n"
        "print(time.perf_counter() - start)\n"
    )
    root = Path(knowledge.__file__).parent.parent.parent
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, check=True
    )
    assert float(result.stdout) < 0.05


# --------------------------------------------------------------------------- driver -> newest CUDA


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("410.48", "10.0"),
        ("418.87.01", "10.1"),
        ("440.33.01", "10.2"),
        ("450.51.05", "11.0"),
        ("535.104.05", "12.2"),
        ("535.54.03", "12.2"),
        ("530.30.02", "12.1"),
        ("570.26", "12.8"),
        ("580.65.06", "13.0"),
    ],
)
def test_a_driver_supports_the_newest_toolkit_released_with_it_or_before(driver: str, cuda: str) -> None:
    assert knowledge.newest_cuda_for_driver(driver) == cuda


@pytest.mark.parametrize("driver", ["410.47", "390.46", "", "driver", None])
def test_drivers_older_than_cuda_10_or_unparseable_support_no_listed_cuda(driver: str | None) -> None:
    assert knowledge.newest_cuda_for_driver(driver) is None


def test_windows_drivers_are_read_against_the_windows_column() -> None:
    assert knowledge.newest_cuda_for_driver("441.22", "windows") == "10.2"
    assert knowledge.newest_cuda_for_driver("441.22") == "10.2"  # Linux 440.33 is also below it
    assert knowledge.newest_cuda_for_driver("411.31", "windows") == "10.0"
    assert knowledge.newest_cuda_for_driver("418.95", "windows") == "10.0"


def test_cuda_10_rows_have_no_minor_version_compatibility() -> None:
    # A 10.x version is found in the toolkit rows but has no family floor, so the lookup stays unknown.
    assert {row["cuda_major"] for row in knowledge.load("nvidia")["cuda_drivers"]["minor_compatibility"]} == {
        11,
        12,
        13,
    }
    assert knowledge.cuda_driver_minimum("10.2") is None


# --------------------------------------------------------------------------- PyTorch


def test_every_torch_variant_shipped_has_a_policy_row_for_its_cuda() -> None:
    table = knowledge.load("torch")
    variants = {row["name"]: row["cuda"] for row in table["variant"]}
    policies = {row["cuda"] for row in table["arch_policy"]}
    releases = {row["version"]: set(row["variants"]) for row in table["release"]}
    assert all(set(shipped) <= set(variants) for shipped in releases.values())
    assert set(variants.values()) <= policies
    for row in table["arch_policy"]:
        assert row["source"].strip()


def test_torch_ptx_is_of_a_listed_architecture() -> None:
    for row in knowledge.load("torch")["arch_policy"]:
        for ptx in row.get("ptx", []):
            assert f"sm_{ptx.removeprefix('compute_')}" in row["sm"], row


def test_torch_variant_cuda_matches_its_name() -> None:
    for row in knowledge.load("torch")["variant"]:
        major, minor = row["cuda"].split(".")
        assert row["name"] == f"cu{major}{minor}"
        assert row["index_url"].endswith(row["name"])
        assert knowledge.torch.variant_cuda(row["name"]) == row["cuda"]


def test_rtx_50_sm_120_is_only_in_cuda_12_8_and_newer_policies_from_torch_2_7() -> None:
    with_sm_120 = [row for row in knowledge.load("torch")["arch_policy"] if "sm_120" in row["sm"]]
    assert with_sm_120
    assert min(parse_version(row["release_from"]) for row in with_sm_120) == (2, 7)
    assert all(parse_version(row["cuda"]) >= (12, 8) for row in with_sm_120)


def test_kepler_sm_37_is_only_in_cuda_10_and_11_wheels() -> None:
    for row in knowledge.load("torch")["arch_policy"]:
        if "sm_37" in row["sm"]:
            assert parse_version(row["cuda"])[0] in (10, 11), row


def test_torch_build_matches_patch_releases_and_gives_the_install_command() -> None:
    build = knowledge.torch_build("2.7.1", "cu128")
    assert build["cuda"] == "12.8"
    assert build["sm"][-1] == "sm_120" and "sm_70" not in build["sm"]
    assert build["ptx"] is None  # no source settles whether 2.7 cu128 carries PTX
    assert build["install"] == "pip install torch==2.7.1 --index-url https://download.pytorch.org/whl/cu128"
    assert knowledge.torch_build("2.8.0", "cu128")["sm"][0] == "sm_70"
    assert knowledge.torch_build("2.11.0", "cu128")["sm"][0] == "sm_75"
    assert knowledge.torch_build("2.10.0", "cu130")["ptx"] == ["compute_120"]


@pytest.mark.parametrize(
    ("version", "variant"),
    [("2.8.0a0+git1234", "cu128"), ("", "cu118"), ("2.4", None), ("2.4", "cu133"), ("2.4", "rocm6.1")],
)
def test_local_builds_and_unknown_cuda_versions_have_no_policy_list(
    version: str, variant: str | None
) -> None:
    assert knowledge.torch_build(version, variant) is None


def test_torch_variants_per_release() -> None:
    assert knowledge.torch_variants("2.0.1") == ["cu117", "cu118"]
    assert knowledge.torch_variants("2.9.0") == ["cu126", "cu128", "cu130"]
    assert knowledge.torch_variants("3.0") is None


# --------------------------------------------------------------------------- JAX, platforms


def test_jax_cuda_majors_name_their_extra_plugin_and_driver_floor() -> None:
    rows = {row["cuda_major"]: row for row in knowledge.load("jax")["cuda_major"]}
    assert set(rows) == {12, 13}
    for major, row in rows.items():
        assert row["extra"] == f"cuda{major}" and row["plugin"] == f"jax-cuda{major}-plugin"
        assert f"jax[cuda{major}]" in row["install"]
        # JAX's floor is NVIDIA's minor-compatibility floor for the same CUDA major.
        floor = next(
            r
            for r in knowledge.load("nvidia")["cuda_drivers"]["minor_compatibility"]
            if r["cuda_major"] == major
        )
        assert row["linux_driver_minimum"] == floor["linux"]
    assert parse_version(rows[13]["minimum_compute_capability"]) > parse_version(
        rows[12]["minimum_compute_capability"]
    )


def test_jax_changes_are_in_release_order() -> None:
    versions = [parse_version(row["jaxlib"]) for row in knowledge.load("jax")["change"]]
    assert versions == sorted(versions)


def test_platform_facts_cite_a_source_and_agree_with_tensorflow() -> None:
    platforms = {row["name"]: row for row in knowledge.load("platforms")["platform"]}
    assert {"windows", "wsl2", "macos"} <= set(platforms)
    assert all(row["source"].strip() for row in platforms.values())
    assert (
        platforms["windows"]["tensorflow_gpu_last"]
        == knowledge.load("tensorflow")["windows"]["last_native_gpu"]
    )
    assert platforms["wsl2"]["driver_installed_on"] == "windows"
    assert platforms["macos"]["cuda"] is False


def _tensorflow_rows_with_architectures() -> list[dict]:
    return [row for row in knowledge.load("tensorflow")["build"] if "sm" in row]


def test_tensorflow_wheel_architectures_cite_the_wheel_they_were_read_from() -> None:
    rows = _tensorflow_rows_with_architectures()
    assert len(rows) >= 12
    for row in rows:
        assert f"tensorflow-{row['version']}-" in row["arch_source"], row["version"]
        assert "sha256" in row["arch_source"]
        # The PTX is the newest architecture in every official build: newer GPUs JIT from it.
        newest_sm = max(int(arch.removeprefix("sm_")) for arch in row["sm"])
        assert all(int(arch.removeprefix("compute_")) > newest_sm for arch in row["ptx"]), row["version"]


def test_tensorflow_2_4_wheel_has_turing_sass_and_ampere_ptx() -> None:
    row = knowledge.tensorflow._tensorflow_builds()["2.4"]
    assert row["sm"] == ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75"]
    assert row["ptx"] == ["compute_80"]


def test_no_tensorflow_wheel_carries_blackwell_code_so_cc_12_depends_on_jit() -> None:
    # A deviation leaves CC 12.0 without kernels in 2.16-2.20; the wheels agree: nothing past compute_90.
    for row in _tensorflow_rows_with_architectures():
        newest = max(int(arch.split("_")[1]) for arch in row["sm"] + row["ptx"])
        assert newest <= 90, row["version"]
    blackwell = knowledge.gpu_kernels(knowledge.tensorflow_kernels("2.20.0"), "12.0")
    assert blackwell is not None and blackwell.deviation and not blackwell.runs
    ada = knowledge.gpu_kernels(knowledge.tensorflow_kernels("2.20.0"), "8.9")
    assert ada is not None and not ada.deviation and ada.runs


def test_tensorflow_cpu_baseline_is_avx_on_x86_and_plain_armv8_on_arm() -> None:
    cpu = knowledge.load("tensorflow")["cpu"]
    assert cpu["x86_64"]["requires"] == ["avx"]
    assert knowledge.cpu_feature("avx")["tensorflow_wheel_requires_since"] == cpu["x86_64"]["since"]
    assert not {"avx2", "fma"} & set(cpu["x86_64"]["requires"])
    assert cpu["aarch64"]["requires"] == []


def test_gpu_bfloat16_boundary_is_left_open_with_evidence() -> None:
    bf16 = knowledge.load("tensorflow")["gpu_bfloat16"]
    # No TensorFlow source names a release from which mixed_bfloat16 is fast on NVIDIA GPUs.
    assert bf16["fast_from"] == ""
    assert all(item.startswith("https://") for item in bf16["evidence"])


def test_hopper_has_no_sass_in_any_listed_tensorflow_wheel() -> None:
    rows = _tensorflow_rows_with_architectures()
    assert len(rows) == len(knowledge.load("tensorflow")["build"])
    assert all("sm_90" not in row["sm"] for row in rows)
    builds = knowledge.tensorflow._tensorflow_builds()
    assert builds["2.21"]["sm"] == builds["2.20"]["sm"] and builds["2.21"]["ptx"] == builds["2.20"]["ptx"]


def test_the_cpu_flags_table_holds_every_flag_spec_section_2_names() -> None:
    # Inventory classes (inventory/classes.py) and doctor's CPU line (render/terminal.py) read it.
    from hwcheck.inventory.classes import class_cpu_flags

    spec = "avx avx2 fma avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8 amx_fp16"
    assert class_cpu_flags() == {*spec.split(), "asimd", "sve", "sve2", "bf16", "i8mm"}
    assert {row["arch"] for row in knowledge.cpu_flags("arm")} == {"arm"}


@pytest.mark.parametrize(
    ("arch", "flags", "line"),
    [
        ("x86_64", ["avx2", "avx512f"], "Xeon (x86_64): AVX2 yes, AVX-512 yes, AVX-512 BF16 no, AMX no"),
        ("aarch64", ["asimd", "bf16"], "Xeon (aarch64): NEON yes, SVE no, BF16 yes"),
        ("riscv64", ["v"], "Xeon (riscv64)"),
    ],
)
def test_doctor_names_the_cpu_features_the_table_labels(arch, flags, line) -> None:
    from hwcheck.render.terminal import _cpu

    assert _cpu({"cpu": {"arch": arch, "model": "Xeon", "flags": flags}}) == line
