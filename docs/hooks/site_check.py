"""mkdocs hook: the built site shows what its sources say, checked in the HTML after every build.

Python-Markdown and mkdocstrings differ from a forge's renderer in ways ``--strict`` does not see;
each finding below fails the build (so CI's ``mkdocs build --strict`` fails), with its page:

* a collapsed list: a paragraph with a line starting ``- ``, ``* ``, ``+ `` or ``1. `` (Markdown
  needs a blank line before a list; without it the items run on inside the paragraph above);
* a raw reST role (``:func:``, ``:class:``, ...) in the text: a docstring cross-reference that was
  not turned into a link or a name (``docs/hooks/rest_roles.py`` does that);
* raw TeX (``^{`` or ``_{``) in the text outside math and code: an equation not written as math (not
  on the API pages: docstrings write formulas in Unicode, for ``help()`` and editors, where braces
  group an exponent as plain text does);
* an image whose file is not in the site (or that is not part of the site: an ``http`` image).

Text inside ``<pre>``, ``<code>``, ``<script>``, ``<style>`` and math (``class="arithmatex"``) is not
read. Also a script: ``python docs/hooks/site_check.py SITE_DIR`` checks a built site.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LIST_LINE = re.compile(r"\n[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S")
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):")
RAW_TEX = re.compile(r"[\^_]\{")
VERBATIM = {"pre", "code", "script", "style", "kbd", "samp"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # (tag, text under it is not read)
        self.paragraph: list[str] | None = None
        self.problems: list[str] = []
        self.images: list[str] = []

    @property
    def verbatim(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        if tag in VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        self.stack.append((tag, self.verbatim or tag in VERBATIM or "arithmatex" in classes))
        if tag == "p" and not self.verbatim:
            self.paragraph = []

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self.stack:  # close up to the matching tag (HTML lets some end tags be left out)
            if self.stack.pop()[0] == tag:
                break
        if tag == "p" and self.paragraph is not None:
            text = "".join(self.paragraph)
            if m := LIST_LINE.search(text):
                self.problems.append(f"collapsed list: {_excerpt(text, m.start())}")
            self.paragraph = None

    def handle_data(self, data: str) -> None:
        if self.paragraph is not None:  # code in a paragraph stands as one word (its text is not read)
            self.paragraph.append("C" if self.verbatim else data)
        if self.verbatim:
            return
        if m := ROLE.search(data):
            self.problems.append(f"raw reST role: {_excerpt(data, m.start())}")
        if m := RAW_TEX.search(data):
            self.problems.append(f"raw TeX outside math: {_excerpt(data, m.start())}")


def _excerpt(text: str, at: int) -> str:
    return " ".join(text[max(0, at - 40) : at + 60].split())


def check_html(html: str, page: Path, site: Path, *, tex: bool = True) -> list[str]:
    """The problems of one page's HTML; ``page`` is its file in the built ``site``; ``tex``: look for
    raw TeX too."""
    parser = _Page()
    parser.feed(html)
    parser.close()
    problems = [p for p in parser.problems if tex or not p.startswith("raw TeX")]
    for src in parser.images:
        url = urlsplit(src)
        if url.scheme == "data":
            continue
        if url.scheme or url.netloc:
            problems.append(f"image from outside the site: {src}")
        elif not (target := (page.parent / unquote(url.path)).resolve()).is_file() or site not in target.parents:
            problems.append(f"missing image: {src}")
    return problems


def check_site(site: Path) -> list[str]:
    """Every problem of every page of the built site, as ``page: problem``."""
    site = site.resolve()
    out = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        for problem in check_html(page.read_text(encoding="utf-8"), page, site, tex=not rel.startswith("api/")):
            out.append(f"{rel}: {problem}")
    return out


def on_post_build(config) -> None:
    from mkdocs.exceptions import PluginError  # noqa: PLC0415  (the script needs no mkdocs)

    if problems := check_site(Path(config["site_dir"])):
        shown = "\n  ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise PluginError(f"site_check: {len(problems)} rendering problem(s) in the built site:\n  {shown}{more}")


if __name__ == "__main__":
    found = check_site(Path(sys.argv[1]))
    print("\n".join(found) or "site_check: no problems")
    sys.exit(1 if found else 0)
