"""A report's matches as one declarative list, played by ``pdx matches run|status|save LIST.yaml``.

A list names its players once and each match by the records it leaves::

    records: .                 # where each match's records go, relative to this file (default: its folder)
    work: runs/matches/searched    # where games stream while they are played (default: runs/matches/<stem>)
    vars: {LC0: .venv/bin/lc0}     # ${LC0} in model strings and options; the environment's value wins
    arena:                     # pdx arena's options for every match (long names)
      openings: data/openings_uho_600.epd
      games: 1000
    players:                   # the label of each player in games and reports, and its model string
      searched: runs/searched/version_0/checkpoints/last.ckpt
      base: base:maia-1900
      lc0_base: "uci:${LC0} --weights=maia-1900.pb.gz --backend=eigen --threads=1"
    matches:
      pass_searched: {players: [searched, base]}
      n16_searched: {players: [searched, base], nodes: 16}       # each network inside pdx's search
      n64_searched: {players: [searched, base], nodes: 64, arena: {concurrency: 256}}
      lc0_n16: {players: [lc0_base, searched], nodes: 16}        # a uci: engine: `go nodes 16`
      odd: {players: {base: base:maia-1900, hot: "search[nodes=16,policy_softmax_temp=2]:base:maia-1900"}}

A match's ``players`` name players of the list, or map its own labels to model strings. ``nodes: N``
plays every network inside pdx's search with N nodes a move (``search[nodes=N]:``) and every ``uci:``
engine with ``go nodes N`` (``uci[nodes=N]:``); ``sf:`` and ``search[...]`` players are played as written.

``pdx matches run LIST`` plays every match whose ``NAME.json`` is not in the records folder yet, one after
the other, each as ``pdx arena`` with ``--pgn WORK/NAME.pgn --resume --json --md`` (the arena checks every
option as it would on the command line); when a match ends its games are kept as ``NAME.pgn.xz`` beside
its records. Everything is resumable: a killed run continues from the games in its PGN stream, a match
whose records exist is not played again. ``--shard K/N`` plays shard K of every unfinished match (``pdx
arena --shard``: the opening pairs p with p mod N = K - 1) into ``WORK/NAME.shard-K-of-N.pgn``, so N
processes or machines share a list; a run without ``--shard`` then joins the shards' games (each game once)
and plays whatever is missing. ``save`` writes each unfinished match's games so far as
``partial/NAME.pgn.xz`` into the records folder, to commit and resume on another machine (a run there
starts from it). ``status`` says what is done, what is under way (games played) and what is left.
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import json
import lzma
import os
import string
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import chess.pgn
import yaml

from pdx_lightning import argtypes
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation import arena
from pdx_lightning.evaluation.arena_loop import in_shard
from pdx_lightning.evaluation.arena_resume import round_slot
from pdx_lightning.files.atomicfile import atomic_write, atomic_write_text
from pdx_lightning.files.safeio import (
    SUITE_BYTES,
    FileLimitError,
    compression_of,
    human,
    open_decompressed,
    read_config_text,
)
from pdx_lightning.runtime.preflight import check_tool_outputs

__all__ = [
    "Match",
    "MatchList",
    "MatchListError",
    "add_arguments",
    "arena_args",
    "join_games",
    "load_match_list",
    "record_differences",
    "run",
]

ACTIONS = ("run", "status", "save")
# arena options the list sets itself for every match (who plays, where the games and records go)
SET_BY_LIST = ("model", "label", "pgn", "json", "md", "resume", "shard")
# players `nodes:` leaves as written: Stockfish anchors, and specs that say their own search
AS_WRITTEN = ("sf:", "uci[", "search[")


class MatchListError(UserError, ValueError):
    """A match list that cannot be played as written (says the file, the match and what is wrong)."""


@dataclass(frozen=True)
class Match:
    """One match of a list: its name (the records' file stem), its players' labels and model strings,
    and its own arena options (the list's, updated by the match's)."""

    name: str
    labels: tuple[str, ...]
    models: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatchList:
    """A parsed list: where records and games go, and its matches in the order written."""

    path: Path
    records: Path
    work: Path
    matches: tuple[Match, ...]

    def select(self, patterns: Iterable[str] | None) -> list[Match]:
        """The matches whose names match one of ``patterns`` (shell globs; None or empty: all)."""
        patterns = list(patterns or [])
        if not patterns:
            return list(self.matches)
        chosen = [m for m in self.matches if any(fnmatch.fnmatchcase(m.name, p) for p in patterns)]
        if not chosen:
            names = ", ".join(m.name for m in self.matches)
            raise MatchListError(f"{self.path}: --only {' '.join(patterns)} names no match of the list ({names})")
        return chosen

    def pgn(self, match: Match, shard: tuple[int, int] | None = None) -> Path:
        """The PGN stream ``match``'s games go to while it is played (a shard's own file)."""
        suffix = f".shard-{shard[0]}-of-{shard[1]}" if shard else ""
        return self.work / f"{match.name}{suffix}.pgn"

    def record(self, match: Match, ext: str) -> Path:
        """``match``'s record ``NAME.<ext>`` in the records folder (json, md, pgn.xz)."""
        return self.records / f"{match.name}.{ext}"

    def partial(self, match: Match) -> Path:
        """Where ``save`` keeps an unfinished match's games: ``partial/NAME.pgn.xz`` in the records folder."""
        return self.records / "partial" / f"{match.name}.pgn.xz"


