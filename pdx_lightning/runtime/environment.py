"""The versions a result was made with, recorded in every sweep record and report archive.

A report's numbers depend on the software as well as the settings (a Lightning or torch release
changes the RNG streams, a numpy release a summation order) and on the CPU kernels that ran it (an
AVX-512 kernel sums in another order than an AVX2 one: ``runtime.kernels``); ``requirements/lock.txt`` pins
the tested set and these records say which set, which kernels, how many threads and which CPU a given file
came from.
"""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

from pdx_lightning.runtime.kernels import kernel_record

__all__ = ["PACKAGES", "environment"]

# distribution names whose versions are recorded (a missing one is recorded as None)
PACKAGES = ("torch", "lightning", "numpy", "chess", "scipy", "jsonargparse")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _commit(repo: Path) -> str | None:
    """The checkout's commit (with ``-dirty`` for local changes), None outside a git checkout."""
    try:
        r = subprocess.run(
            ["git", "-C", str(repo), "describe", "--always", "--dirty", "--abbrev=12"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def environment() -> dict[str, str | int | None]:
    """``{"python", "pdx_lightning", "pdx_commit", "torch", "lightning", "numpy", "chess", ...,
    "platform", "kernels", "cpu_capability", ..., "threads", "cpu"}`` of this process (a package that is
    not installed: None; the kernel fields: :func:`~pdx_lightning.runtime.kernels.kernel_record`)."""
    from pdx_lightning._version import __version__  # noqa: PLC0415

    return {
        "python": platform.python_version(),
        "pdx_lightning": __version__,
        "pdx_commit": _commit(Path(__file__).resolve().parents[2]),
        **{name: _version(name) for name in PACKAGES},
        "platform": platform.platform(terse=True),
        **kernel_record(),
    }
