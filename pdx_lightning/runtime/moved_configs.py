"""The shipped configs that moved, and the one-line pointer a user of an old path gets.

conf/ held 20 flat YAMLs of three kinds; they now live in ``conf/fit/`` (``pdx fit|validate``),
``conf/pretrain/`` (``pdx pretrain``) and ``conf/sweep/`` (``pdx sweep``). :data:`MOVED` is the one table
of old -> new paths. Every place that reads a config path asks :func:`check_config_path` (``--config``
of the LightningCLI commands through :func:`check_config_args`, ``pdx sweep --config`` and a sweep
YAML's ``fit_config``), and the sweep lock compares ``fit_config`` through :func:`current_path`, so a
runs directory locked with an old path accepts the same sweep under the new one.

A path is "old" when its last two parts are a key of :data:`MOVED` (``conf/maia.yaml``,
``./conf/maia.yaml``, ``/clone/conf/maia.yaml``): the prefix is kept, so the pointer names the file in
the same clone. An old path that still exists (a user's own ``conf/maia.yaml``) is read as it is.
The table goes in 0.2.0 (``pdx_lightning._version.MIGRATIONS_REMOVED_IN``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import PurePath

from pdx_lightning.errors import UserError
from pdx_lightning.files.resources import resolve_path

__all__ = [
    "MOVED",
    "MovedConfigError",
    "check_config_args",
    "check_config_files",
    "check_config_path",
    "current_path",
    "moved_to",
    "resolve_config_args",
]

_FIT = ("pdx", "maia", "paper", "small", "gpu_bf16", "arm_entropy", "arm_forward_kl", "arm_none", "arm_reverse_kl")
MOVED: dict[str, str] = {
    **{f"conf/{n}.yaml": f"conf/fit/{n}.yaml" for n in _FIT},
    "conf/pretrain.yaml": "conf/pretrain/small.yaml",
    **{f"conf/pretrain_{n}.yaml": f"conf/pretrain/{n}.yaml" for n in ("maia", "pgn", "small_v2")},
    "conf/sweep.yaml": "conf/sweep/cpu.yaml",
    **{
        f"conf/sweep_{n}.yaml": f"conf/sweep/{n}.yaml"
        for n in ("cpu_beta", "cpu_mini", "maia", "maia_distilled", "maia_seeds", "paper")
    },
}


class MovedConfigError(UserError, FileNotFoundError):
    """A config path from before conf/ was grouped by kind; the message names the new path."""


def moved_to(path: str | os.PathLike) -> str | None:
    """The new path of an old config path (its prefix kept), or None when ``path`` is not one."""
    parts = PurePath(path).parts
    new = MOVED.get("/".join(parts[-2:])) if len(parts) >= 2 else None
    return None if new is None else str(PurePath(*parts[:-2], new))


def current_path(path: str | None) -> str | None:
    """``path`` with an old config path replaced by its new one (what the sweep lock compares)."""
    return path if path is None else (moved_to(path) or path)


def check_config_path(path: str | os.PathLike, where: str = "") -> None:
    """Raise :class:`MovedConfigError` (``<where>conf/maia.yaml moved to conf/fit/maia.yaml``) when
    ``path`` is an old config path that no longer exists; anything else is left to its reader."""
    new = moved_to(path)
    if new is not None and not os.path.exists(path):
        raise MovedConfigError(f"{where}{path} moved to {new}")


def check_config_args(argv: Sequence[str]) -> None:
    """:func:`check_config_path` on every ``--config``/``-c`` value of a LightningCLI command line."""
    for i, arg in enumerate(argv):
        if arg in ("--config", "-c") and i + 1 < len(argv):
            check_config_path(argv[i + 1], f"{arg}: ")
        elif arg.startswith("--config="):
            check_config_path(arg.partition("=")[2], "--config: ")


def check_config_files(argv: Sequence[str]) -> None:
    """Read every ``--config``/``-c`` file of a LightningCLI command line through the config bounds
    (:func:`pdx_lightning.files.safeio.read_config_text`: size, text, alias expansion) before LightningCLI
    reads it; a value that is no file (inline YAML, a moved path) is left to the parser."""
    from pdx_lightning.files.safeio import read_config_text  # noqa: PLC0415

    out = resolve_config_args(argv)
    for i, arg in enumerate(out):
        value = out[i + 1] if arg in ("--config", "-c") and i + 1 < len(out) else None
        if arg.startswith("--config="):
            value = arg.partition("=")[2]
        if value is not None and len(value) < 4096 and os.path.isfile(value):
            read_config_text(value)


def resolve_config_args(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``--config``/``-c`` value checked (:func:`check_config_args`) and resolved:
    ``pdx:<preset>`` and a ``conf/...`` path missing here become the shipped file
    (:func:`pdx_lightning.files.resources.resolve_path`), so LightningCLI reads a path like any other."""
    check_config_args(argv)
    out = list(argv)
    for i, arg in enumerate(out):
        if arg in ("--config", "-c") and i + 1 < len(out):
            out[i + 1] = str(resolve_path(out[i + 1]))
        elif arg.startswith("--config="):
            out[i] = "--config=" + str(resolve_path(arg.partition("=")[2]))
    return out
