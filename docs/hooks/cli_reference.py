"""mkdocs hook: the command-line reference (docs/reference/cli.md) generated from the real parsers.

The page holds the marker ``<!-- pdx-cli-reference -->``; at build time it is replaced by the
``--help`` text of ``pdx`` and of every subcommand:

* the argparse tools (``pdx eval puzzles``, ``pdx arena``, ...) are formatted in-process from
  :func:`pdx_lightning.cli.build_parser`, the parser ``pdx`` itself runs;
* the LightningCLI commands (``pdx fit``, ``pdx validate``, ``pdx pretrain``, ``pdx pretrain
  validate``) print their help from their own parser, so they run as ``python -m
  pdx_lightning.cli <command> --help`` subprocesses (in parallel, one torch thread each).

A command whose help cannot be produced, or a usage line that does not start with ``pdx``, fails the
build, so the page never goes stale silently.
Help is wrapped at 100 columns (``COLUMNS``) so the page does not depend on the terminal.

A LightningCLI command's help is mostly Lightning's (its Trainer flags alone are ~300 lines), so its
section is regrouped for scanning (:func:`lightning_section`): pdx's own options first (the module's
``--model.*``, then the config, seed and checkpoint options), and Lightning's groups (``--trainer.*``,
``--data``, ``--optimizer``, ``--lr_scheduler``) and the full usage line folded, with a link to
Lightning's Trainer documentation.

The help texts come from docstrings written in reST (pdx's and Lightning's); the page writes their
markup as the Markdown notation pdx's own help uses (:func:`plain_markup`): an inline literal
````x```` as ```x```, a Sphinx role (``:paramref:`~...max_steps```, ``:class:`x.Y```) as the name it
shows (```max_steps```), a link ```text <url>`_`` as ``text <url>``. The help stays in code blocks,
aligned as ``--help`` prints it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mkdocs.exceptions import PluginError

MARKER = "<!-- pdx-cli-reference -->"
PAGE = "reference/cli.md"
COLUMNS = "100"
ROOT = Path(__file__).resolve().parents[2]
TRAINER_DOCS = "https://lightning.ai/docs/pytorch/stable/common/trainer.html#trainer-flags"
# a Sphinx role with its target: :paramref:`~a.b.c`, :class:`title <a.b.C>`, :py:meth:`x`
ROLE = re.compile(r":(?:[a-z]+:)?[a-z][a-z_]*:`(?:[^`<]*?\s*<)?~?([^`>]+)>?`")
# a reST inline literal ``x`` (not across a blank line), and a reST link `text <url>`_ (or __)
LITERAL = re.compile(r"``(?=\S)((?:(?!\n\s*\n)[^`])+?)``")
LINK = re.compile(r"`([^`<]+?)(\s*)<([^`>\s]+)>`__?")
LIGHTNING_COMMANDS = (("fit",), ("validate",), ("pretrain",), ("pretrain", "validate"))

_cache: str | None = None


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps no public handle on a parser's subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": COLUMNS, "PDX_THREADS": "1", "OMP_NUM_THREADS": "1", "PDX_PROGRESS": "0"}


def _lightning_help(words: tuple[str, ...]) -> str:
    # LightningCLI names the program after sys.argv[0] (``cli.py`` under ``-m``): the name typed instead
    prog = "pdx pretrain" if words[0] == "pretrain" else "pdx"
    code = f"import sys; sys.argv[0] = {prog!r}; from pdx_lightning.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, *words, "--help"]
    r = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    if r.returncode != 0:
        raise PluginError(f"cli_reference: `pdx {' '.join(words)} --help` exited {r.returncode}:\n{r.stderr[-2000:]}")
    return r.stdout


def plain_markup(text: str) -> str:
    """reST markup of help text in Markdown's notation: ````x```` -> ```x```; a Sphinx role as the name it
    shows, ``:paramref:`~lightning...Trainer.max_steps``` -> ```max_steps``` (a target that ``--help``
    wrapped is joined); ```text <url>`_`` -> ``text <url>``."""

    def role(m: re.Match) -> str:
        target = re.sub(r"\s+", "", m[1])
        return f"`{target.rsplit('.', 1)[-1] if '~' in m[0] else target}`"

    text = LINK.sub(lambda m: f"{m[1]}{m[2] or ' '}<{m[3]}>", text)
    return LITERAL.sub(lambda m: f"`{m[1]}`", ROLE.sub(role, text))


def _code(text: str, indent: str = "") -> list[str]:
    body = text.rstrip().replace("```", "'''").splitlines()
    return [f"{indent}```text", *(f"{indent}{line}" if line else "" for line in body), f"{indent}```"]


def _heading(words: tuple[str, ...], summary: str) -> list[str]:
    name = "pdx " + " ".join(words) if words else "pdx"
    lines = [f"## `{name}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    return lines


def _section(words: tuple[str, ...], summary: str, text: str) -> str:
    return "\n".join([*_heading(words, summary), *_code(plain_markup(text)), ""])


def help_groups(text: str) -> tuple[str, list[tuple[str, str]]]:
    """A LightningCLI help as (its usage and description, [(group header, the group's option lines)]):
    a group's header is the run of unindented lines after the usage block that ends with ``:``."""
    head, _, rest = text.partition("\n\n")
    groups: list[tuple[str, list[str]]] = []
    intro: list[str] = []
    pending: list[str] = []  # unindented lines of a header not yet closed by its ':'
    for line in rest.splitlines():
        if line and not line[0].isspace():
            pending.append(line.strip())
            if line.rstrip().endswith(":"):
                groups.append((" ".join(pending)[:-1], []))
                pending = []
            continue
        if pending:  # unindented lines that were no header: the command's description
            intro += pending
            pending = []
        if groups:
            groups[-1][1].append(line)
    intro += pending
    usage = head + ("\n\n" + "\n".join(intro) if intro else "")
    return usage, [(h, "\n".join(lines).strip("\n")) for h, lines in groups]


def _first_option(body: str) -> str:
    m = re.search(r"^  (--[\w.]+)", body, re.M)
    return m[1] if m else ""


def lightning_section(words: tuple[str, ...], summary: str, text: str) -> str:
    """A LightningCLI command's help, pdx's options first, Lightning's folded (see the module doc)."""
    usage, groups = help_groups(plain_markup(text))
    ours, config, lightning = [], [], []
    for header, body in groups:
        first = _first_option(body)
        if first.startswith("--model"):
            cls = re.search(r"pdx_lightning\.[\w.]+", header)
            about = f"`{cls[0]}`" if cls else header
            ours.append((f"`{first}.*`", about[0].upper() + about[1:] + ".", body))
        elif header == "options":
            config.append(("Configuration and seed", "", body))
        elif "--ckpt_path" in body:
            config.append(("Checkpoint", "", body))
        else:
            lightning.append((header, body))
    lines = _heading(words, summary)
    for title, about, body in ours + config:
        lines += [f"### {title}", "", *([about, ""] if about else []), *_code(body), ""]
    trainer = [b for h, b in lightning if "--trainer" in b]
    other = [(h, b) for h, b in lightning if "--trainer" not in b]
    if trainer:
        n = sum(len(re.findall(r"^  --trainer\.(?!\S*\.help\b)", b, re.M)) for b in trainer)
        lines += [
            f"??? note \"Lightning's Trainer flags (`--trainer.*`, {n} options): "
            f"see [Lightning's Trainer documentation]({TRAINER_DOCS})\"",
            "",
        ]
        for body in trainer:
            lines += [*_code(body, "    "), ""]
    if other:
        names = ", ".join(f"`--{g}`" for g in re.findall(r"^  --(\w+) ", "\n".join(b for _, b in other), re.M))
        lines += [f'??? note "Lightning\'s other groups ({names})"', ""]
        for header, body in other:
            lines += [f"    {header}:", "", *_code(body, "    "), ""]
    lines += ['??? note "The full usage line"', "", *_code(usage, "    "), ""]
    return "\n".join(lines)


def generate() -> str:
    """The markdown of every command's ``--help``, in the order ``pdx --help`` lists them."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        sys.path.insert(0, str(ROOT))
        from pdx_lightning.cli import LIGHTNING, TOOLS, build_parser  # noqa: PLC0415  (after ROOT is on sys.path)

        parser = build_parser()
        with ThreadPoolExecutor(max_workers=len(LIGHTNING_COMMANDS)) as pool:
            lightning = dict(zip(LIGHTNING_COMMANDS, pool.map(_lightning_help, LIGHTNING_COMMANDS)))
        out = [_section((), "", parser.format_help())]
        top = _subparsers(parser)
        for words in LIGHTNING_COMMANDS:
            summary = LIGHTNING.get(words[0], "") if len(words) == 1 else ""
            out.append(lightning_section(words, summary, lightning[words]))
        missing = []
        for name, (_module, summary) in TOOLS.items():
            words = tuple(name.split())
            sub = top.get(words[0])
            if sub is not None and len(words) == 2:
                sub = _subparsers(sub).get(words[1])
            if sub is None:
                missing.append(name)
                continue
            out.append(_section(words, summary, sub.format_help()))
        if missing:
            raise PluginError(f"cli_reference: `pdx` has no parser for {missing} (a module failed to import)")
        text = "\n".join(out)
        if wrong := [u for u in re.findall(r"^usage: (.*)$", text, re.M) if not u.startswith("pdx ")]:
            raise PluginError(f"cli_reference: usage lines not naming `pdx`: {wrong}")
        return text
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def on_page_markdown(markdown: str, page, config, files) -> str:
    global _cache  # noqa: PLW0603  (mkdocs hooks are module functions: the page's cache is module state)
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"cli_reference: {PAGE} lost its marker {MARKER}")
    if _cache is None:
        _cache = generate()
    return markdown.replace(MARKER, _cache)


def on_pre_build(config) -> None:
    """Every build generates afresh (under ``mkdocs serve`` a changed flag shows up on reload)."""
    global _cache  # noqa: PLW0603  (see on_page_markdown)
    _cache = None