def _mapping(value: object, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise MatchListError(f"{where} must be a mapping of names to values, got {type(value).__name__}")
    return value


def _node_spec(model: str, nodes: int | None) -> str:
    """``model`` searching ``nodes`` per move: a network inside pdx's search, a ``uci:`` engine told ``go
    nodes``; ``sf:`` players and specs that say their own search are played as written."""
    if nodes is None or model.startswith(AS_WRITTEN):
        return model
    if model.startswith("uci:"):
        return f"uci[nodes={nodes}]:{model[4:]}"
    return f"search[nodes={nodes}]:{model}"


def _expander(values: dict[str, Any]):
    """``${NAME}`` in a string replaced by the list's ``vars`` (the environment's value wins)."""
    table = {k: os.environ.get(k, str(v)) for k, v in values.items()}

    def expand(text: Any, what: str) -> Any:
        if not isinstance(text, str):
            return text
        try:
            return string.Template(text).substitute(table)
        except KeyError as e:
            raise MatchListError(f"{what}: ${{{e.args[0]}}} is not one of the list's vars") from None
        except ValueError as e:
            raise MatchListError(f"{what}: {e}") from None

    return expand


def load_match_list(path: str | os.PathLike, work: str | os.PathLike | None = None) -> MatchList:
    """Read and check ``path`` (see the module's docstring for its keys); ``work`` overrides the list's."""
    path = Path(path)
    if not path.is_file():
        raise MatchListError(f"{path}: no such match list")
    try:
        doc = yaml.safe_load(read_config_text(path))
    except yaml.YAMLError as e:
        raise MatchListError(f"{path}: not YAML ({' '.join(str(e).split())})") from None
    top = _mapping(doc, f"{path}")
    unknown = sorted(set(top) - {"records", "work", "vars", "arena", "players", "matches"})
    if unknown:
        raise MatchListError(f"{path}: unknown key {unknown[0]!r} (records, work, vars, arena, players, matches)")
    expand = _expander(_mapping(top.get("vars"), f"{path}: vars"))
    defaults = _mapping(top.get("arena"), f"{path}: arena")
    players = _players(_mapping(top.get("players"), f"{path}: players"), str(path), expand)
    matches = _mapping(top.get("matches"), f"{path}: matches")
    if not matches:
        raise MatchListError(f"{path}: the list has no matches")
    parsed = []
    for name, written in matches.items():
        where = f"{path}: match {name!r}"
        if not name or "/" in name or name.startswith("."):
            raise MatchListError(f"{where}: a match's name is its records' file stem: no '/', not hidden")
        spec = _mapping(written, where)
        extra = sorted(set(spec) - {"players", "nodes", "arena"})
        if extra:
            raise MatchListError(f"{where}: unknown key {extra[0]!r} (players, nodes, arena)")
        own = spec.get("players")
        if isinstance(own, dict):  # this match's own labels and model strings
            cast = _players(own, where, expand)
        elif isinstance(own, list):
            missing = [p for p in own if p not in players]
            if missing:
                raise MatchListError(
                    f"{where}: player {missing[0]!r} is not in the list's players ({', '.join(players)})"
                )
            if len(set(own)) != len(own):
                raise MatchListError(f"{where}: a player plays itself ({', '.join(own)})")
            cast = {p: players[p] for p in own}
        else:
            cast = {}
        if len(cast) < 2:
            raise MatchListError(f"{where}: 'players' must name at least two players (a list, or label: model)")
        nodes = spec.get("nodes")
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1):
            raise MatchListError(f"{where}: nodes must be a positive integer, got {nodes!r}")
        options = {**defaults, **_mapping(spec.get("arena"), f"{where}: arena")}
        taken = sorted(k for k in options if k.replace("-", "_") in SET_BY_LIST)
        if taken:
            raise MatchListError(f"{where}: arena option {taken[0]!r} is set by the list itself")
        options = {k: expand(v, f"{where}: arena option {k!r}") for k, v in options.items()}
        models = tuple(_node_spec(m, nodes) for m in cast.values())
        parsed.append(Match(name, tuple(cast), models, options))
    base = path.parent
    records = base / str(top.get("records", "."))
    work_dir = Path(work) if work is not None else Path(str(top.get("work", f"runs/matches/{path.stem}")))
    ml = MatchList(path, records, work_dir, tuple(parsed))
    for m in ml.matches:
        arena_args(ml, m)  # every match's options checked now, before any match is played
    return ml


