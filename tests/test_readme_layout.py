"""The README's "## Layout" section against the tree (issue 27): every package and module of
``pdx_lightning/`` and ``callbacks/`` it names exists, and every one in the tree is named.

The section's first code block is read with one convention, so a module added, renamed or removed needs
only a README edit (nothing here lists modules):

* an entry is a line ``<indent><name>/  <description>`` (a package) or ``<indent><name>.py  <description>``
  (a module); a more indented entry sits inside the nearest less indented one; a line indented to the
  description's column or further continues the entry above;
* only the entries ``pdx_lightning/`` and ``callbacks/`` at the top and everything inside them are checked
  (``conf/``, ``data/``... are prose);
* a package's description is ``[gloss: ]item, item, ...``: an optional gloss ending in the first ``: ``
  outside parentheses, then items separated by ``, `` outside parentheses; an item is ``module`` or
  ``module (free text)``, or ``package/ (item, item, ...)`` for a subpackage with its modules (the same
  rule inside the parentheses); a ``.py`` entry's description is free text;
* ``__init__`` and private ``_x`` modules are exempt; ``callbacks/`` (installed as ``pdx_lightning.callbacks``
  by the package-dir mapping) is named at the top, where it is.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCOPE = ("pdx_lightning", "callbacks")
NAME = re.compile(r"[a-z_][a-z0-9_]*")
ENTRY = re.compile(r"^( *)([\w.-]+(?:/|\.py))(?: {2,}|$)(.*)$")


def layout_block(readme: str) -> list[str]:
    """The lines of the first code block of the "## Layout" section."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1].split("\n")[1:]


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    return [*parts, text[start:]]


def _items(package: str, text: str, named: set[str], errors: list[str]) -> None:
    """Add the modules and subpackages a package description names (paths relative to the repo)."""
    glossed = _split(text, ": ")
    body = ": ".join(glossed[1:]) if len(glossed) > 1 else text
    for item in filter(None, (i.strip() for i in _split(body, ", "))):
        m = re.fullmatch(r"([^\s(]+?)(/)?(?:\s*\((.*)\))?", item, re.S)
        if not m or not NAME.fullmatch(m.group(1)):
            errors.append(f"{package}/: {item!r} is not `module (text)` or `package/ (modules)`")
        elif m.group(2):
            named.add(f"{package}/{m.group(1)}")
            _items(f"{package}/{m.group(1)}", m.group(3) or "", named, errors)
        else:
            named.add(f"{package}/{m.group(1)}.py")


def named_paths(block: list[str]) -> tuple[set[str], list[str]]:
    """The package directories and module files the block names, and the lines it cannot read."""
    entries: list[list] = []  # [indent, name, description, description column]
    last: list | None = None  # the entry a deeper indented line continues
    for line in block:
        indent = len(line) - len(line.lstrip(" "))
        if last is not None and line.strip() and indent >= last[3]:
            last[2] += " " + line.strip()
        elif m := ENTRY.match(line):
            last = [len(m.group(1)), m.group(2), m.group(3).strip(), m.start(3)]
            entries.append(last)
        else:  # another kind of line (`pyproject.toml  setup.sh ...`): ends the entry above
            last = None
    named: set[str] = set()
    errors: list[str] = []
    stack: list[tuple[int, str]] = []  # (indent, path) of the enclosing entries
    for indent, name, text, _ in entries:
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([*(p for _, p in stack[-1:]), name.rstrip("/")])
        if path.split("/")[0] not in SCOPE:
            if name.endswith("/"):
                stack.append((indent, path))
            continue
        named.add(path)
        if name.endswith("/"):
            stack.append((indent, path))
            _items(path, text, named, errors)
    return named, errors


def tree_paths(root: Path) -> set[str]:
    """The package directories and public modules under ``root``'s :data:`SCOPE`."""
    found: set[str] = set()

    def walk(d: Path) -> None:
        found.add(d.relative_to(root).as_posix())
        for p in sorted(d.iterdir()):
            if p.name.startswith(("_", ".")):
                continue
            if p.is_dir() and any(p.rglob("*.py")):
                walk(p)
            elif p.suffix == ".py":
                found.add(p.relative_to(root).as_posix())

    for top in SCOPE:
        walk(root / top)
    return found


def layout_problems(root: Path) -> list[str]:
    """What the README's Layout section gets wrong about the tree at ``root`` (empty: nothing)."""
    named, errors = named_paths(layout_block((root / "README.md").read_text()))
    tree = tree_paths(root)
    return (
        [f"README Layout: {e}" for e in errors]
        + [f"README Layout names {p}, which is not in the tree" for p in sorted(named - tree)]
        + [f"{p} is not named in the README's Layout section" for p in sorted(tree - named)]
    )


