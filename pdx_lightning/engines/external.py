"""Any UCI engine as a player: ``uci:<command line>`` or ``uci[key=value,...]:<command line>``.

Examples::

    uci:lc0 --weights=maia-1900.pb.gz --backend=eigen --threads=1        # go nodes 1 (default)
    uci[nodes=800]:lc0 --weights=maia-1900.pb.gz                          # 800-node search
    uci[movetime=100,Threads=1]:/usr/local/bin/someengine                 # 100 ms/move, a UCI option

Lower-case ``nodes``, ``depth``, ``movetime`` (ms) set the search limit (default ``nodes=1``: the
engine's policy argmax for Lc0-style engines, the searchless comparison this project is about);
any other key is sent as a UCI option (an integer where it parses as one). The command line is
split with shell rules (:func:`shlex.split`) and run without a shell.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import chess.engine

LIMIT_KEYS = ("nodes", "depth", "movetime")


class UciSpecError(ValueError):
    """A ``uci:`` player spec that cannot be turned into an engine."""


def is_uci_spec(name: str) -> bool:
    return name.startswith(("uci:", "uci["))


def parse_uci_spec(spec: str) -> tuple[list[str], chess.engine.Limit, dict]:
    """``"uci[nodes=1]:lc0 --weights=x.pb.gz"`` -> (argv, Limit, UCI options)."""
    if not is_uci_spec(spec):
        raise UciSpecError(f"{spec!r} is not a UCI player spec (uci:<command> or uci[k=v,...]:<command>)")
    fields, rest = {}, spec[4:]
    if spec.startswith("uci["):
        close = spec.find("]:")
        if close < 0:
            raise UciSpecError(f"{spec!r}: expected uci[key=value,...]:<command>")
        for part in filter(None, spec[4:close].split(",")):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise UciSpecError(f"{spec!r}: bad field {part!r}; use key=value")
            fields[key.strip()] = value.strip()
        rest = spec[close + 2 :]
    try:
        argv = shlex.split(rest)
    except ValueError as e:
        raise UciSpecError(f"{spec!r}: cannot split the command line ({e})") from None
    if not argv:
        raise UciSpecError(f"{spec!r}: no command after 'uci:'")
    exe = argv[0]
    if not (shutil.which(exe) or (Path(exe).is_file())):
        raise UciSpecError(f"{spec!r}: engine {exe!r} not found (not on PATH, no such file)")
    limit: dict[str, Any] = {}  # chess.engine.Limit's keywords: nodes, depth (int), time (float)
    options: dict[str, int | str] = {}
    for key, value in fields.items():
        if key in LIMIT_KEYS:
            try:
                n = int(value)
            except ValueError:
                raise UciSpecError(f"{spec!r}: {key} must be an integer, got {value!r}") from None
            if n < 1:
                raise UciSpecError(f"{spec!r}: {key} must be positive")
            limit[key] = n / 1000.0 if key == "movetime" else n
        else:
            options[key] = int(value) if value.lstrip("-").isdigit() else value
    if "movetime" in limit:
        limit["time"] = limit.pop("movetime")
    return argv, chess.engine.Limit(**(limit or {"nodes": 1})), options
