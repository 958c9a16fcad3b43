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
    cdn = "https://cdn.example.org/mathjax/tex-mml-chtml.js"
    assert _problems(f'<script src="{cdn}"></script>', tmp_path) == [f"script from outside the site: {cdn}"]
    assert _problems('<script src="../assets/javascripts/bundle.js"></script>', tmp_path) == []
    fonts = "https://fonts.example.org/css?family=Roboto"
    assert _problems(f'<link rel="stylesheet" href="{fonts}">', tmp_path) == [
        f"stylesheet from outside the site: {fonts}"
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


def _nav_pages(entries) -> dict[str, str]:
    """``{page: title}`` of mkdocs.yml's nav (a page without a title there maps to "")."""
    out: dict[str, str] = {}
    for entry in entries:
        if isinstance(entry, str):
            out[entry] = ""
            continue
        for title, value in entry.items():
            out.update(_nav_pages(value) if isinstance(value, list) else {value: title})
    return out


def test_every_report_page_is_in_the_navigation_with_a_title():
    """Every report page the site mounts is reachable from the navigation (Results > Reports), under a
    title of its own: not the file's name ("Arena16") nor the runs directory ``pdx report`` was given."""
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    yaml = pytest.importorskip("yaml")
    reports = _hook("reports")
    nav = _nav_pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    pages = {p.relative_to(ROOT).as_posix() for p in reports.mounted(ROOT / "docs") if p.suffix == ".md"}
    assert len(pages) >= 15
    assert sorted(pages - set(nav)) == [], "report pages outside the navigation (mkdocs.yml: Results > Reports)"
    assert all(nav[p].startswith("Report: ") for p in pages), {p: nav[p] for p in pages}


def test_each_results_page_shows_its_reports_figures():
    """Every results page opens with its answer, a figure and its report's link; a page whose report has
    figures shows at least one of them."""
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
        assert shown, f"{page.name}: its answer shows no figure"
        if any(report.glob("*.png")):
            assert any(p.parent == report for p in shown), f"{page.name}: shows no figure of {report.name}"


def test_every_results_figure_has_a_caption():
    """Each figure of the results pages and of the fine-tuning page's learning curves is followed by its
    caption: a paragraph of its own (not the next figure, a heading, a table or a list)."""
    pages = [*sorted((ROOT / "docs" / "results").glob("*.md")), ROOT / "docs" / "fine-tuning.md"]
    figures = 0
    for page in pages:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            if not re.match(r"!\[[^\]]*\]\([^)\s]+\.png\)\s*$", line):
                continue
            figures += 1
            after = next((x for x in lines[n + 1 :] if x.strip()), "")
            assert after and not after.startswith(("!", "#", "|", "- ", "```")), f"{page.name}:{n + 1}: no caption"
    assert figures >= 13


def test_site_check_finds_broken_emphasis(tmp_path):
    md = pytest.importorskip("markdown", reason="the docs extra (Python-Markdown) is not installed")
    stray = md.markdown("**β* = 1e-2 for every arm, and p* on real** then more.")
    assert [p.split(":")[0] for p in _problems(stray, tmp_path)] == ["broken emphasis", "broken emphasis"]
    escaped = md.markdown("**β\\* = 1e-2 for every arm, and p\\* on real** then more; p* plain.")
    assert _problems(escaped, tmp_path) == []
    assert _problems("<p><em>fine</em> and <strong>bold</strong></p>", tmp_path) == []
    assert _problems("<p><code>**kwargs</code></p>", tmp_path) == []


def test_site_check_finds_lists_nested_under_four_spaces():
    two = "- **Accuracy.** Gains:\n  - entropy erodes;\n  - none sharpens.\n- next\n"
    assert site_check.check_markdown(two) == [
        "collapsed list: line 2 nests an item by 2 spaces (4 needed)",
        "collapsed list: line 3 nests an item by 2 spaces (4 needed)",
    ]
    four = "- **Accuracy.** Gains:\n    - entropy erodes;\n    - none sharpens.\n- next\n"
    assert site_check.check_markdown(four) == []
    # code blocks and display math are not Markdown
    assert site_check.check_markdown("```text\n  - not a list\n```\n$$\nL = a\n  + b\n$$\n") == []


def test_site_check_finds_a_wrapped_line_read_as_a_list():
    """A sentence wrapped before ``+``, ``-`` or ``1.``: inside a list item the rest becomes a sub-item."""
    wrapped = "- **FLOPs**: a step runs base(s), ema(s) and online forward\n    + backward.\n- next\n"
    assert site_check.check_markdown(wrapped) == [
        "wrapped line read as a list: line 2 starts a list item mid-sentence "
        "(the line before ends ' runs base(s), ema(s) and online forward')"
    ]
    assert len(site_check.check_markdown("Costs, in order,\n1. the base\n")) == 1
    # a list after a sentence's end, a colon, a bold lead-in, a table or a blank line is a list
    for fine in (
        "- **BT4**: 100 TFLOP at peak; so\n  ~0.25 s in practice.\n    - the chess core adds 2.5 ms.\n",
        "Gains:\n- entropy erodes\n",
        "- **Accuracy.**\n    - entropy erodes\n",
        "| a | b |\n- item\n",
        "A sentence ends\n\n- item\n",
        "```text\nonline forward\n+ backward\n```\n",
    ):
        assert site_check.check_markdown(fine) == [], fine


def test_site_check_finds_tables_wider_than_the_column(tmp_path):
    def table(cols: int, cell: str) -> str:
        head = "".join(f"<th>h{i}</th>" for i in range(cols))
        row = "".join(f"<td>{cell}</td>" for _ in range(cols))
        return f"<table><thead><tr>{head}</tr></thead><tbody><tr>{row}</tr></tbody></table>"

    # long cells wrap at spaces and after hyphens: only the longest word counts
    assert _problems(table(6, "a long sentence that wraps in its cell 1000-1200"), tmp_path) == []
    site = tmp_path / "site"
    page = site / "p" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(table(2, "x"))  # a table on a page without the site's stylesheet: the model does not hold
    assert site_check.check_site(site) == [
        "p/index.html: table wider than the column: the page does not load stylesheets/extra.css"
    ]
    page.write_text(f'<link href="../{site_check.STYLE}">' + table(2, "x"))
    assert site_check.check_site(site) == []
    wide = _problems(table(14, "+0.570123456789"), tmp_path)
    assert len(wide) == 1 and wide[0].startswith("table wider than the column: at least")
    assert site_check.table_min_px([[("x" * 10, False)]]) == pytest.approx(
        10 * site_check.CHAR_EM * site_check.TABLE_FONT_PX + site_check.CELL_PAD_PX
    )


def test_site_check_finds_raw_roles_of_any_kind_also_in_code_blocks(tmp_path):
    assert _problems("<pre><code>Default: :paramref:`~a.Trainer.max_steps`.</code></pre>", tmp_path) == [
        "raw role in a code block: Default: :paramref:`~a.Trainer.max_steps`."
    ]
    assert _problems("<p>See :paramref:<code>x</code>.</p>", tmp_path) == ["raw role: See :paramref:"]
    assert _problems("<p>Write <code>:paramref:`x`</code> in docstrings.</p>", tmp_path) == []
    assert _problems("<p>a dict {'a': 1} and 10:30:</p>", tmp_path) == []


def test_site_check_finds_duplicated_figures(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "fig.png").write_bytes(b"\x89PNG same")
        (tmp_path / d / "index.html").write_text('<p><img src="fig.png"></p>')
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "index.html").write_text('<p><img src="../a/fig.png"></p>')  # the same file: fine
    assert site_check.duplicated_figures(tmp_path.resolve()) == [
        "b/index.html: duplicated figure: b/fig.png has the same bytes as a/fig.png (shown on a/index.html)"
    ]
    (tmp_path / "b" / "fig.png").write_bytes(b"\x89PNG other")
    assert site_check.duplicated_figures(tmp_path.resolve()) == []


