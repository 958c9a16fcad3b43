"""mkdocs hook: the built site shows what its sources say, checked after every build.

Python-Markdown and mkdocstrings differ from a forge's renderer in ways ``--strict`` does not see;
each finding below fails the build (so CI's ``mkdocs build --strict`` fails), with its page:

* broken emphasis: ``**`` left as text, or an ``<em>``/``<strong>`` that opens or closes on a space
  (a stray ``*``, as in ``**β* = 1e-2**``, pairs with the wrong star and turns the rest italic);
* a collapsed list: a paragraph with a line starting ``- ``, ``* ``, ``+ `` or ``1. `` (Markdown
  needs a blank line before a list; without it the items run on inside the paragraph above), or, in
  a page's Markdown, a list item indented by 1 to 3 spaces (Python-Markdown nests a list only at 4:
  at 2 the sub-items become items of the outer list);
* a wrapped line read as a list: in a page's Markdown, a line starting with a list marker right after
  a line that ends mid-sentence (no ``.``, ``:``, ``;`` ... at its end), as in ``and online forward``
  then ``    + backward.``: inside a list item Python-Markdown makes the rest of the sentence a
  sub-item;
* a table wider than the column: the widths of each column's longest word (what the browser cannot
  wrap) at the site's table font (``docs/stylesheets/extra.css``) add up to more than
  :data:`COLUMN_PX`, the text column on a 1,400 px window;
* a raw role of any kind (``:func:``, ``:paramref:``, ...) in the text or in a ``<pre>`` block:
  a docstring or help-text cross-reference that was not turned into a link or a name
  (``docs/hooks/rest_roles.py`` and ``docs/hooks/cli_reference.py`` do that);
* raw reST markup in a ``<pre>`` block: an inline literal ````x```` or a link ```text <url>`_``
  (help text from docstrings: ``docs/hooks/cli_reference.py`` writes it as Markdown's ```x```);
* a duplicated figure: two image files with the same bytes shown on the site's pages (a figure
  copied under another run's name shows one run's data as another's);
* raw TeX (``^{`` or ``_{``) in the text outside math and code: an equation not written as math (not
  on the API pages: docstrings write formulas in Unicode, for ``help()`` and editors, where braces
  group an exponent as plain text does);
* an image whose file is not in the site (or that is not part of the site: an ``http`` image), and a
  script or stylesheet loaded from outside the site (a page must read offline: its math is MathML
  written at build time, ``docs/hooks/math.py``; its fonts are the system's).

Text inside ``<pre>``, ``<code>``, ``<script>``, ``<style>`` and math (``class="arithmatex"``) is not
read (except for raw roles and reST markup in ``<pre>``). Also a script: ``python docs/hooks/site_check.py SITE_DIR
[DOCS_DIR]`` checks a built site (and the Markdown of ``DOCS_DIR``) and counts the problems by kind.
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LIST_LINE = re.compile(r"\n[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S")
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):")
# any Sphinx role written out: ``:name:`target``` (or ``:py:name:``), e.g. Lightning's ``:paramref:``
ANY_ROLE = re.compile(r"(?<![\w:]):(?:[a-z]+:)?[a-z][a-z_]*:`[^`\n]+`")
ROLE_AT_END = re.compile(r"(?<![\w:]):(?:[a-z]+:)?[a-z][a-z_]*:$")  # a role whose target follows as <code>
# reST inline literal ``x`` (not a Markdown fence's ```) or link `text <url>`_, written out
REST_MARKUP = re.compile(r"(?<!`)``(?=[^`\s])[^`]*?(?<=[^`\s])``(?!`)|`[^`<]+<[^`>\s]+>`__?")
LIST_ITEM_UNDER_4 = re.compile(r"^( {1,3})(?:[-*+]|\d+[.)])[ \t]+\S")
LIST_ITEM = re.compile(r"^ *(?:[-*+]|\d+[.)])[ \t]+\S")
# how a line may end before a list starts on the next one: a sentence's end, a colon, a closing
# bracket or emphasis or code; anything else (a word, a comma) is a sentence that goes on
ENDS_CLAUSE = re.compile(r"[.:;!?)\]*`]\s*$")
NOT_TEXT = ("|", "#", "<", ">")  # a table row, a heading, HTML, a quote: not a wrapped sentence
FENCE = re.compile(r"^\s*(```|~~~)")
EMPHASIS = {"em", "strong"}
# the table model of docs/stylesheets/extra.css: the text column on a 1,400 px window with both
# sidebars (853 px in Chromium), the table font (0.64rem of a 20 px root), a cell's padding (0.4 em a
# side, and its border); a character at 0.5 em, in bold 0.52 em (measured: the 14-column rating table
# of the seeds report laid out 638 px of text for 102 characters, 0.49 em). A word breaks at spaces and
# after a hyphen or an en dash, as the browser breaks it.
COLUMN_PX = 853
STYLE = "stylesheets/extra.css"
TABLE_FONT_PX = 12.8
CELL_PAD_PX = 2 * 0.4 * TABLE_FONT_PX + 1
CHAR_EM, BOLD_CHAR_EM = 0.5, 0.52
WORD = re.compile(r"[^\s\-–]*[\-–]|[^\s\-–]+")
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
        self.emphasis: list[list[str]] = []  # the text of each open <em>/<strong>
        self.pre = 0  # inside a <pre> block
        self.role_pending: str | None = None  # text ending with ``:name:`` just before a <code>
        self.table: list[list[tuple[str, bool]]] | None = None  # rows of (cell text, header)
        self.cell: list[str] | None = None
        self.cell_header = False
        self.tables: list[list[list[tuple[str, bool]]]] = []

    @property
    def verbatim(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs).get("src") or "")
        a = dict(attrs)
        src = (
            a.get("src")
            if tag == "script"
            else a.get("href")
            if tag == "link" and a.get("rel") == "stylesheet"
            else None
        )
        if src and (urlsplit(src).scheme or urlsplit(src).netloc):
            self.problems.append(f"{'script' if tag == 'script' else 'stylesheet'} from outside the site: {src}")
        if tag in VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        if tag == "code" and self.role_pending is not None and not self.verbatim:
            self.problems.append(f"raw role: {self.role_pending}")
        self.role_pending = None
        self.stack.append((tag, self.verbatim or tag in VERBATIM or "arithmatex" in classes))
        if tag == "p" and not self.verbatim:
            self.paragraph = []
        if tag == "pre":
            self.pre += 1
        if tag in EMPHASIS and not self.verbatim:
            if self.emphasis and tag == "em" and self.stack[-2][0] == "em":
                self.problems.append("broken emphasis: <em> directly inside <em> (a stray * inside ** ... **)")
            self.emphasis.append([])
        if tag == "table":
            self.table = []
        elif tag == "tr" and self.table is not None:
            self.table.append([])
        elif tag in ("td", "th") and self.table is not None:
            self.cell, self.cell_header = [], tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        self.role_pending = None
        if tag == "pre" and self.pre:
            self.pre -= 1
        if tag in EMPHASIS and self.emphasis and not self._verbatim_below():
            text = "".join(self.emphasis.pop())
            if text and (text[0].isspace() or text[-1].isspace()):
                self.problems.append(f"broken emphasis: <{tag}> opens or closes on a space: {_excerpt(text, 0)}")
        if tag in ("td", "th") and self.cell is not None and self.table:
            self.table[-1].append(("".join(self.cell), self.cell_header))
            self.cell = None
        elif tag == "table" and self.table is not None:
            self.tables.append(self.table)
            self.table = None
        while self.stack:  # close up to the matching tag (HTML lets some end tags be left out)
            if self.stack.pop()[0] == tag:
                break
        if tag == "p" and self.paragraph is not None:
            text = "".join(self.paragraph)
            if m := LIST_LINE.search(text):
                self.problems.append(f"collapsed list: {_excerpt(text, m.start())}")
            self.paragraph = None

    def _verbatim_below(self) -> bool:
        """Whether the element being closed sits inside verbatim text (its parent reads verbatim)."""
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] in EMPHASIS:
                return i > 0 and self.stack[i - 1][1]
        return False

    def handle_data(self, data: str) -> None:
        if self.paragraph is not None:  # code in a paragraph stands as one word (its text is not read)
            self.paragraph.append("C" if self.verbatim else data)
        if self.cell is not None:
            self.cell.append(data)
        if self.pre and (m := ANY_ROLE.search(data)):
            self.problems.append(f"raw role in a code block: {_excerpt(data, m.start())}")
        if self.pre and (m := REST_MARKUP.search(data)):
            self.problems.append(f"raw reST markup in a code block: {_excerpt(data, m.start())}")
        if self.verbatim:
            return
        for text in self.emphasis:
            text.append(data)
        if m := ROLE.search(data) or ANY_ROLE.search(data):
            self.problems.append(f"raw reST role: {_excerpt(data, m.start())}")
        elif m := ROLE_AT_END.search(data.rstrip("`")):
            self.role_pending = _excerpt(data, m.start())
        if "**" in data:
            self.problems.append(f"broken emphasis: ** left as text: {_excerpt(data, data.index('**'))}")
        if m := RAW_TEX.search(data):
            self.problems.append(f"raw TeX outside math: {_excerpt(data, m.start())}")


def _excerpt(text: str, at: int) -> str:
    return " ".join(text[max(0, at - 40) : at + 60].split())


def _word_px(word: str, bold: bool) -> float:
    return len(word) * (BOLD_CHAR_EM if bold else CHAR_EM) * TABLE_FONT_PX


def table_min_px(rows: list[list[tuple[str, bool]]]) -> float:
    """The narrowest the table can be laid out: per column its longest word (what a browser cannot
    wrap) plus the cell's padding, added up."""
    widths: dict[int, float] = {}
    for row in rows:
        for i, (text, header) in enumerate(row):
            longest = max((_word_px(w, header) for w in WORD.findall(text)), default=0.0)
            widths[i] = max(widths.get(i, 0.0), longest + CELL_PAD_PX)
    return sum(widths.values())


