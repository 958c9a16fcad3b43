"""Static checks on the package as it installs: ``callbacks/``, ``conf/`` and ``data/`` at the top of the
repository are ``pdx_lightning.callbacks``, ``pdx_lightning.conf`` and ``pdx_lightning.data`` (the
package-dir mapping in ``pyproject.toml``). Python follows that mapping (the wheel, and setuptools'
import finder in the editable install); import-linter and mypy read the source tree and would not, so
CI and pre-commit run them through here::

    .venv/bin/python -m tools.installed_layout lint-imports [lint-imports options]
    .venv/bin/python -m tools.installed_layout mypy [mypy options]

* ``lint-imports`` builds its graph from a copy of the package's Python files laid out as installed (a
  temporary directory, no links), so the layers contract sees ``pdx_lightning.callbacks`` at its layer;
  module names and line numbers are the source's. :func:`build_graph` is that graph (the import-cycle
  test uses it).
* ``mypy`` checks the source files in place, each under its installed module name (mypy names a file by
  its folders: ``callbacks/ema.py`` is ``pdx_lightning.callbacks.ema`` here), so messages name the real files.
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pdx_lightning"


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Every package-dir mapping of ``pyproject.toml`` below :data:`PACKAGE`: installed name -> source folder."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping = {name: root / path for name, path in setuptools.get("package-dir", {}).items()}
    return {PACKAGE: root / PACKAGE, **{k: v for k, v in mapping.items() if k.startswith(PACKAGE + ".")}}


@contextmanager
def installed_copy(root: Path = ROOT) -> Iterator[Path]:
    """A temporary directory holding the package's ``.py`` files in their installed layout (copies)."""
    with tempfile.TemporaryDirectory(prefix="pdx-layout-") as tmp:
        for name, src in package_dirs(root).items():
            dest = Path(tmp, *name.split("."))
            for f in src.rglob("*.py"):
                if "__pycache__" in f.parts:
                    continue
                target = dest / f.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
        yield Path(tmp)


def build_graph(root: Path = ROOT, **kwargs):
    """grimp's import graph of the package as installed (:func:`installed_copy`); ``kwargs`` go to
    ``grimp.build_graph`` (no cache: the copy's files are new each time)."""
    import grimp  # noqa: PLC0415  (a test/lint dependency)

    with installed_copy(root) as tmp:
        # grimp finds the package with importlib.util.find_spec, which answers from sys.modules first
        imported = sys.modules.pop(PACKAGE, None)
        sys.path.insert(0, str(tmp))
        importlib.invalidate_caches()
        try:
            return grimp.build_graph(PACKAGE, **{**kwargs, "cache_dir": None})
        finally:
            sys.path.remove(str(tmp))
            if imported is not None:
                sys.modules[PACKAGE] = imported


def lint_imports(argv: list[str]) -> int:
    """``lint-imports`` (its own options) over :func:`build_graph`'s graph."""
    from importlinter import cli  # noqa: PLC0415  (configures import-linter's settings)
    from importlinter.adapters.building import GraphBuilder  # noqa: PLC0415
    from importlinter.application.app_config import settings  # noqa: PLC0415

    class InstalledGraphBuilder(GraphBuilder):
        def build(self, root_package_names, cache_dir, include_external_packages=False, **kwargs):
            if list(root_package_names) != [PACKAGE]:
                raise SystemExit(f"installed_layout: root_packages must be [{PACKAGE!r}], not {root_package_names}")
            return build_graph(include_external_packages=include_external_packages, **kwargs)

    settings.configure(GRAPH_BUILDER=InstalledGraphBuilder())
    return cli.lint_imports_command.main(argv, prog_name="lint-imports", standalone_mode=False) or 0


def mypy(argv: list[str]) -> int:
    """mypy ([tool.mypy]) with each mapped folder's files named as installed."""
    from mypy import build, errors  # noqa: PLC0415
    from mypy.fscache import FileSystemCache  # noqa: PLC0415
    from mypy.main import process_options  # noqa: PLC0415

    fscache = FileSystemCache()
    sources, options = process_options(argv, stdout=sys.stdout, stderr=sys.stderr, fscache=fscache)
    mapped = {src.resolve(): name for name, src in package_dirs().items() if name != PACKAGE}
    for s in sources:
        if s.path is None:
            continue
        path = Path(s.path).resolve()
        for src, name in mapped.items():
            if path.is_relative_to(src):
                rel = path.relative_to(src).with_suffix("").parts
                s.module = ".".join([name, *(rel if rel[-1] != "__init__" else rel[:-1])])
    try:
        result = build.build(sources, options, fscache=fscache)
        messages = result.errors
    except errors.CompileError as e:
        messages = e.messages
    for line in messages:
        print(line)
    n = sum(": error:" in line for line in messages)
    files = len({line.split(":", 1)[0] for line in messages if ": error:" in line})
    if n:
        print(
            f"Found {n} error{'s' * (n != 1)} in {files} file{'s' * (files != 1)} (checked {len(sources)} source files)"
        )
        return 1
    print(f"Success: no issues found in {len(sources)} source files")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    tools = {"lint-imports": lint_imports, "mypy": mypy}
    if not args or args[0] not in tools:
        print(__doc__.split("::", 1)[1].split("\n\n")[0].rstrip(), file=sys.stderr)
        return 2
    return int(tools[args[0]](args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