def test_reports_show_a_duplicated_figure_once_and_say_whose_it_is():
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    reports = _hook("reports")
    dupes = reports.aliases(reports.mounted(ROOT / "docs"))
    assert dupes["reports/sweep_maia_seeds8/figure6_real_by_rating.png"] == (
        "reports/sweep_maia_seeds/figure6_real_by_rating.png"
    )
    assert not [k for k in dupes if "seeds8_" in k]  # the eight-seed page's own figures are its own
    md = reports.same_figure("![F6](figure6_real_by_rating.png)", "reports/sweep_maia_seeds8/report.md", dupes)
    assert md.startswith("![F6](../sweep_maia_seeds/figure6_real_by_rating.png)\n\n*The same figure as ")
    titled = reports.retitle("# pdx report: /tmp/x/runs/sweep_maia\nBody", "reports/sweep_maia_seeds8/report.md", "R8")
    assert titled.startswith("# R8\n\n`pdx report` of `reports/sweep_maia_seeds8/`.\nBody")


def test_math_is_mathml_at_build_time():
    pytest.importorskip("latex2mathml", reason="the docs extra (latex2mathml) is not installed")
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    math = _hook("math")
    html = (
        '<p>with <span class="arithmatex">\\(\\rho = \\min(1, \\pi_\\theta / \\mu)\\)</span></p>\n'
        '<div class="arithmatex">\\[L = -\\operatorname{mean}(A &lt; 1)\\]</div>'
    )
    out = math.render(html)
    assert "\\(" not in out and "\\[" not in out
    assert out.count("<math") == 2 and 'display="block"' in out and 'display="inline"' in out
    assert "<mi>&#x003C1;</mi>" in out and "&#x0003C;" in out  # ρ, and the unescaped < as an operator
    assert site_check.check_html(out, Path("x.html"), Path(".")) == []