# ---------------------------------------------------------------- the convention, hand-checked

BLOCK = """\
conf/           fit/ (prose: not checked), x.yaml
pdx_lightning/
  cli.py        the `pdx` entry (global options, one-line errors)
  rl/           objectives (pure math, equation-cited), module (PDXModule),
                selfplay (SelfPlayDataset)
  experiments/  arms (one source), sweep/ (config, lock), report/ (runs,
                tables (Table 6))
  nets/         seam, families
    lc0/        format (read/write), classic
callbacks/      installed as pdx_lightning.callbacks (package-dir): ema (EMAUpdate), beta
"""


def test_the_convention_reads_packages_modules_nesting_and_continuations():
    named, errors = named_paths(BLOCK.split("\n"))
    assert errors == []
    assert named == {
        "pdx_lightning",
        "pdx_lightning/cli.py",
        "pdx_lightning/rl",
        "pdx_lightning/rl/objectives.py",
        "pdx_lightning/rl/module.py",
        "pdx_lightning/rl/selfplay.py",
        "pdx_lightning/experiments",
        "pdx_lightning/experiments/arms.py",
        "pdx_lightning/experiments/sweep",
        "pdx_lightning/experiments/sweep/config.py",
        "pdx_lightning/experiments/sweep/lock.py",
        "pdx_lightning/experiments/report",
        "pdx_lightning/experiments/report/runs.py",
        "pdx_lightning/experiments/report/tables.py",
        "pdx_lightning/nets",
        "pdx_lightning/nets/seam.py",
        "pdx_lightning/nets/families.py",
        "pdx_lightning/nets/lc0",
        "pdx_lightning/nets/lc0/format.py",
        "pdx_lightning/nets/lc0/classic.py",
        "callbacks",
        "callbacks/ema.py",
        "callbacks/beta.py",
    }


def test_prose_where_a_module_list_belongs_is_reported():
    _, errors = named_paths(["pdx_lightning/", "  datagen/     positions, mates (+ common), Stockfish-made sets"])
    assert errors == ["pdx_lightning/datagen/: 'Stockfish-made sets' is not `module (text)` or `package/ (modules)`"]


def _tree(root: Path, block: str, files: list[str]) -> Path:
    (root / "README.md").write_text(f"# x\n\n## Layout\n\nText.\n\n```\n{block}```\n\n## Next\n")
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("")
    return root


def test_a_module_missing_from_the_readme_or_named_but_absent_is_reported(tmp_path):
    block = "pdx_lightning/\n  cli.py        entry\n  rl/           module, gone (removed)\ncallbacks/      ema\n"
    files = [
        "pdx_lightning/__init__.py",
        "pdx_lightning/_version.py",
        "pdx_lightning/cli.py",
        "pdx_lightning/rl/__init__.py",
        "pdx_lightning/rl/module.py",
        "pdx_lightning/rl/new.py",
        "pdx_lightning/rl/__pycache__/module.cpython-312.pyc",
        "callbacks/__init__.py",
        "callbacks/ema.py",
        "pdx_lightning/datagen/__init__.py",
        "pdx_lightning/datagen/pgn.py",
    ]
    root = _tree(tmp_path, block, files)
    assert layout_problems(root) == [
        "README Layout names pdx_lightning/rl/gone.py, which is not in the tree",
        "pdx_lightning/datagen is not named in the README's Layout section",
        "pdx_lightning/datagen/pgn.py is not named in the README's Layout section",
        "pdx_lightning/rl/new.py is not named in the README's Layout section",
    ]


# ---------------------------------------------------------------- the real README


def test_the_readme_layout_names_every_package_and_module_of_the_tree():
    problems = layout_problems(ROOT)
    assert problems == [], "\n".join(problems)


def test_the_real_check_fails_for_a_module_added_without_a_readme_mention(tmp_path):
    """The shipped README against a copy of the tree plus one module: exactly that module is reported."""
    import shutil

    for top in ("pdx_lightning", "callbacks"):
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    assert layout_problems(tmp_path) == []
    (tmp_path / "pdx_lightning" / "rl" / "replay_buffer.py").write_text("")
    assert layout_problems(tmp_path) == [
        "pdx_lightning/rl/replay_buffer.py is not named in the README's Layout section"
    ]


@pytest.mark.parametrize("top", SCOPE)
def test_the_checked_roots_are_in_the_readme_block(top):
    named, _ = named_paths(layout_block((ROOT / "README.md").read_text()))
    assert top in named
