"""The docs site's build hooks (docs/hooks/): the HTML check every build runs, the docstrings' reST
roles as cross-references, the reports mounted into the site, and each results page's figures.

The full build (``mkdocs build --strict``, which runs all of them on the real site) is CI's; here each
piece runs on small real inputs: HTML as Python-Markdown and mkdocstrings write it, a package loaded
by griffe, the repository's own pages and reports."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "docs" / "hooks"


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"pdx_docs_hook_{name}", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


site_check = _hook("site_check")


def _problems(html: str, tmp_path: Path) -> list[str]:
    page = tmp_path / "page" / "index.html"
    page.parent.mkdir(exist_ok=True)
    page.write_text(html)
    return site_check.check_html(html, page, tmp_path.resolve())


def test_site_check_finds_a_collapsed_list_not_a_real_one(tmp_path):
    collapsed = "<p><strong>Verdicts.</strong>\n- <strong>One</strong> holds.\n- Two does not.</p>"
    assert _problems(collapsed, tmp_path) == ["collapsed list: Verdicts. - One holds. - Two does not."]
    assert _problems("<p>Verdicts.</p>\n<ul>\n<li>One holds.</li>\n<li>Two.</li>\n</ul>", tmp_path) == []
    assert _problems("<p>numbered:\n1. first</p>", tmp_path) != []
    # code inside the paragraph is one word, so a line starting with code then " + " is prose
    assert _problems("<p>LightningCLI on\n<code>DistillModule</code> + <code>Shards</code>.</p>", tmp_path) == []
    assert _problems("<pre><code>text\n- not a list\n</code></pre>", tmp_path) == []


def test_site_check_finds_raw_roles_and_tex_outside_code_and_math(tmp_path):
    assert _problems("<p>See :func:<code>atomic_write</code>.</p>", tmp_path) == ["raw reST role: See :func:"]
    assert _problems("<p>Write <code>:func:`x`</code> in docstrings.</p>", tmp_path) == []
    assert _problems("<p>μ ∝ π_θ^{1/τ}</p>", tmp_path) == ["raw TeX outside math: μ ∝ π_θ^{1/τ}"]
    assert _problems('<p><span class="arithmatex">\\(\\pi^{1/\\tau}\\)</span></p>', tmp_path) == []
    page = tmp_path / "api" / "index.html"
    page.parent.mkdir()
    assert site_check.check_html("<p>π^{1/τ}</p>", page, tmp_path.resolve(), tex=False) == []


def test_site_check_finds_missing_and_outside_images(tmp_path):
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "fig.png").write_bytes(b"\x89PNG")
    assert _problems('<p><img src="../reports/fig.png"></p>', tmp_path) == []
    assert _problems('<p><img alt="x" src="../reports/nope.png"></p>', tmp_path) == [
        "missing image: ../reports/nope.png"
    ]
    assert _problems('<img src="../../elsewhere.png">', tmp_path) == ["missing image: ../../elsewhere.png"]
    assert _problems('<img src="https://example.org/x.png">', tmp_path) == [
        "image from outside the site: https://example.org/x.png"
    ]


def test_rest_roles_become_optional_cross_references_or_names(tmp_path):
    griffe = pytest.importorskip("griffe", reason="the docs extra (mkdocstrings[python]) is not installed")
    rest_roles = _hook("rest_roles")
    pkg = tmp_path / "demo"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Top: :mod:`demo.sub.tools` and :class:`~demo.sub.tools.Box`."""\n')
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helpers.py").write_text("def help_me():\n    pass\n")
    (pkg / "sub" / "tools.py").write_text(
        "from demo.sub.helpers import help_me\n\n\n"
        "class Box:\n"
        '    """Uses :func:`help_me`, :meth:`Box.open`, :mod:`.helpers`, :func:`len`, and\n'
        '    :class:`the box <Box>`; :data:`LIMIT` is unknown."""\n\n'
        "    def open(self):\n        pass\n"
    )
    loaded = griffe.load("demo", search_paths=[str(tmp_path)], extensions=griffe.load_extensions(rest_roles.RestRoles))
    assert loaded.docstring.value == (
        'Top: <autoref identifier="demo.sub.tools" optional><code>demo.sub.tools</code></autoref> and '
        '<autoref identifier="demo.sub.tools.Box" optional><code>Box</code></autoref>.'
    )
    box = loaded["sub.tools.Box"].docstring.value
    assert box == (
        'Uses <autoref identifier="demo.sub.helpers.help_me" optional><code>help_me</code></autoref>, '
        '<autoref identifier="demo.sub.tools.Box.open" optional><code>Box.open</code></autoref>, '
        '<autoref identifier="demo.sub.helpers" optional><code>.helpers</code></autoref>, `len`, and\n'
        '<autoref identifier="demo.sub.tools.Box" optional><code>the box</code></autoref>; `LIMIT` is unknown.'
    )


def test_reports_links_are_mounted_and_repointed():
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    reports = _hook("reports")
    mounted = {p.relative_to(ROOT).as_posix() for p in reports.mounted(ROOT / "docs")}
    assert "reports/sweep_maia_seeds8/report.md" in mounted
    assert "reports/sweep_maia_seeds8/figure5_accuracy_vs_beta.png" in mounted  # linked by the report page
    assert "reports/maia/arena.md" in mounted  # linked by reports/maia/README.md, itself linked by a page
    assert "reports/maia/lc0_match.md" not in mounted  # linked by nothing: not in the site
    assert not [p for p in mounted if not p.endswith((".md", ".png", ".txt"))]
    md = "![f](../../reports/a/f.png) [r](../../reports/a/report.md#t) [o](../setup.md) [x](https://x.org/a)"
    assert reports.repoint(md, "results/page.md") == (
        "![f](../reports/a/f.png) [r](../reports/a/report.md#t) [o](../setup.md) [x](https://x.org/a)"
    )


def test_each_results_page_shows_its_reports_figures():
    """A results page whose report has figures opens with at least one of them, and links the report."""
    pages = sorted((ROOT / "docs" / "results").glob("*.md"))
    assert len(pages) >= 6
    for page in pages:
        text = page.read_text()
        if page.name == "index.md":
            continue
        answer = text.split("\n## ", 1)[0]  # before the first section: the answer
        linked = re.findall(r"\]\((\.\./\.\./reports/[^)#\s]+\.md)", answer)
        assert "**" in answer and linked, f"{page.name}: does not open with the answer and its report"
        report = (page.parent / linked[0]).resolve().parent  # the page's own report: the first linked
        shown = [(page.parent / m).resolve() for m in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", answer)]
        assert all(p.is_file() for p in shown), f"{page.name}: a figure that does not exist"
        if any(report.glob("*.png")):
            assert any(p.parent == report for p in shown), f"{page.name}: shows no figure of {report.name}"
