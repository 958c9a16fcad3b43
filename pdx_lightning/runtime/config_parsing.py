"""What the LightningCLI commands' config parser does with bad input: one line, and bounded reading.

* **One line per mistake.** jsonargparse reports a wrong value with the whole usage text (80-96 lines
  for ``pdx fit``) and a nested, multi-line explanation. :class:`OneLineErrorParser` raises
  :class:`ConfigParseError` instead, a one-line ``UserError`` naming the key, the expected type and
  the value (:func:`one_line`); ``pdx`` prints it as ``pdx fit: error: ...``, exit 2.
* **Bounded YAML.** :func:`install_bounded_yaml` puts :func:`pdx_lightning.files.safeio.check_yaml_text`
  (size, control characters, nesting, alias expansion) in front of jsonargparse's YAML loader, so
  every document it loads is checked before PyYAML constructs it: nested config files (``--model
  sub.yaml``), inline values on the command line, a checkpoint's stored hyperparameters. ``pdx``
  reads ``--config`` files through the same bounds before Lightning is even imported
  (:func:`pdx_lightning.runtime.moved_configs.check_config_files`).
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from jsonargparse import get_loader, set_loader
from lightning.pytorch.cli import LightningArgumentParser

from pdx_lightning.errors import UserError
from pdx_lightning.files.safeio import FileLimitError, check_yaml_text

__all__ = ["ConfigParseError", "OneLineErrorParser", "check_argv_values", "install_bounded_yaml", "one_line"]

MAX_SHOWN = 120  # characters of a value shown in a message (a value can be megabytes long)


class ConfigParseError(UserError, ValueError):
    """A config key or command-line flag of ``pdx fit|validate|pretrain`` with a value of the wrong type."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _type_names(types: list[str]) -> str:
    """``["<class 'int'>", "<class 'NoneType'>"]`` → ``int or null``."""
    names: list[str] = []
    for t in types:
        found = re.findall(r"<class '(?:[\w.]+\.)?(\w+)'>", t) or [t.strip()]
        names += [("null" if n == "NoneType" else n) for n in found]
    return " or ".join(dict.fromkeys(names))


def one_line(message: str) -> str:
    """jsonargparse's error ``message`` as one line: ``<key>: expected <type>, got <value>`` where it
    says so, else its lines joined (values cut to :data:`MAX_SHOWN` characters)."""
    keys = re.findall(r'Parser key "([^"]+)"', message)
    key = ".".join(k for i, k in enumerate(keys) if k not in keys[:i])
    expected = re.findall(r"Expected a (<class '[\w.]+'>)", message)
    expected += [
        f"one of {lit.replace(chr(39), '')}" for lit in re.findall(r"Expected a typing\.Literal\[(.+?)\]", message)
    ]
    got = re.search(r"(?:Got value|Given value): (.*)", message)
    if expected and got:
        return f"{key or 'value'}: expected {_type_names(expected)}, got {_short(got.group(1))}"
    if m := re.search(r"Unrecognized arguments: (.*)", message):
        return f"unrecognized arguments: {_short(m.group(1))} (see --help for the options)"
    if m := re.search(r'No action for key "([^"]+)"', message):
        return f"{m.group(1)}: no such key (see --help for the options)"
    return _short(message)


class OneLineErrorParser(LightningArgumentParser):
    """LightningCLI's parser, whose errors are one :class:`ConfigParseError` line, not the usage text.

    Only errors that would end the process become one: parsers jsonargparse makes with
    ``exit_on_error=False`` (trying one type of a union, say) raise as before."""

    def error(self, message: str, ex: Exception | None = None) -> NoReturn:
        if not self.exit_on_error:
            super().error(message, ex)
        cause: BaseException | None = ex
        while cause is not None:  # a config bound refused the document: its own message says it all
            if isinstance(cause, FileLimitError):
                raise ConfigParseError(str(cause)) from None
            cause = cause.__cause__ or cause.__context__
        raise ConfigParseError(one_line(message)) from None


def check_argv_values(argv: list[str]) -> None:
    """Every command-line value through the alias-expansion bound before jsonargparse reads it as YAML
    (some of its readers, a list-typed flag's, bypass the loader :func:`install_bounded_yaml` sets);
    a value that is not valid YAML is left to the parser."""
    for i, arg in enumerate(argv):
        flag, value = (argv[i - 1] if i and argv[i - 1].startswith("-") and not arg.startswith("-") else None), arg
        name, eq, inline = arg.partition("=")
        if arg.startswith("--") and eq:
            flag, value = name, inline
        if flag is not None and ("*" in value or "&" in value):  # only aliases expand
            check_yaml_text(value, f"the value of {flag}", syntax=False)


def _bounded(load: Any) -> Any:
    def bounded_yaml_load(stream: str, path: str = "") -> Any:
        check_yaml_text(stream, path or "a config value")
        return load(stream)

    bounded_yaml_load.pdx_bounded = True  # type: ignore[attr-defined]  # installed once
    return bounded_yaml_load


def install_bounded_yaml() -> None:
    """Check every YAML document jsonargparse loads with :func:`check_yaml_text` first (idempotent)."""
    import yaml  # noqa: PLC0415

    load = get_loader("yaml")
    if not getattr(load, "pdx_bounded", False):
        set_loader("yaml", _bounded(load), exceptions=(yaml.YAMLError, FileLimitError))
