"""griffe extension: the folders ``pyproject.toml`` maps into the package (``[tool.setuptools.package-dir]``:
``callbacks/`` is ``pdx_lightning.callbacks``) documented under their installed names.

griffe reads a package from its folder and does not follow the mapping, so once it has loaded
``pdx_lightning`` each mapped folder is loaded on its own (a loader without extensions) and attached as
the member it is when installed; the extensions listed after this one (the reST roles) then see the
whole package. Loaded by mkdocs.yml (``plugins: mkdocstrings: handlers: python: options: extensions``),
before ``rest_roles.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import griffe

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


class PackageDirs(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"].get("package-dir", {})
        for name, folder in mapping.items():
            parent, _, member = name.rpartition(".")
            if parent != pkg.path or not (ROOT / folder / "__init__.py").is_file():
                continue  # another package's, or a data folder
            module = griffe.GriffeLoader(search_paths=[ROOT], docstring_parser=loader.docstring_parser).load(folder)
            assert isinstance(module, griffe.Module)
            module.name = member
            pkg.set_member(member, module)
