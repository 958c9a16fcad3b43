"""Every module path the package names in its docstrings, comments and user-facing messages (and the
README, the documentation under ``docs/`` and the benchmarks name) exists: ``chesscore/encoding.py``-style
file paths under ``pdx_lightning/``, and dotted ``pdx_lightning.x.y`` names (the longest prefix that is a
module, then an attribute of it). Paths are the installed package's: ``callbacks/ema.py`` and
``pdx_lightning.callbacks`` are the top-level ``callbacks/`` (pyproject.toml's package-dir)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from tools.installed_layout import package_dirs

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pdx_lightning"
MAPPED = {tuple(name.split(".")[1:]): path for name, path in package_dirs(ROOT).items() if "." in name}


def source(parts: list[str] | tuple[str, ...]) -> Path:
    """The source path of ``pdx_lightning/<parts>`` in this tree (a package-dir mapping applied)."""
    for k in range(len(parts), 0, -1):
        if tuple(parts[:k]) in MAPPED:
            return MAPPED[tuple(parts[:k])].joinpath(*parts[k:])
    return PKG.joinpath(*parts)


LAYERS = "chess|chesscore|nets|rl|evaluation|experiments|runtime|supervised|datagen|engines|callbacks"
FILE_PATH = re.compile(rf"(?<![\w/.])(?:pdx_lightning/)?((?:{LAYERS})/[\w/]+\.py)")
DOTTED = re.compile(r"(?<![\w.])pdx_lightning((?:\.\w+)+)")


def sources() -> list[Path]:
    return sorted(
        [
            *PKG.rglob("*.py"),
            *(ROOT / "callbacks").glob("*.py"),
            *(ROOT / "benchmarks").glob("*.py"),
            ROOT / "README.md",
            *(ROOT / "docs").rglob("*.md"),
        ]
    )


def dotted_exists(parts: list[str]) -> bool:
    for k in range(len(parts), 0, -1):
        base = source(parts[:k])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            if k == len(parts):
                return True
            module = importlib.import_module("pdx_lightning." + ".".join(parts[:k]))
            return hasattr(module, parts[k])
    return False


def test_every_named_module_path_exists():
    missing = []
    for f in sources():
        for i, line in enumerate(f.read_text().splitlines(), 1):
            missing += [
                f"{f.relative_to(ROOT)}:{i}: {m[1]}"
                for m in FILE_PATH.finditer(line)
                if not source(m[1].split("/")).is_file()
            ]
            missing += [
                f"{f.relative_to(ROOT)}:{i}: pdx_lightning{m[1]}"
                for m in DOTTED.finditer(line)
                if not dotted_exists(m[1].strip(".").split("."))
            ]
    assert missing == []


def test_the_check_finds_a_wrong_path():
    assert [m[1] for m in FILE_PATH.finditer("see ``chess/encoding.py``")] == ["chess/encoding.py"]  # the old name
    assert [m[1] for m in FILE_PATH.finditer("(``chesscore/encodings.py``)")] == ["chesscore/encodings.py"]
    assert not (PKG / "chesscore/encodings.py").is_file()
    assert dotted_exists(["chesscore", "encoding", "encode_boards"])
    assert not dotted_exists(["chesscore", "encoding", "no_such_function"])
    assert not dotted_exists(["chess", "encoding"])