def check_markdown(markdown: str) -> list[str]:
    """The problems of one page's Markdown that its HTML no longer shows: a list nested by fewer than
    4 spaces, which Python-Markdown flattens into the outer list, and a list item that starts in the
    middle of a sentence (a wrapped line that begins with ``+``, ``-`` or ``1.``)."""
    problems = []
    fenced = math = False
    before = ""  # the previous line of Markdown text ("" after a blank line, a fence or an equation)
    for n, line in enumerate(markdown.splitlines(), 1):
        if FENCE.match(line):
            fenced, before = not fenced, ""
            continue
        if not fenced and line.strip() == "$$":  # a display equation's lines are TeX, not Markdown
            math, before = not math, ""
            continue
        if fenced or math:
            continue
        if LIST_ITEM_UNDER_4.match(line):
            problems.append(
                f"collapsed list: line {n} nests an item by {len(line) - len(line.lstrip())} spaces (4 needed)"
            )
        if (
            LIST_ITEM.match(line)
            and before.strip()
            and not before.lstrip().startswith(NOT_TEXT)
            and not ENDS_CLAUSE.search(before)
        ):
            end = " ".join(before.split())[-40:]
            problems.append(
                f"wrapped line read as a list: line {n} starts a list item mid-sentence (the line before ends {end!r})"
            )
        before = line
    return problems


