"""griffe extension: the docstrings' reST cross-references rendered as links by mkdocstrings.

The docstrings are Google style with Sphinx's roles for cross-references (``:func:`name```,
``:class:`~pkg.mod.Cls```, ``:mod:`.sibling```, ``:meth:`title <target>```); mkdocstrings reads
Markdown, where a role would show as raw text. Once griffe has loaded a package, every docstring's
roles are rewritten before mkdocstrings parses them:

* the target is resolved as Sphinx would: a dotted path as written; ``.name`` against the object's
  module and then each enclosing package; a bare name in the object's scope (its members, its module's
  names and imports), then the rest of a dotted name after it;
* a target found in the loaded packages becomes an optional autorefs cross-reference,
  ``<autoref identifier="full.path" optional><code>shown</code></autoref>``: a link where the target
  is rendered on some page, the plain name in code where it is not (no warning, so ``--strict`` holds);
* any other target (the standard library, torch, Lightning) becomes the plain name in code;
* what is shown is Sphinx's: the title of ``title <target>``, the last part after ``~``, else the
  target as written.

Loaded by mkdocs.yml (``plugins: mkdocstrings: handlers: python: options: extensions``).
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

import griffe

ROLE = re.compile(
    r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const|type):`(?:(?P<title>[^`<]*?)\s*<(?P<link>[^`>]+)>|(?P<target>[^`]+))`"
)


def _exists(collection: griffe.ModulesCollection, path: str) -> bool:
    try:
        collection.get_member(path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return False
    return True


def resolve(obj: griffe.Object, target: str, collection: griffe.ModulesCollection) -> str | None:
    """The full path of ``target`` cited in ``obj``'s docstring, or None when no loaded object is it."""
    if target.startswith("."):
        scope: griffe.Object | None = obj.module
        while scope is not None:
            if _exists(collection, candidate := scope.path + target):
                return candidate
            scope = scope.parent
        return None
    if _exists(collection, target):
        return target
    head, _, rest = target.partition(".")
    try:
        found = obj.resolve(head)
    except (griffe.NameResolutionError, KeyError, griffe.AliasResolutionError):
        return None
    path = f"{found}.{rest}" if rest else found
    return path if _exists(collection, path) else None


def rewrite(text: str, obj: griffe.Object, collection: griffe.ModulesCollection) -> str:
    """``text`` with each role replaced by a cross-reference or the plain name in code."""

    def one(m: re.Match[str]) -> str:
        target = (m["link"] or m["target"]).strip().lstrip("!")
        short = target.startswith("~")
        target = target.lstrip("~")
        shown = m["title"] or (target.rsplit(".", 1)[-1] if short else target)
        path = resolve(obj, target, collection)
        if path is None:
            return f"`{shown}`"
        return f'<autoref identifier="{escape(path)}" optional><code>{escape(shown)}</code></autoref>'

    return ROLE.sub(one, text)


class RestRoles(griffe.Extension):
    """Rewrites the roles of every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None and ":`" in obj.docstring.value:
                obj.docstring.value = rewrite(obj.docstring.value, obj, loader.modules_collection)
            stack.extend(m for m in obj.members.values() if not m.is_alias)
