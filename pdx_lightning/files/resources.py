"""Files shipped inside the package: the ``conf/`` presets and the ``data/`` files (bundled networks,
default suites and openings), read through :mod:`importlib.resources`, never beside the source tree.

The repository keeps ``conf/`` and ``data/`` at its top level (the layout the design card names); the
build maps them to the packages ``pdx_lightning.conf`` and ``pdx_lightning.data`` (``pyproject.toml``'s
package-dir, as ``callbacks/`` is ``pdx_lightning.callbacks``), so a wheel carries them as package data
and an editable install reads the checkout's files.

Two ways a user names a shipped file, both resolved here:

* ``pdx:<preset>`` for a config (``pdx fit --config pdx:fit/maia``, ``pdx sweep --config
  pdx:sweep/cpu``): the file ``conf/<preset>.yaml`` of the installed package. ``pdx config list``
  prints the names, ``pdx config show <preset>`` the text (to copy and edit).
* a relative ``data/...`` or ``conf/...`` path that does not exist where the command runs: the
  shipped file of that name. The shipped presets name their suites that way (``data/tactics.csv``),
  so they work from any directory; a file of that name in the working directory wins.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path, PurePath, PurePosixPath

from pdx_lightning.errors import UserError

__all__ = [
    "PRESET_PREFIX",
    "SHIPPED_DIRS",
    "ShippedFileError",
    "package_dir",
    "preset_names",
    "preset_path",
    "resolve_path",
    "shipped",
]

PRESET_PREFIX = "pdx:"
SHIPPED_DIRS = ("conf", "data")


class ShippedFileError(UserError, FileNotFoundError):
    """A ``pdx:<preset>`` (or shipped file) that the installed package does not hold."""


def package_dir(name: str) -> Path:
    """The installed package's ``conf`` or ``data`` directory (a real directory: pdx is never zipped)."""
    if name not in SHIPPED_DIRS:
        raise ValueError(f"not a shipped directory: {name!r} (one of {', '.join(SHIPPED_DIRS)})")
    return Path(str(importlib.resources.files(f"pdx_lightning.{name}")))


def shipped(relative: str | os.PathLike) -> Path | None:
    """The shipped file ``conf/...`` or ``data/...`` (POSIX-style, relative), or None when there is none."""
    parts = PurePosixPath(PurePath(relative).as_posix()).parts
    if len(parts) < 2 or parts[0] not in SHIPPED_DIRS or ".." in parts:
        return None
    path = package_dir(parts[0]).joinpath(*parts[1:])
    return path if path.is_file() else None


def preset_names() -> list[str]:
    """Every shipped config preset as ``pdx:`` accepts it (``fit/maia``, ``sweep/cpu``, ...), sorted."""
    root = package_dir("conf")
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml"))


def preset_path(name: str) -> Path:
    """The file of preset ``name`` (``fit/maia``, ``fit/maia.yaml``, ``pdx:fit/maia``; a leading ``conf/``
    is allowed), or :class:`ShippedFileError` listing the presets."""
    bare = name[len(PRESET_PREFIX) :] if name.startswith(PRESET_PREFIX) else name
    rel = bare if bare.startswith("conf/") else f"conf/{bare}"
    path = shipped(rel if rel.endswith((".yaml", ".yml")) else f"{rel}.yaml")
    if path is None:
        raise ShippedFileError(
            f"no config preset {name!r} is shipped with pdx_lightning; presets: "
            f"{', '.join(preset_names())} (`pdx config list`)"
        )
    return path


def resolve_path(path: str | os.PathLike) -> str | os.PathLike:
    """``path`` as a command should open it: a ``pdx:<preset>`` config as its shipped file; a relative
    ``data/...`` / ``conf/...`` path missing here as the shipped file of that name; anything else as given
    (its reader reports a missing file as usual)."""
    text = os.fspath(path)
    if text.startswith(PRESET_PREFIX):
        return str(preset_path(text))
    if os.path.isabs(text) or os.path.exists(text):
        return path
    found = shipped(text)
    return path if found is None else str(found)