def check_html(html: str, page: Path, site: Path, *, tex: bool = True) -> list[str]:
    """The problems of one page's HTML; ``page`` is its file in the built ``site``; ``tex``: look for
    raw TeX too."""
    parser = _Page()
    parser.feed(html)
    parser.close()
    problems = [p for p in parser.problems if tex or not p.startswith("raw TeX")]
    for rows in parser.tables:
        if (px := table_min_px(rows)) > COLUMN_PX:
            head = " | ".join(t for t, _ in rows[0][:3]) if rows and rows[0] else ""
            problems.append(
                f"table wider than the column: at least {px:.0f} px of {COLUMN_PX} ({_excerpt(head, 0)} ...)"
            )
    for src in parser.images:
        url = urlsplit(src)
        if url.scheme == "data":
            continue
        if url.scheme or url.netloc:
            problems.append(f"image from outside the site: {src}")
        elif not (target := (page.parent / unquote(url.path)).resolve()).is_file() or site not in target.parents:
            problems.append(f"missing image: {src}")
    return problems


def shown_images(html: str) -> list[str]:
    """The ``src`` of every image of a page."""
    parser = _Page()
    parser.feed(html)
    parser.close()
    return parser.images


def duplicated_figures(site: Path) -> list[str]:
    """Image files of the site with the same bytes, each set shown on its pages: one problem per copy."""
    by_hash: dict[str, dict[Path, list[str]]] = {}
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        for src in shown_images(page.read_text(encoding="utf-8")):
            url = urlsplit(src)
            if url.scheme or url.netloc or url.path.endswith(".svg"):
                continue
            target = (page.parent / unquote(url.path)).resolve()
            if target.is_file() and site in target.parents:
                digest = hashlib.sha256(target.read_bytes()).hexdigest()
                by_hash.setdefault(digest, {}).setdefault(target, []).append(rel)
    out = []
    for files in by_hash.values():
        if len(files) > 1:
            (first, pages), *copies = sorted(files.items())
            for path, where in copies:
                out.append(
                    f"{where[0]}: duplicated figure: {path.relative_to(site).as_posix()} has the same bytes as "
                    f"{first.relative_to(site).as_posix()} (shown on {pages[0]})"
                )
    return out


