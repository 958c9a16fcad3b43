"""mkdocs hook: the pages' equations as MathML, written at build time (no script, no network).

``pymdownx.arithmatex`` (generic mode, mkdocs.yml) marks ``$...$`` as ``<span class="arithmatex">\\(...\\)</span>``
and ``$$...$$`` as ``<div class="arithmatex">\\[...\\]</div>``; after each page is rendered, the TeX in
them is converted to MathML by ``latex2mathml`` (pure Python, the docs extra), which browsers typeset
natively (Chromium 109+, Firefox, Safari). The page then needs nothing from outside the site to show
its math; formerly MathJax was loaded from a CDN when the page was read, and offline the TeX showed as
typed. TeX that cannot be converted fails the build with its page.
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

INLINE = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>', re.S)
BLOCK = re.compile(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def to_mathml(tex: str, *, block: bool) -> str:
    """One equation (TeX as arithmatex escaped it in the HTML) as a ``<math>`` element."""
    try:
        return convert(html.unescape(tex).strip(), display="block" if block else "inline")
    except Exception as exc:  # latex2mathml raises its own errors and plain ones on bad input
        raise PluginError(f"math: cannot convert {tex.strip()[:80]!r} to MathML: {exc}") from exc


def render(page_html: str) -> str:
    """``page_html`` with every arithmatex span and block as MathML (the wrapper kept, for styling)."""
    page_html = BLOCK.sub(lambda m: f'<div class="arithmatex">{to_mathml(m[1], block=True)}</div>', page_html)
    return INLINE.sub(lambda m: f'<span class="arithmatex">{to_mathml(m[1], block=False)}</span>', page_html)


def on_page_content(html_: str, page, config, files) -> str:
    try:
        return render(html_)
    except PluginError as exc:
        raise PluginError(f"{page.file.src_uri}: {exc}") from exc
