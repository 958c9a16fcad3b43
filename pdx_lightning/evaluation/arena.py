"""``pdx arena``: the command line of the batched searchless arena (options, their checks, the outputs).

``pdx arena --model A --model B [...] --openings FILE --games N`` plays a round robin (App. F): every
pair plays ``N`` games, ``N/2`` openings each played from both colours; optionally every model plays
``--base-games`` against ``--base``. All games run together (``evaluation.arena_loop``); at each ply
every network makes **one** batched forward pass over all games in which it is to move and plays the
argmax of its policy, or with ``--sample`` a draw from its play distribution μ ∝ π^{1/τ} (Eq. 6;
``--temperature adaptive`` for τ = H(own WDL), Eq. 5; ``1`` for raw π); ``sf:...`` and ``uci:...``
players are engines (``evaluation.arena_players``). Games end by the rules of chess (``--claim-draws``
by default), at ``--max-plies`` (512) or by ``--adjudicate`` (``evaluation.arena_game``).

Output: ``--pgn`` is written game by game as games finish (finish order; the ``Round`` tag gives the
schedule), so a running arena can be watched, and ``--resume`` continues a stopped one from it
(``evaluation.arena_resume``). The report (``evaluation.arena_report``; ``--json``,
``--md`` and printed) has the cutechess-cli / fastchess lines of every pair and the Elo ladder.
``--sprt elo0,elo1[,alpha,beta]`` (two players) stops scheduling games once the log-likelihood ratio
of the first player's Elo over the second's crosses a bound; games already in flight are played out
and counted, so the stop comes at the granularity of ``--concurrency``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time

import torch

from pdx_lightning import argtypes
from pdx_lightning.chesscore.opening_files import DEFAULT_SUITE, Opening, load_openings
from pdx_lightning.evaluation import elo, match
from pdx_lightning.evaluation.arena_game import MAX_PLIES, ArenaError, Game, GameRules, to_pgn
from pdx_lightning.evaluation.arena_loop import play_games, round_robin, shard_slots
from pdx_lightning.evaluation.arena_players import EnginePlayer, Player, StockfishPlayer, UciPlayer, make_player
from pdx_lightning.evaluation.arena_report import ArenaRun, SprtMonitor, arena_report
from pdx_lightning.evaluation.arena_resume import resumed_games
from pdx_lightning.files.atomicfile import atomic_write_text
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.runtime.jsonio import write_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    add_network_arguments(
        parser,
        "a model (base:small, .ckpt, .pt, random:tiny) or a Stockfish anchor "
        "(sf:nodes=1000, sf:elo=1500), or any UCI engine ('uci:lc0 --weights=F.pb.gz', default go "
        "nodes 1; 'uci[nodes=800]:CMD' for a search), or a network inside pdx's batched PUCT search with "
        "Lc0's semantics ('search[nodes=64]:base:maia-1900'; keys: nodes, cpuct, cpuct_base, cpuct_factor, "
        "fpu_value, policy_softmax_temp, two_fold_draws, sticky_endgames, cache_size, reuse, and value=MODEL: "
        "another network's W/D/L with this one's policy); repeat for every player (>= 2)",
        weights_help=None,
        micro_batch=False,
        device="cpu",
        device_help="torch device of the networks",
    )
    a("--label", action="append", help="display names, one per --model (default: the model strings)")
    a(
        "--openings",
        default=str(DEFAULT_SUITE),
        help="opening suite: EPD/FEN/UCI lines (.epd or any text "
        "file) or a PGN book (.pgn; each game's end position, with its moves as history); default: the "
        "bundled UHO-like suite",
    )
    a(
        "--games",
        type=argtypes.positive_int,
        default=20,
        help="games per pair, even: games/2 openings, each from both colours",
    )
    a("--base", help="the base model (label or model string; default the first)")
    a(
        "--base-games",
        type=argtypes.nonnegative_int,
        default=0,
        help="games of every model against --base (if more than --games)",
    )
    a("--sample", action="store_true", help="sample moves from mu ∝ pi^(1/tau) instead of the argmax")
    a(
        "--temperature",
        nargs="+",
        type=argtypes.finite_float(0, words=("adaptive",)),
        help="tau per model (one value for all): 'adaptive' (tau = H(WDL)) or a number (1 = raw pi); needs --sample",
    )
    a(
        "--max-plies",
        type=argtypes.positive_int,
        default=MAX_PLIES,
        help="ply cap counted from the standard start (draw)",
    )
    a(
        "--claim-draws",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="end at threefold repetition / 50-move rule (else only fivefold / 75-move)",
    )
    a(
        "--adjudicate",
        type=argtypes.nonnegative_int,
        default=0,
        metavar="K",
        help="adjudicate after K agreeing value-head plies (0: off)",
    )
    a("--adjudicate-draw", type=argtypes.probability, default=0.9, help="P(draw) both heads must exceed")
    a(
        "--adjudicate-win",
        type=argtypes.probability,
        default=0.97,
        help="expected score for one side both heads must exceed",
    )
    a(
        "--concurrency",
        type=argtypes.int_in(1, 1 << 20),
        default=1024,
        help="games in flight (the networks' batch size). Engines (sf:, uci:) search every move from "
        "ucinewgame, except with 1 (one game at a time): then each game keeps its engines' hash and "
        "search tree between its moves, as a GUI plays them",
    )
    a("--seed", type=argtypes.seed, default=0, help="opening order and sampling seed")
    a(
        "--threads",
        type=argtypes.int_in(1, 1024),
        help="torch CPU threads (default: torch's; use 1 on a shared, oversubscribed "
        "machine, where intra-op threads stall)",
    )
    a("--stockfish", help="Stockfish binary for sf: players")
    a(
        "--engine-procs",
        type=argtypes.int_in(1, 64),
        default=1,
        help="processes per sf:/uci: player, searching their games of a ply in parallel (one core each; "
        "game i is always played by process i %% N) (default: 1)",
    )
    a(
        "--elo-model",
        choices=elo.MODELS,
        default="bayeselo",
        help="draw model of the ladder's Elo fit: 'bayeselo' (Coulom's BayesElo, the paper's) or 'davidson' "
        "(Bradley-Terry with Davidson draws)",
    )
    a("--anchor", help="player fixed at --anchor-elo (default the base)")
    a(
        "--anchor-elo",
        type=argtypes.finite_float(),
        default=0.0,
        help="the anchor's rating on the ladder (e.g. 1500 for --anchor sf:elo=1500)",
    )
    a(
        "--prior-draws",
        type=argtypes.finite_float(0),
        default=2.0,
        help="virtual draws per pair that met (BayesElo's prior)",
    )
    a(
        "--sprt",
        metavar="ELO0,ELO1[,ALPHA,BETA]",
        help="two players only: sequential test of H0 'the first "
        "--model is ELO0 stronger than the second' vs H1 'ELO1 stronger' (logistic Elo; alpha, beta default "
        "0.05), pentanomial LLR over complete opening pairs; no new games once it decides. Games already in "
        "flight (up to --concurrency) are played out and counted: use a --concurrency well below --games "
        "for an early stop. --games is then the maximum",
    )
    a("--pgn", help="write every game as PGN here, as it finishes (finish order; Round is the schedule)")
    a(
        "--resume",
        action="store_true",
        help="continue a stopped arena from its --pgn file: its finished games are checked against "
        "this command's schedule and kept, the rest are played and appended (a missing file starts "
        "afresh; the same command line is needed). Games finish whole: with engine players, which gain "
        "nothing from more games in flight than --engine-procs, a small --concurrency keeps more of a "
        "stopped run",
    )
    a(
        "--shard",
        metavar="K/N",
        type=argtypes.shard,
        help="play only the K-th of N shards of the schedule: the opening pairs p (counted from 0) with "
        "p mod N = K-1, both games of each. Splits one match over N processes or machines, each with its "
        "own --pgn; then concatenate the shards' PGN files and run the same command without --shard, with "
        "--resume on the joined file, for the whole match's report (it plays whatever is missing). Argmax "
        "and fixed-node engine games are the same in any shard; needs --pgn; not with --sprt",
    )
    a("--json", help="write results as JSON here")
    a("--md", help="write the markdown report here (it is also printed)")
    a("--quiet", action="store_true", help="no progress bar")


def _resolve(name: str | None, labels: list[str], specs: list[str], what: str) -> str | None:
    if name is None:
        return None
    for lab, spec in zip(labels, specs):
        if name in (lab, spec):
            return lab
    raise ArenaError(f"{what} {name!r} is not one of the players {labels}")


def _labels(args: argparse.Namespace) -> list[str]:
    """One distinct display name per --model (a repeated name gets ``#k``)."""
    labels = args.label or list(args.model)
    if len(labels) != len(args.model):
        raise ArenaError(f"{len(labels)} --label for {len(args.model)} --model")
    return [lab if labels.count(lab) == 1 else f"{lab}#{labels[: k + 1].count(lab)}" for k, lab in enumerate(labels)]


def _temperatures(args: argparse.Namespace, n: int) -> list[str | float]:
    temps = args.temperature or ["1"]
    if args.temperature and not args.sample:
        raise ArenaError("--temperature sets the sampling temperature: it needs --sample")
    if len(temps) not in (1, n):
        raise ArenaError(f"--temperature takes one value or one per --model ({n}), got {len(temps)}")

    def tau(t: str) -> str | float:
        try:
            v = t if t == "adaptive" else float(t)
        except ValueError:
            v = -1.0
        if not isinstance(v, str) and not v >= 0:  # v is a str exactly when it is "adaptive"
            raise ArenaError(f"--temperature {t!r}: use 'adaptive' or a number >= 0")
        return v

    return [tau(t) for t in (temps * n if len(temps) == 1 else temps)]


def parse_sprt(text: str) -> match.SPRT:
    """``--sprt elo0,elo1[,alpha,beta]`` → :class:`match.SPRT`."""
    try:
        values = [float(v) for v in text.split(",")]
        if len(values) not in (2, 4):
            raise ValueError("expected 2 or 4 numbers")
        if not all(math.isfinite(v) for v in values):
            raise ValueError("the numbers must be finite")
        return match.SPRT(*values)
    except ValueError as e:
        raise ArenaError(
            f"--sprt {text!r}: use elo0,elo1[,alpha,beta] with elo1 > elo0 and alpha, beta in "
            f"(0, 0.5), e.g. --sprt 0,10 ({e})"
        ) from None


def run(args: argparse.Namespace) -> int:
    """``pdx arena``: check the options, play the schedule, write and print the report."""
    specs = args.model
    if len(specs) < 2:
        raise ArenaError("an arena needs at least two --model players")
    labels = _labels(args)
    temps = _temperatures(args, len(specs))
    sprt = parse_sprt(args.sprt) if getattr(args, "sprt", None) else None
    if sprt is not None and len(specs) != 2:
        raise ArenaError(f"--sprt tests one match: give exactly two --model players, got {len(specs)}")
    shard = getattr(args, "shard", None)
    if shard is not None and not args.pgn:
        raise ArenaError("--shard plays part of a match, to be joined with the other shards' games: give --pgn")
    if shard is not None and sprt is not None:
        raise ArenaError("--sprt stops on the whole match's games: it cannot run in a --shard")
    base = _resolve(args.base, labels, specs, "--base") or labels[0]
    anchor = _resolve(args.anchor, labels, specs, "--anchor") or base
    openings = load_openings(args.openings)
    random.Random(args.seed).shuffle(openings)
    sched = round_robin(
        len(specs), len(openings), args.games, labels.index(base) if args.base_games else None, args.base_games
    )
    if max(args.games, args.base_games) // 2 > len(openings) and not args.sample:
        raise ArenaError(
            f"{max(args.games, args.base_games) // 2} paired openings needed, the suite has "
            f"{len(openings)}: argmax games from a reused opening would be duplicates"
        )
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    monitor = SprtMonitor(sprt) if sprt is not None else None
    played = _resumed(args, labels, openings, sched)
    if monitor is not None:
        for g in played:
            monitor(g)
    only = shard_slots(len(sched), *shard) if shard is not None else None
    games, players, seconds = _play(args, labels, temps, openings, sched, monitor, played, only)
    report = arena_report(
        ArenaRun(
            games=games,
            labels=labels,
            specs=list(specs),
            base=base,
            anchor=anchor,
            seconds=seconds,
            resumed=frozenset(g.id for g in played),
            scheduled=len(sched),
            shard=shard,
            sampled=args.sample,
            openings=args.openings,
            config={k: v for k, v in vars(args).items() if not k.startswith("_")},
            elo_model=args.elo_model,
            anchor_elo=args.anchor_elo,
            prior_draws=args.prior_draws,
            sprt=monitor,
            stockfish={p.label: p.version for p in players if isinstance(p, StockfishPlayer)},
            uci_engines={p.label: p.version for p in players if isinstance(p, UciPlayer)},
            engine_search=_engine_search(players),
        )
    )
    if args.json:
        write_json(args.json, report, indent=1, quiet=True)
    md = report["markdown"]
    if args.md:
        atomic_write_text(args.md, md)
    print(md)
    return 0


def _engine_search(players: list[Player]) -> str | None:
    """What the engine players keep between a game's moves: "game" (hash and tree) or "move" (nothing);
    None without engines."""
    engines = [p for p in players if isinstance(p, EnginePlayer)]
    return None if not engines else "game" if engines[0].keep_search else "move"


def _resumed(
    args: argparse.Namespace, labels: list[str], openings: list[Opening], sched: list[tuple[int, int, int]]
) -> list[Game]:
    """``--resume``: the finished games of the ``--pgn`` file (none if it does not exist yet), the file
    rewritten with exactly those games (``arena_resume``)."""
    if not args.resume:
        return []
    if not args.pgn:
        raise ArenaError("--resume continues a stopped arena from its --pgn file: give --pgn")
    if not os.path.exists(args.pgn):
        return []
    rules = GameRules(args.max_plies, args.claim_draws, args.adjudicate, args.adjudicate_draw, args.adjudicate_win)
    played, texts = resumed_games(args.pgn, labels, openings, sched, rules)
    atomic_write_text(args.pgn, "".join(t + "\n\n" for t in texts))
    if not args.quiet:
        print(f"pdx arena: resuming: {len(played)} of {len(sched)} games in {args.pgn}", file=sys.stderr)
    return played


def _play(
    args: argparse.Namespace,
    labels: list[str],
    temps: list[str | float],
    openings: list[Opening],
    sched: list[tuple[int, int, int]],
    monitor: SprtMonitor | None,
    played: list[Game],
    only: frozenset[int] | None = None,
) -> tuple[list[Game], list[Player], float]:
    """Start the players, play the schedule (streaming ``--pgn``; after ``played``, the resumed games),
    close the players: the games, the players and the seconds of play."""
    players: list[Player] = []
    mode = "a" if args.resume else "w"
    pgn = open(args.pgn, mode, encoding="utf-8") if args.pgn else None  # noqa: SIM115  (closed below)

    def finished(g: Game) -> None:
        if pgn is not None:  # streamed: a running arena can be watched (and a killed one keeps its games)
            print(to_pgn(g, labels), file=pgn, end="\n\n", flush=True)
        if monitor is not None:
            monitor(g)

    try:
        for k, (spec, lab, t) in enumerate(zip(args.model, labels, temps)):
            players.append(
                make_player(
                    spec,
                    lab,
                    sample=args.sample,
                    temperature=t,
                    seed=args.seed + k,
                    device=args.device,
                    stockfish=args.stockfish,
                    engine_procs=args.engine_procs,
                )
            )
        for p in players:
            if isinstance(p, EnginePlayer):
                p.keep_search = args.concurrency == 1
        t0 = time.perf_counter()
        games = play_games(
            players,
            openings,
            sched,
            max_plies=args.max_plies,
            claim_draws=args.claim_draws,
            adjudicate=args.adjudicate,
            adjudicate_draw=args.adjudicate_draw,
            adjudicate_win=args.adjudicate_win,
            concurrency=args.concurrency,
            progress=not args.quiet,
            on_finish=finished,
            stop=monitor.stop if monitor is not None else None,
            played=played,
            only=only,
        )
        seconds = time.perf_counter() - t0
    finally:
        for p in players:
            p.close()
        if pgn is not None:
            pgn.close()
    return games, players, seconds