def check_site(site: Path, docs: Path | None = None) -> list[str]:
    """Every problem of every page of the built site (and of the Markdown in ``docs``), as ``page: problem``."""
    site = site.resolve()
    out = []
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        html = page.read_text(encoding="utf-8")
        for problem in check_html(html, page, site, tex=not rel.startswith("api/")):
            out.append(f"{rel}: {problem}")
        if "<table" in html and STYLE not in html:  # the table model assumes the site's stylesheet
            out.append(f"{rel}: table wider than the column: the page does not load {STYLE}")
    out += duplicated_figures(site)
    if docs is not None:
        for md in sorted(docs.rglob("*.md")):
            out += [f"{md.relative_to(docs).as_posix()}: {p}" for p in check_markdown(md.read_text(encoding="utf-8"))]
    return out


def kinds(problems: list[str]) -> Counter[str]:
    """How many problems of each kind (the words before the first colon of each problem)."""
    return Counter(p.split(": ", 2)[1].split(":")[0] for p in problems)


_markdown_problems: list[str] = []


def on_pre_build(config) -> None:
    _markdown_problems.clear()


def on_page_markdown(markdown: str, page, config, files) -> str:
    """The page's Markdown (the last hook: as the other hooks left it): lists nested by under 4 spaces."""
    _markdown_problems.extend(f"{page.file.src_uri}: {p}" for p in check_markdown(markdown))
    return markdown


def on_post_build(config) -> None:
    from mkdocs.exceptions import PluginError  # noqa: PLC0415  (the script needs no mkdocs)

    if problems := _markdown_problems + check_site(Path(config["site_dir"])):
        shown = "\n  ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        raise PluginError(f"site_check: {len(problems)} rendering problem(s) in the built site:\n  {shown}{more}")


if __name__ == "__main__":
    found = check_site(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    print("\n".join(found) or "site_check: no problems")
    print("by kind:", dict(sorted(kinds(found).items())) or "none")
    sys.exit(1 if found else 0)
