"""``search[nodes=64,...]:MODEL``: a network played through pdx's search, as players and engines spell it.

Keys: :class:`~pdx_lightning.search.settings.SearchSettings`' fields (Lc0's options), ``reuse`` (keep a
game's tree between its moves) and ``value=MODEL`` (evaluate the leaves with another network's W/D/L,
MODEL's policy still guiding the search: ``search[nodes=64,value=base:maia-1900]:cell.ckpt`` is the
cell's policy with the base's value).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pdx_lightning.search.settings import SearchSettingError, SearchSettings

PREFIX = "search["
BOOL_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
KEYS = tuple(f.name for f in dataclasses.fields(SearchSettings)) + ("reuse", "value")


class SearchSpecError(SearchSettingError):
    """A ``search[...]:`` spec that cannot be read (says which part)."""


@dataclass(frozen=True)
class SearchSpec:
    """A read ``search[...]:MODEL`` spec."""

    settings: SearchSettings
    reuse: bool  # keep a game's tree (and network cache) between its moves
    model: str  # the network searched (its policy, and its W/D/L unless value_model is set)
    value_model: str | None = None  # the network whose W/D/L evaluates the leaves, if another


def is_search_spec(name: str) -> bool:
    return name.startswith(PREFIX)


def parse_search_options(text: str, where: str = "--search") -> SearchSpec:
    """``"nodes=16,cpuct=2"`` (a spec's bracket alone, as ``pdx uci --search`` takes it) -> a spec whose
    model is ``"_"``; errors name ``where``."""
    try:
        return parse_search_spec(f"{PREFIX}{text}]:_")
    except SearchSettingError as e:
        raise SearchSpecError(f"{where}: {' '.join(str(e).split())}") from None


def parse_search_spec(spec: str) -> SearchSpec:
    """``"search[nodes=16,cpuct=2]:base:maia-1900"`` -> its :class:`SearchSpec`."""
    close = spec.find("]:")
    if not is_search_spec(spec) or close < 0:
        raise SearchSpecError(f"{spec!r}: expected search[key=value,...]:MODEL (keys: {', '.join(KEYS)})")
    model = spec[close + 2 :]
    if not model:
        raise SearchSpecError(f"{spec!r}: no model after ']:'")
    fields: dict[str, object] = {}
    reuse = True
    value_model: str | None = None
    types = {f.name: f.type for f in dataclasses.fields(SearchSettings)}
    for part in filter(None, (p.strip() for p in spec[len(PREFIX) : close].split(","))):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not key:
            raise SearchSpecError(f"{spec!r}: bad field {part!r}; use key=value")
        if key not in KEYS:
            raise SearchSpecError(f"{spec!r}: unknown key {key!r} (keys: {', '.join(KEYS)})")
        if key == "value":
            if not value:
                raise SearchSpecError(f"{spec!r}: value= needs a model (value=base:maia-1900, value=FILE)")
            value_model = value
            continue
        kind = "bool" if key == "reuse" else types[key]
        try:
            if kind == "bool":
                if value.lower() not in BOOL_WORDS:
                    raise ValueError(value)
                parsed: object = BOOL_WORDS[value.lower()]
            elif kind == "int":
                parsed = int(value)
            else:
                parsed = float(value)
        except ValueError:
            raise SearchSpecError(f"{spec!r}: {key}={value!r} is not a valid {kind}") from None
        if key == "reuse":
            reuse = bool(parsed)
        else:
            fields[key] = parsed
    return SearchSpec(SearchSettings(**fields), reuse, model, value_model)  # type: ignore[arg-type]
