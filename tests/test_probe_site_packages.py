"""The site-packages scan the cuda, frameworks and tpu probes share: once per run, fresh after a change."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from hwcheck.probes import collect, site_packages


def dist(site: Path, name: str, version: str) -> Path:
    """A dist-info directory as pip writes it."""
    directory = site / f"{name.replace('-', '_')}-{version}.dist-info"
    directory.mkdir(parents=True)
    (directory / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return directory


def counting_scans(monkeypatch, delay: float = 0.0) -> list[tuple[str, ...]]:
    """Count the real scans from now on (each one slowed by `delay` to widen any race)."""
    calls: list[tuple[str, ...]] = []
    real_scan = site_packages.scan

    def scan(site_dirs):
        calls.append(tuple(site_dirs))
        time.sleep(delay)
        return real_scan(site_dirs)

    monkeypatch.setattr(site_packages, "scan", scan)
    monkeypatch.setattr(site_packages, "_last", None)
    return calls


def test_threads_asking_at_once_share_one_scan(tmp_path, monkeypatch):
    dist(tmp_path, "nvidia-cudnn-cu12", "9.1.0.70")
    monkeypatch.setattr(site_packages, "default_site_dirs", lambda: [str(tmp_path)])
    calls = counting_scans(monkeypatch, delay=0.05)
    barrier = threading.Barrier(8)
    answers = []

    def ask():
        barrier.wait()
        answers.append(site_packages.distributions())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1
    assert len(answers) == 8 and all(answer is answers[0] for answer in answers)
    assert [(d.name, d.version) for d in answers[0]] == [("nvidia-cudnn-cu12", "9.1.0.70")]


def test_one_doctor_run_scans_site_packages_once(monkeypatch):
    calls = counting_scans(monkeypatch)
    results = collect(names=("cuda", "frameworks", "tpu")).results
    assert all(result.status in ("ok", "absent") for result in results.values()), results
    assert len(calls) == 1


def test_installing_or_removing_a_distribution_is_seen_at_once(tmp_path, monkeypatch):
    calls = counting_scans(monkeypatch)
    dist(tmp_path, "torch", "2.4.1")
    assert [d.name for d in site_packages.distributions([tmp_path])] == ["torch"]
    assert [d.name for d in site_packages.distributions([tmp_path])] == ["torch"]
    assert len(calls) == 1  # nothing changed: the scan is reused
    jax = dist(tmp_path, "jax", "0.4.31")
    assert [d.name for d in site_packages.distributions([tmp_path])] == ["jax", "torch"]
    (jax / "METADATA").unlink()
    jax.rmdir()
    assert [d.name for d in site_packages.distributions([tmp_path])] == ["torch"]
    assert len(calls) == 3


def test_other_site_dirs_are_scanned_not_served_from_the_last_scan(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    dist(first, "keras", "3.5.0")
    dist(second, "tf-keras", "2.17.0")
    assert [d.name for d in site_packages.distributions([first])] == ["keras"]
    assert [d.name for d in site_packages.distributions([second])] == ["tf-keras"]
    both = site_packages.distributions([second, first, second])
    assert [(d.name, d.site) for d in both] == [("tf-keras", second), ("keras", first)]


def test_names_are_normalized_and_versions_read_from_the_name_or_metadata(tmp_path):
    dist(tmp_path, "Nvidia.CUDNN_cu12", "9.1.0.70")
    egg = tmp_path / "libtpu_nightly.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: libtpu-nightly\nVersion: 0.1.dev20240617\n")
    found = {d.name: d.version for d in site_packages.distributions([tmp_path, tmp_path / "missing"])}
    assert found == {"nvidia-cudnn-cu12": "9.1.0.70", "libtpu-nightly": "0.1.dev20240617"}
