"""Every name a docstring cites resolves: each reST role (``:func:`x```, ``:class:``, ``:mod:``, ``:meth:``,
``:attr:``, ``:data:``, ``:exc:``, ``:obj:``) in the package's and the callbacks' docstrings, and each
backquoted dotted name ````rl.pdx_step.pdx_step```` that names something under the package, is found the
way Sphinx would look it up: absolute (``pdx_lightning....``, or a module path under the package), from
the docstring's own module, from its class, or a name the module imports. A renamed or deleted function
leaves no stale citation behind (``tests/test_module_paths.py`` does the same for file paths)."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from types import ModuleType

import pytest

import pdx_lightning

ROLE = re.compile(r":(?:py:)?(func|class|mod|meth|attr|data|exc|obj):`~?([^`<>]+?)`")
# ``a.b.c`` in double backquotes whose first part is one of the package's layers (a dotted citation)
# (and python-chess's ``chess.x``: the chess core was once a ``chess`` layer, whose old citations name nothing)
LAYERS = "chesscore|nets|rl|evaluation|experiments|runtime|supervised|datagen|engines|callbacks|pdx_lightning|chess"
DOTTED = re.compile(rf"``((?:{LAYERS})(?:\.\w+)+)``")


def modules() -> list[ModuleType]:
    found = [pdx_lightning]
    for info in pkgutil.walk_packages(pdx_lightning.__path__, "pdx_lightning."):
        if info.name.endswith(("__main__", "._pdx_core")):  # the compiled core has no Python module
            continue
        found.append(importlib.import_module(info.name))
    return found


def docstrings(module: ModuleType) -> Iterator[tuple[str, str, object]]:
    """(where, docstring, owner) for the module, its classes, functions and methods defined there."""
    if module.__doc__:
        yield module.__name__, module.__doc__, module
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj):
            if obj.__doc__:
                yield f"{module.__name__}.{name}", obj.__doc__, obj
            for attr, member in vars(obj).items():
                fn = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if callable(fn) and getattr(fn, "__doc__", None) and getattr(fn, "__module__", None) == module.__name__:
                    yield f"{module.__name__}.{name}.{attr}", fn.__doc__, obj
        elif inspect.isfunction(obj) and obj.__doc__:
            yield f"{module.__name__}.{name}", obj.__doc__, module


def _attr_path(root: object, parts: list[str]) -> bool:
    obj = root
    for part in parts:
        if not hasattr(obj, part):
            # a dataclass field or an annotated attribute is documented on the class without a value
            return inspect.isclass(obj) and part in getattr(obj, "__annotations__", {})
        obj = getattr(obj, part)
    return True


def _absolute(target: str) -> bool:
    parts = target.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return _attr_path(module, parts[k:])
    return False


def resolves(target: str, module: ModuleType, owner: object) -> bool:
    target = target.strip().removesuffix("()")
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    if target.startswith("."):  # Sphinx's relative form: from the docstring's package, one level up per dot
        dots = len(target) - len(target.lstrip("."))
        base = package.rsplit(".", dots - 1)[0] if dots > 1 else package
        target = f"{base}.{target.lstrip('.')}"
    if hasattr(builtins, target):
        return True
    candidates = [target, f"pdx_lightning.{target}", f"{package}.{target}"]  # absolute, or a sibling module
    if any(_absolute(c) for c in candidates):
        return True
    parts = target.split(".")
    if _attr_path(module, parts):  # a name of the module (defined or imported there)
        return True
    return inspect.isclass(owner) and _attr_path(owner, parts)  # a member of the docstring's class


def citations() -> list[tuple[str, str, ModuleType, object]]:
    out = []
    for module in modules():
        for where, doc, owner in docstrings(module):
            for match in ROLE.finditer(doc):
                out.append((where, match.group(2), module, owner))
            for match in DOTTED.finditer(doc):
                out.append((where, match.group(1), module, owner))
    return out


def test_there_are_citations_to_check():
    assert len(citations()) > 100


def test_every_cited_name_resolves():
    bad = [f"{where}: {target}" for where, target, module, owner in citations() if not resolves(target, module, owner)]
    assert not bad, "cited names that do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("target", "ok"),
    [("rl.pdx_step.pdx_step", True), ("pdx_lightning.rl.pdx_step.StepConfig", False), ("rl.objectives.nothing", False)],
)
def test_the_resolver_itself(target, ok):
    assert resolves(target, pdx_lightning, pdx_lightning) is ok