def test_cli_reference_puts_pdx_options_first_and_folds_lightnings():
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    cli_reference = _hook("cli_reference")
    help_text = (
        "usage: pdx fit [-c CONFIG] [--trainer CONFIG]\n\nRuns the full optimization routine.\n\n"
        "options:\n  -c CONFIG, --config CONFIG\n                        Path to a config.\n\n"
        "Customize every aspect of training via flags:\n  --trainer CONFIG      Path.\n"
        "  --trainer.max_steps MAX_STEPS\n"
        "                        Stop. Default: :paramref:`~a.b.Trainer.max_steps`.\n\n"
        "<class 'pdx_lightning.rl.module.PDXModule'>:\n  --model CONFIG        Path.\n"
        "  --model.base BASE     the base.\n\n"
        "what one step computes (``PDXSettings``): the\nexploration term:\n"
        "  --model.algorithm CONFIG\n                        Path.\n\n"
        "Runs the full optimization routine:\n  --ckpt_path CKPT_PATH\n                        Resume.\n"
    )
    md = cli_reference.lightning_section(("fit",), "fine-tune", help_text)
    order = [
        md.index(s) for s in ("### `--model.*`", "### `--model.algorithm.*`", "### Configuration", "### Checkpoint")
    ]
    assert order == sorted(order)
    assert "What one step computes (`PDXSettings`): the exploration term." in md
    trainer = md.index("??? note \"Lightning's Trainer flags (`--trainer.*`, 1 options)")
    assert trainer > order[-1] and "    --trainer.max_steps MAX_STEPS" not in md[:trainer]
    assert ":paramref:" not in md and "Default: `max_steps`." in md


def test_cli_reference_writes_rest_markup_as_markdown():
    """Help text from reST docstrings (pdx's and Lightning's): literals, roles (also wrapped by ``--help``)
    and links in Markdown's notation, in the code blocks and in a group's description."""
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    cli_reference = _hook("cli_reference")
    help_text = (
        "usage: pdx fit [-c CONFIG]\n\noptions:\n  -c CONFIG, --config CONFIG\n                        Path.\n\n"
        "Customize every aspect of training via flags:\n  --trainer.barebones {true,false}\n"
        "                        Off: :paramref:`~a.Trainer.enable_\n                        checkpointing`,\n"
        "                        :class:`datetime.timedelta`. See the `Notes on Semantics\n"
        "                        <https://example.org/n.html#id3>`_. Default: ``'32-true'``.\n\n"
        "<class 'pdx_lightning.rl.module.PDXModule'>:\n  --model.base BASE     a ``.pt`` network or\n"
        "                        ``random:<preset>``.\n\n"
        "the games (``SelfPlayConfig``):\n  --model.selfplay CONFIG\n                        Path.\n"
    )
    md = cli_reference.lightning_section(("fit",), "fine-tune", help_text)
    assert re.findall(r"(?<!`)``(?!`)", md) == []  # no reST literal (the code blocks' fences are ```)
    assert ":paramref:" not in md and ":class:" not in md and "`_" not in md
    assert "--model.base BASE     a `.pt` network or\n                        `random:<preset>`." in md
    assert "Off: `enable_checkpointing`,\n" in md and "`datetime.timedelta`. See the Notes on Semantics\n" in md
    assert "<https://example.org/n.html#id3>. Default: `'32-true'`." in md
    assert "The games (`SelfPlayConfig`)." in md


def test_site_check_finds_rest_markup_in_code_blocks(tmp_path):
    assert _problems("<pre><code>a ``.pt`` network</code></pre>", tmp_path) == [
        "raw reST markup in a code block: a ``.pt`` network"
    ]
    link = "<pre><code>see the `Notes\n  &lt;https://x.org/n&gt;`_.</code></pre>"
    assert _problems(link, tmp_path) == ["raw reST markup in a code block: see the `Notes <https://x.org/n>`_."]
    fence = "<pre><code>```text\nhelp with `code`\n```</code></pre>"
    assert _problems(fence, tmp_path) == [] and _problems("<p><code>``x``</code></p>", tmp_path) == []


@pytest.mark.slow  # every command's --help, the four LightningCLI ones in subprocesses (~1 min of CPU)
def test_the_generated_cli_reference_has_no_rest_markup_left():
    """The real page as the build writes it: no reST literal, role or link is left in it."""
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    md = _hook("cli_reference").generate()
    assert "## `pdx fit`" in md and "--trainer.max_steps" in md
    assert re.findall(r"``[^`\n]+``", md) == []
    assert re.findall(r":[a-z]+:`", md) == [] and re.findall(r">`__?", md) == []
    assert "`base:small`" in md  # pdx's own help: ``base:small`` in PDXModule's docstring