def _players(table: dict[str, Any], where: str, expand) -> dict[str, str]:
    """Labels to model strings, each a non-empty string with its ``${VARS}`` expanded."""
    out = {}
    for label, model in table.items():
        if not isinstance(model, str) or not model.strip():
            raise MatchListError(f"{where}: player {label!r} needs a model string, got {model!r}")
        out[label] = expand(model, f"{where}: player {label!r}")
    return out


class _ArenaOptions(argparse.ArgumentParser):
    """pdx arena's parser, whose errors name the list and the match instead of exiting."""

    def __init__(self, where: str) -> None:
        super().__init__(prog="pdx arena", add_help=False)
        self.where = where
        arena.add_arguments(self)

    def error(self, message: str) -> NoReturn:
        raise MatchListError(f"{self.where}: {' '.join(message.split())}")


def _option_argv(key: str, value: Any) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if value is True:
        return [flag]
    if value is False:
        return [f"--no-{flag[2:]}"] if key.replace("-", "_") == "claim_draws" else []
    if isinstance(value, list):
        return [flag, *map(str, value)]
    return [flag, str(value)]


def arena_args(
    ml: MatchList, match: Match, shard: tuple[int, int] | None = None, *, quiet: bool = False
) -> argparse.Namespace:
    """The ``pdx arena`` arguments that play ``match`` (its shard ``K/N``): checked by the arena's parser."""
    argv: list[str] = []
    for model, label in zip(match.models, match.labels):
        argv += ["--model", model, "--label", label]
    for key, value in match.options.items():
        argv += _option_argv(key, value)
    argv += ["--pgn", str(ml.pgn(match, shard)), "--resume"]
    if shard is None:
        argv += ["--json", str(ml.record(match, "json")), "--md", str(ml.record(match, "md"))]
    else:
        argv += ["--shard", f"{shard[0]}/{shard[1]}"]
    if quiet and "--quiet" not in argv:
        argv.append("--quiet")
    return _ArenaOptions(f"{ml.path}: match {match.name!r}").parse_args(argv)


# what a finished record's arena command must share with the list (where games and records went may
# differ; an option the record predates, None there, is not compared)
PLAYED_AS = (
    "model", "label", "openings", "games", "base", "base_games", "sample", "temperature", "max_plies",
    "claim_draws", "adjudicate", "adjudicate_draw", "adjudicate_win", "concurrency", "seed", "threads",
    "engine_procs", "elo_model", "anchor", "anchor_elo", "prior_draws",
)  # fmt: skip


def record_differences(ml: MatchList, match: Match) -> list[str]:
    """How ``match``'s finished record (``NAME.json``) was played otherwise than the list says: one
    ``option: recorded != listed`` line per difference (empty: the list is what was played)."""
    config = json.loads(ml.record(match, "json").read_text()).get("config", {})
    listed = vars(arena_args(ml, match))
    return [
        f"{key}: {config[key]!r} != {listed[key]!r}"
        for key in PLAYED_AS
        if config.get(key) is not None and config[key] != listed.get(key)
    ]


def _games(text: str) -> Iterator[chess.pgn.Game]:
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        yield game


def join_games(texts: Iterable[str], shard: tuple[int, int] | None = None) -> dict[int, str]:
    """The finished games of PGN ``texts`` (an arena's streams, shards, saved partials) by schedule slot,
    each once, only those of ``shard`` ``(K, N)`` if given; a game without a result (cut short) is left
    out. Two different games of one round are an error."""
    seen: dict[int, str] = {}
    for text in texts:
        for game in _games(text):
            slot = round_slot(game.headers.get("Round", ""))
            if slot is None:
                raise MatchListError(f"Round {game.headers.get('Round')!r} is not an arena round (k.1 or k.2)")
            if game.headers.get("Result", "*") == "*" or (shard is not None and not in_shard(slot, *shard)):
                continue
            pgn = str(game)
            if seen.setdefault(slot, pgn) != pgn:
                raise MatchListError(f"round {game.headers['Round']}: two different games in the saved files")
    return seen


