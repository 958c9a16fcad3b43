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


def _section(words: tuple[str, ...], summary: str, text: str) -> str:
    name = "pdx " + " ".join(words) if words else "pdx"
    lines = [f"## `{name}`", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    lines += ["```text", text.rstrip().replace("```", "'''"), "```", ""]
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
            out.append(_section(words, summary, lightning[words]))
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
