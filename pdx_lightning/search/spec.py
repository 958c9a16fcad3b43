"""``search[nodes=64,...]:MODEL``: a network played through pdx's search, as players and engines spell it."""

from __future__ import annotations

import dataclasses

from pdx_lightning.search.settings import SearchSettingError, SearchSettings

PREFIX = "search["
BOOL_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}
# the spec's keys: SearchSettings' fields, and `reuse` (keep a game's tree between its moves)
KEYS = tuple(f.name for f in dataclasses.fields(SearchSettings)) + ("reuse",)


class SearchSpecError(SearchSettingError):
    """A ``search[...]:`` spec that cannot be read (says which part)."""


def is_search_spec(name: str) -> bool:
    return name.startswith(PREFIX)


def parse_search_spec(spec: str) -> tuple[SearchSettings, bool, str]:
    """``"search[nodes=16,cpuct=2]:base:maia-1900"`` -> (settings, reuse, ``"base:maia-1900"``)."""
    close = spec.find("]:")
    if not is_search_spec(spec) or close < 0:
        raise SearchSpecError(f"{spec!r}: expected search[key=value,...]:MODEL (keys: {', '.join(KEYS)})")
    model = spec[close + 2 :]
    if not model:
        raise SearchSpecError(f"{spec!r}: no model after ']:'")
    fields: dict[str, object] = {}
    reuse = True
    types = {f.name: f.type for f in dataclasses.fields(SearchSettings)}
    for part in filter(None, (p.strip() for p in spec[len(PREFIX) : close].split(","))):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not key:
            raise SearchSpecError(f"{spec!r}: bad field {part!r}; use key=value")
        if key not in KEYS:
            raise SearchSpecError(f"{spec!r}: unknown key {key!r} (keys: {', '.join(KEYS)})")
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
    return SearchSettings(**fields), reuse, model  # type: ignore[arg-type]
