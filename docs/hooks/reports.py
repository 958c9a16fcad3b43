"""mkdocs hook: the run reports (``reports/``, beside ``docs/``) inside the built site.

The pages link a report and show its figures by their paths in the repository, so the same Markdown
works on a forge and in the site: from ``docs/results/maia-seeds8.md``,
``![...](../../reports/sweep_maia_seeds8/figure6_real_by_rating.png)`` and
``[report](../../reports/sweep_maia_seeds8/report.md)``. At build time:

* every report file a docs page links (``.md``, ``.png``, ``.txt``: pdx's own outputs, MIT; never an
  archive, a game record or a network), and every one those report pages link in turn, is added to
  the site under ``reports/``, the ``.md`` files as pages (``not_in_nav`` in mkdocs.yml), so a report
  reads as a page with its tables and figures;
* a docs page's relative link or image that leaves ``docs/`` for ``reports/`` is re-pointed at that
  copy; a report page's link to something the site does not hold (a folder, an archive) becomes its
  path in code.

mkdocs then checks those links like any other (``--strict``: a figure a page names that does not
exist fails the build).

A report figure with the same bytes as another report's (the eight-seed report draws Table 1's cells,
seed 0 of each arm, which are the three-seed report's) is mounted once: the later report's page shows
the first one's file, with a line saying whose figure it is and why (``aliases``), so no copy passes
for a figure of its own run (``site_check.py`` fails a build that shows two files with the same bytes).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
REPORTS = "reports"
KINDS = (".md", ".png", ".txt")
# a Markdown link or image target: ](target) or ](target "title")
LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def _targets(markdown: str) -> list[str]:
    """The relative link and image targets of ``markdown`` (without anchors)."""
    out = []
    for m in LINK.finditer(markdown):
        target = m[2].partition("#")[0]
        if target and "://" not in target and not target.startswith(("/", "mailto:")):
            out.append(target)
    return out


def mounted(docs_dir: Path) -> list[Path]:
    """The report files the docs pages link, and those the linked report pages link in turn."""
    reports = (ROOT / REPORTS).resolve()
    todo = [p for p in sorted(docs_dir.rglob("*.md")) if "hooks" not in p.parts]
    seen: set[Path] = set()
    while todo:
        page = todo.pop()
        for target in _targets(page.read_text(encoding="utf-8")):
            path = (page.parent / target).resolve()
            if reports in path.parents and path.is_file() and path.suffix in KINDS and path not in seen:
                seen.add(path)
                if path.suffix == ".md":
                    todo.append(path)
    return sorted(seen)


_aliases: dict[str, str] = {}  # a duplicate figure's site path -> the path of the copy mounted


def aliases(paths: list[Path]) -> dict[str, str]:
    """``{duplicate: first}`` site paths of the ``.png`` files with the same bytes as an earlier one."""
    first: dict[str, str] = {}
    out = {}
    for path in sorted(paths):
        if path.suffix != ".png":
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        uri = path.relative_to(ROOT).as_posix()
        if digest in first:
            out[uri] = first[digest]
        else:
            first[digest] = uri
    return out


def on_files(files: Files, config) -> Files:
    paths = mounted(Path(config["docs_dir"]))
    _aliases.clear()
    _aliases.update(aliases(paths))
    for path in paths:
        if (uri := path.relative_to(ROOT).as_posix()) not in _aliases:
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def same_figure(markdown: str, src_uri: str, dupes: dict[str, str]) -> str:
    """A report page's images that duplicate another report's figure, shown from that report's file,
    each followed by a line naming the report it comes from."""
    page_dir = posixpath.dirname(src_uri)

    def one(m: re.Match[str]) -> str:
        path = posixpath.normpath(posixpath.join(page_dir, m[2]))
        if path not in dupes:
            return m[0]
        first = dupes[path]
        report = posixpath.join(posixpath.dirname(first), "report.md")
        return (
            f"{m[1]}{posixpath.relpath(first, page_dir)})\n\n*The same figure as "
            f"[{posixpath.dirname(first)}]({posixpath.relpath(report, page_dir)})'s, byte for byte: it is drawn "
            "from the cells both runs share (seed 0 of each arm), not from this run's added seeds.*"
        )

    return re.sub(r"(!\[[^\]]*\]\()([^)\s]+\.png)\)", one, markdown)


def repoint(markdown: str, src_uri: str) -> str:
    """``markdown`` of the docs page ``src_uri`` with links into ``reports/`` made site-relative."""
    page_dir = posixpath.dirname(src_uri)

    def one(m: re.Match[str]) -> str:
        target = m[2]
        if "://" in target or target.startswith(("#", "/", "mailto:")):
            return m[0]
        path, _, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join("docs", page_dir, path))
        if not in_repo.startswith(REPORTS + "/"):
            return m[0]
        new = posixpath.relpath(in_repo, page_dir or ".") + (f"#{anchor}" if anchor else "")
        return f"{m[1]}{new}{m[3]}"

    return LINK.sub(one, markdown)


def unlink_unmounted(markdown: str, src_uri: str, files: Files) -> str:
    """A report page's links to what the site does not hold (a folder, an archive) as their repository
    path in code: the report reads the same, and no link leads nowhere."""
    page_dir = posixpath.dirname(src_uri)

    def one(m: re.Match[str]) -> str:
        target = m[0]
        link = re.match(r"(!?)\[([^\]]*)\]\(([^)\s]+)", target)
        if link is None or link[1] or "://" in link[3] or link[3].startswith(("#", "/", "mailto:")):
            return target
        path = posixpath.normpath(posixpath.join(page_dir, link[3].partition("#")[0]))
        if files.get_file_from_path(path) is not None:
            return target
        return f"`{path}`"

    return re.sub(r"!?\[[^\]]*\]\([^)\s]+(?:\s+\"[^\"]*\")?\)", one, markdown)


def retitle(markdown: str, src_uri: str, nav_title: str | None) -> str:
    """A ``pdx report`` page's heading (``# pdx report: <the runs directory it was built from>``, often a
    temporary one) as the title the navigation gives it, else as the report's own directory."""
    first, sep, rest = markdown.partition("\n")
    if not first.startswith("# pdx report:"):
        return markdown
    where = posixpath.dirname(src_uri)
    title = nav_title if nav_title and not nav_title.startswith("pdx report") else f"pdx report: {where}"
    return f"# {title}\n\n`pdx report` of `{where}/`.{sep}{rest}"


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri.startswith(REPORTS + "/"):
        markdown = retitle(markdown, page.file.src_uri, page.title if page.is_page else None)
        markdown = same_figure(markdown, page.file.src_uri, _aliases)
        return unlink_unmounted(markdown, page.file.src_uri, files)
    return repoint(markdown, page.file.src_uri)