def _sources(ml: MatchList, match: Match) -> list[Path]:
    """Every file holding games of ``match``: its stream, its shards' streams, its saved partial."""
    found = [ml.pgn(match)] + sorted(ml.work.glob(f"{match.name}.shard-*-of-*.pgn"))
    return [p for p in found if p.is_file()] + [p for p in [ml.partial(match)] if p.is_file()]


def _read(path: Path) -> str:
    """A PGN stream or saved partial, read under safeio's bounds (size, ratio, a corrupt stream: one line)."""
    kind = compression_of(path)
    if kind is None:
        size, limit = path.stat().st_size, SUITE_BYTES.value()
        if size > limit:
            raise FileLimitError(path, f"a PGN file of {human(size)}", SUITE_BYTES.shown(limit), SUITE_BYTES.override())
        return path.read_text(encoding="utf-8", errors="replace")
    with open_decompressed(path, kind) as f:
        return f.read().decode("utf-8", errors="replace")


def _write_pgn(path: Path, games: dict[int, str], xz: bool = False) -> None:
    text = "".join(games[s] + "\n\n" for s in sorted(games))
    path.parent.mkdir(parents=True, exist_ok=True)
    if xz:
        with atomic_write(path) as f:
            f.write(lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    else:
        atomic_write_text(path, text)


def _played(ml: MatchList, match: Match, shard: tuple[int, int] | None = None) -> dict[int, str]:
    return join_games((_read(p) for p in _sources(ml, match)), shard)


def _done(ml: MatchList, match: Match) -> bool:
    return ml.record(match, "json").is_file()


def _run(ml: MatchList, matches: list[Match], shard: tuple[int, int] | None, quiet: bool) -> int:
    for i, match in enumerate(matches, 1):
        head = f"pdx matches: [{i}/{len(matches)}] {match.name}"
        if _done(ml, match):
            print(f"{head}: done ({ml.record(match, 'json')})", file=sys.stderr)
            continue
        args = arena_args(ml, match, shard, quiet=quiet)
        stream = ml.pgn(match, shard)
        games = _played(ml, match, shard)  # the stream, the shards, a saved partial: each game once
        if games:
            _write_pgn(stream, games)
        stream.parent.mkdir(parents=True, exist_ok=True)
        ml.records.mkdir(parents=True, exist_ok=True)
        check_tool_outputs(arena.__name__, args)  # an unwritable records folder fails before the games
        print(f"{head}: {len(games)} games so far, playing {' vs '.join(match.labels)}", file=sys.stderr)
        rc = arena.run(args)
        if rc:
            return rc
        if shard is not None:
            print(f"{head}: shard {shard[0]}/{shard[1]} done; run without --shard to join", file=sys.stderr)
            continue
        _write_pgn(ml.record(match, "pgn.xz"), _played(ml, match), xz=True)
        ml.partial(match).unlink(missing_ok=True)
    return 0


def _status(ml: MatchList, matches: list[Match]) -> int:
    for match in matches:
        if _done(ml, match):
            differs = record_differences(ml, match)
            state = f"done, but played otherwise ({'; '.join(differs)})" if differs else "done"
        else:
            n = len(_played(ml, match))
            state = f"{n} games played" if n else "not started"
        print(f"{match.name}: {state}: {' vs '.join(match.models)}")
    return 0


def _save(ml: MatchList, matches: list[Match]) -> int:
    for match in matches:
        if _done(ml, match):
            continue
        games = _played(ml, match)
        if games:
            _write_pgn(ml.partial(match), games, xz=True)
            print(f"{match.name}: {len(games)} games saved to {ml.partial(match)}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a(
        "action",
        choices=ACTIONS,
        help="run: play every unfinished match (resumable); status: what is done, under way, left; "
        "save: each unfinished match's games so far as partial/NAME.pgn.xz beside its records",
    )
    a("list", help="the match list (YAML: records, work, arena, players, matches)")
    a("--only", action="append", metavar="NAME", help="only the matches with these names (shell globs; repeatable)")
    a(
        "--shard",
        metavar="K/N",
        type=argtypes.shard,
        help="run: play shard K of N of every unfinished match (pdx arena --shard) into its own PGN stream; "
        "a run without --shard joins the shards' games and writes the records",
    )
    a("--work", help="where the games stream while played (default: the list's 'work', else runs/matches/<stem>)")
    a("--quiet", action="store_true", help="no progress bar in the matches")


def run(args: argparse.Namespace) -> int:
    """``pdx matches``: run, report on or save the matches of a list."""
    ml = load_match_list(args.list, args.work)
    matches = ml.select(args.only)
    if args.action != "run" and args.shard is not None:
        raise MatchListError("--shard goes with 'run'")
    if args.action == "run":
        return _run(ml, matches, args.shard, args.quiet)
    if args.action == "status":
        return _status(ml, matches)
    return _save(ml, matches)
