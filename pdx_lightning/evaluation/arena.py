"""Batched searchless arena: many games at once, one forward pass per network per ply.

``pdx arena --model A --model B [...] --openings FILE --games N`` plays a round
robin (App. F): every pair plays ``N`` games, ``N/2`` openings each played
from both colours; optionally every model plays ``--base-games`` against
``--base``. All games run together; at each ply every network makes **one**
batched forward pass over all games in which it is to move (history from
``GameHistory`` ring buffers, planes by ``encode_rows``) and plays the
argmax of its policy, or with ``--sample`` a draw from its play distribution
μ ∝ π^{1/τ} (Eq. 6; ``--temperature adaptive`` for τ = H(own WDL), Eq. 5,
the adaptive arms' behaviour policy; ``1`` for raw π). ``sf:...`` players are
Stockfish anchors (``pdx_lightning.engines.stockfish``), one move at a time.

Game end, decided by ``chess.rules.game_end`` after every move: checkmate,
stalemate, insufficient material, 75-move rule, fivefold repetition; with
``--claim-draws`` (default, as cutechess-cli and the paper's reference
implementation) also the 50-move rule and threefold repetition of the
position on the board, claimed at once; ``--max-plies`` (512, counted from
the standard start, opening line included) scores a draw. Optional
adjudication when both players are networks: ``--adjudicate K`` ends a game
as a draw when the movers' value heads put P(draw) ≥ ``--adjudicate-draw``
for K consecutive plies (both heads agree for K ≥ 2), or as a win when they
give the same side an expected score ≥ ``--adjudicate-win`` for K plies.
Every game ends with a ``rules.GameResult``: PGN ``Result`` and ``Termination``
(``normal`` for the rules, ``adjudication`` for the ply cap and adjudication)
come from it, and its text (the specific rule) is the last move's comment.

Output: ``--pgn`` is written game by game as games finish (finish order; the ``Round`` tag gives the
schedule), so a running arena can be watched. The report has, per pair, the lines cutechess-cli and
fastchess print (``evaluation.match``): "Score of A vs B: W - L - D [score] N", the score Elo with its
95 % error, LOS and draw ratio, and the pentanomial record of the paired openings; then the ladder
(``evaluation.elo``). ``--sprt elo0,elo1[,alpha,beta]`` (two players) stops scheduling games once the
log-likelihood ratio of the first player's Elo over the second's crosses a bound; games already in
flight are played out and counted, so the stop comes at the granularity of ``--concurrency``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import chess
import chess.pgn
import numpy as np
import torch

from pdx_lightning.chess.encoding import N_PLANES, GameHistory, encode_rows
from pdx_lightning.chess.moves import index_to_move, legal_mask
from pdx_lightning.chess.openings import DEFAULT_SUITE, Opening, load_openings
from pdx_lightning.chess.policy import tempered_log_probs, wdl_entropy
from pdx_lightning.chess.rules import GameResult, Reason, game_end
from pdx_lightning.errors import UserError
from pdx_lightning.evaluation import elo, match
from pdx_lightning.nets.inference import evaluate
from pdx_lightning.runtime.progress import progress as progress_bar
from pdx_lightning.engines.external import is_uci_spec, parse_uci_spec
from pdx_lightning.engines.stockfish import RestartingEngine, is_stockfish_spec, open_engine, parse_stockfish_spec

MAX_PLIES = 512


class ArenaError(UserError, ValueError):
    """An arena configuration that cannot be played (says which option)."""


def game_outcome(board: chess.Board, legal: list[chess.Move], claim_draws: bool = True) -> tuple[str, str] | None:
    """``(PGN result, reason text)`` if the game is over by ``rules.game_end`` (no ply cap), else None.

    ``legal`` is the list of legal moves of ``board`` (generated once per ply).
    """
    end = game_end(board, legal=legal, claim_draws=claim_draws)
    return None if end is None else (end.pgn_result, end.text)


@dataclass(eq=False)
class Game:
    """One game in flight."""

    id: int
    white: int
    black: int
    opening: Opening
    round: str
    board: chess.Board = None
    hist: GameHistory = None
    legal: list = None
    moves: list = field(default_factory=list)
    end: GameResult | None = None
    streak_draw: int = 0   # consecutive plies the movers' value heads agreed on a draw,
    streak_white: int = 0  # on a White win,
    streak_black: int = 0  # on a Black win (adjudication)

    def __post_init__(self) -> None:
        self.board = self.opening.start()
        self.hist = GameHistory(self.board)
        self.legal = list(self.board.legal_moves)

    @property
    def result(self) -> str | None:
        """PGN result ("1-0", "0-1", "1/2-1/2"), None while the game goes on."""
        return self.end.pgn_result if self.end else None

    @property
    def reason(self) -> str | None:
        """Why the game ended, as text ("checkmate", "512-ply cap", ...), None while it goes on."""
        return self.end.text if self.end else None

    def rules_end(self, claim_draws: bool, max_plies: int | None = None) -> GameResult | None:
        """``rules.game_end`` at the current position (cached legal moves, ring-buffer repetitions)."""
        return game_end(self.board, legal=self.legal, repetitions=self.hist.repetitions(),
                        claim_draws=claim_draws, max_plies=max_plies)


class NetPlayer:
    """A network: one batched forward over all its games, argmax or sampled from μ."""

    def __init__(self, label: str, model: torch.nn.Module, sample: bool = False,
                 temperature: str | float = 1.0, seed: int = 0) -> None:
        self.label, self.model, self.sample = label, model, sample
        self.adaptive = temperature == "adaptive"
        self.tau = None if self.adaptive else float(temperature)
        self.gen = torch.Generator().manual_seed(seed)
        self.forwards = 0
        self._buf = np.empty((0, N_PLANES, 8, 8), dtype=np.float32)

    def choose(self, games: list[Game]) -> list[tuple[chess.Move, np.ndarray | None]]:
        B = len(games)
        if self._buf.shape[0] < B:
            self._buf = np.empty((max(B, 2 * self._buf.shape[0]), N_PLANES, 8, 8), dtype=np.float32)
        x = encode_rows([g.hist.row(g.board) for g in games], out=self._buf[:B])  # (B, 112, 8, 8)
        mask = legal_mask([g.board for g in games], [g.legal for g in games])
        logp, wdl = evaluate(self.model, torch.from_numpy(x), mask)  # (B, 4288), (B, 3)
        self.forwards += 1
        if self.sample:
            tau = wdl_entropy(wdl) if self.adaptive else self.tau
            probs = tempered_log_probs(logp, mask, tau).exp()
            pick = torch.multinomial(probs, 1, generator=self.gen).squeeze(1)
        else:
            pick = logp.argmax(dim=1)
        wdl = wdl.numpy()
        return [(index_to_move(int(k), g.board), wdl[i]) for i, (k, g) in enumerate(zip(pick.tolist(), games))]

    def close(self) -> None:
        pass


class StockfishPlayer:
    """Stockfish at a fixed limit; hash cleared at every switch of game (reproducible)."""

    def __init__(self, label: str, spec: str, path: str | None = None) -> None:
        self.label = label
        self.limit, options = parse_stockfish_spec(spec)
        self.engine = open_engine(path, threads=1, hash_mb=options.pop("Hash", 16), options=options)
        self.version = self.engine.id.get("name", "Stockfish")

    def choose(self, games: list[Game]) -> list[tuple[chess.Move, None]]:
        return [(self.engine.play(g.board, self.limit, game=g.id).move, None) for g in games]

    def close(self) -> None:
        self.engine.quit()


class UciPlayer:
    """Any UCI engine (``uci:<command>``, :mod:`pdx_lightning.engines.external`), e.g. the real Lc0 at
    ``go nodes 1``; it is sent each game's full move history (``position ... moves ...``)."""

    def __init__(self, label: str, spec: str) -> None:
        self.label = label
        argv, self.limit, options = parse_uci_spec(spec)
        self.engine = RestartingEngine(command=argv, threads=None, hash_mb=None, options=options)
        self.version = self.engine.id.get("name", argv[0])

    def choose(self, games: list[Game]) -> list[tuple[chess.Move, None]]:
        return [(self.engine.play(g.board, self.limit, game=g.id).move, None) for g in games]

    def close(self) -> None:
        self.engine.quit()


def make_player(spec: str, label: str | None = None, *, sample: bool = False, temperature: str | float = 1.0,
                seed: int = 0, device: str = "cpu", stockfish: str | None = None):
    """A player from a model name (``pdx_lightning.nets.load_model``), an ``sf:`` spec or a ``uci:`` spec."""
    label = label or spec
    if is_stockfish_spec(spec):
        return StockfishPlayer(label, spec, stockfish)
    if is_uci_spec(spec):
        return UciPlayer(label, spec)
    from pdx_lightning.nets import load_model  # noqa: PLC0415

    return NetPlayer(label, load_model(spec).to(device), sample, temperature, seed)


def round_robin(n_players: int, n_openings: int, games: int, base: int | None = None,
                base_games: int = 0) -> list[tuple[int, int, int]]:
    """``(white, black, opening)`` for every pair; each opening played from both colours."""
    sched = []
    for i in range(n_players):
        for j in range(i + 1, n_players):
            g = max(games, base_games) if base in (i, j) else games
            if g % 2:
                raise ArenaError(f"games per pair must be even (paired openings), got {g}")
            for k in range(g // 2):
                o = k % n_openings
                sched += [(i, j, o), (j, i, o)]
    return sched


def _apply(g: Game, move: chess.Move, wdl: np.ndarray | None, both_nets: bool, cfg: dict) -> None:
    if not move:  # net moves come from the legal mask, Stockfish's are checked by python-chess
        raise RuntimeError(f"game {g.id}: player returned no move in {g.board.fen()}")
    g.board.push(move)
    g.hist.push(g.board)
    g.moves.append(move)
    g.legal = list(g.board.legal_moves)
    over = g.rules_end(cfg["claim_draws"], cfg["max_plies"])
    if over is None and cfg["adjudicate"] and both_nets and wdl is not None:
        mover_white = not g.board.turn  # the side that just moved evaluated the position before its move
        s = float(wdl[0] + 0.5 * wdl[1])
        s_white = s if mover_white else 1.0 - s
        g.streak_draw = g.streak_draw + 1 if wdl[1] >= cfg["adj_draw"] else 0
        g.streak_white = g.streak_white + 1 if s_white >= cfg["adj_win"] else 0
        g.streak_black = g.streak_black + 1 if 1.0 - s_white >= cfg["adj_win"] else 0
        k = cfg["adjudicate"]
        if g.streak_draw >= k:
            over = GameResult(None, Reason.ADJUDICATION, "adjudication: value heads agree on a draw")
        elif g.streak_white >= k:
            over = GameResult(chess.WHITE, Reason.ADJUDICATION, "adjudication: value heads agree White wins")
        elif g.streak_black >= k:
            over = GameResult(chess.BLACK, Reason.ADJUDICATION, "adjudication: value heads agree Black wins")
    g.end = over


def play_games(players: list, openings: list[Opening], schedule: list[tuple[int, int, int]], *,
               max_plies: int = MAX_PLIES, claim_draws: bool = True, adjudicate: int = 0,
               adjudicate_draw: float = 0.9, adjudicate_win: float = 0.97, concurrency: int = 1024,
               progress: bool = True, on_finish: Callable[[Game], None] | None = None,
               stop: Callable[[], bool] | None = None) -> list[Game]:
    """Play ``schedule`` with up to ``concurrency`` games in flight; finished games in schedule order.

    ``on_finish(game)`` is called as each game ends (finish order). ``stop()`` is asked before a pair's
    first game (even schedule index) is started: True schedules nothing more (the second game of a
    started pair is always played, games in flight finish)."""
    cfg = dict(max_plies=max_plies, claim_draws=claim_draws, adjudicate=adjudicate, adj_draw=adjudicate_draw,
               adj_win=adjudicate_win)
    pending = deque(enumerate(schedule))
    active: list[Game] = []
    done: list[Game] = []
    bar = progress_bar(total=len(schedule), desc="arena", unit="game", leave=True, disable=not progress)
    try:
        while pending or active:
            while pending and len(active) < concurrency:
                if stop is not None and pending[0][0] % 2 == 0 and stop():
                    pending.clear()
                    break
                gid, (w, b, o) = pending.popleft()
                g = Game(gid, w, b, openings[o], f"{gid // 2 + 1}.{gid % 2 + 1}")
                g.end = g.rules_end(claim_draws)
                if g.end:
                    done.append(g)
                    if on_finish is not None:
                        on_finish(g)
                else:
                    active.append(g)
            by_player: dict[int, list[Game]] = {}
            for g in active:
                by_player.setdefault(g.white if g.board.turn else g.black, []).append(g)
            for p, gs in by_player.items():  # one batched call per player per ply
                for g, (move, wdl) in zip(gs, players[p].choose(gs)):
                    both = isinstance(players[g.white], NetPlayer) and isinstance(players[g.black], NetPlayer)
                    _apply(g, move, wdl, both, cfg)
            finished = [g for g in active if g.end]
            if finished:
                active = [g for g in active if not g.end]
                done += finished
                if on_finish is not None:
                    for g in finished:
                        on_finish(g)
                bar.update(len(finished))
    finally:
        bar.close()
    return sorted(done, key=lambda g: g.id)


def to_pgn(g: Game, labels: list[str], event: str = "pdx arena") -> chess.pgn.Game:
    """The game as PGN: FEN/SetUp from the opening position, the opening line in the game comment."""
    game = chess.pgn.Game()
    game.setup(g.opening.board.copy(stack=False))
    game.headers.update({"Event": event, "Site": "pdx_lightning", "Round": g.round,
                         "Date": datetime.date.today().strftime("%Y.%m.%d"),
                         "White": labels[g.white], "Black": labels[g.black], "Result": g.result,
                         "Termination": g.end.termination, "PlyCount": str(len(g.moves)),
                         "Opening": g.opening.id})
    if g.opening.line:
        game.comment = f"opening {g.opening.id}: {' '.join(g.opening.line)}"
    node = game
    for m in g.moves:
        node = node.add_variation(m)
    node.comment = g.reason
    return game


def tally(games: list[Game], n: int) -> np.ndarray:
    """``(n, n, 3)`` counts: [white, black] = (White wins, draws, Black wins)."""
    counts = np.zeros((n, n, 3), dtype=np.int64)
    col = {chess.WHITE: 0, None: 1, chess.BLACK: 2}
    for g in games:
        counts[g.white, g.black, col[g.end.winner]] += 1
    return counts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    a = parser.add_argument
    a("--model", action="append", required=True, help="a model (base:small, .ckpt, .pt, random:tiny) or a "
      "Stockfish anchor (sf:nodes=1000, sf:elo=1500), or any UCI engine ('uci:lc0 --weights=F.pb.gz', "
      "default go nodes 1; 'uci[nodes=800]:CMD' for a search); repeat for every player (>= 2)")
    a("--label", action="append", help="display names, one per --model (default: the model strings)")
    a("--openings", default=str(DEFAULT_SUITE), help="opening suite: EPD/FEN/UCI lines (.epd or any text "
      "file) or a PGN book (.pgn; each game's end position, with its moves as history); default: the "
      "bundled UHO-like suite")
    a("--games", type=int, default=20, help="games per pair, even: games/2 openings, each from both colours")
    a("--base", help="the base model (label or model string; default the first)")
    a("--base-games", type=int, default=0, help="games of every model against --base (if more than --games)")
    a("--sample", action="store_true", help="sample moves from mu ∝ pi^(1/tau) instead of the argmax")
    a("--temperature", nargs="+", help="tau per model (one value for all): 'adaptive' (tau = H(WDL)) or a "
      "number (1 = raw pi); needs --sample")
    a("--max-plies", type=int, default=MAX_PLIES, help="ply cap counted from the standard start (draw)")
    a("--claim-draws", action=argparse.BooleanOptionalAction, default=True,
      help="end at threefold repetition / 50-move rule (else only fivefold / 75-move)")
    a("--adjudicate", type=int, default=0, metavar="K", help="adjudicate after K agreeing value-head plies (0: off)")
    a("--adjudicate-draw", type=float, default=0.9, help="P(draw) both heads must exceed")
    a("--adjudicate-win", type=float, default=0.97, help="expected score for one side both heads must exceed")
    a("--concurrency", type=int, default=1024, help="games in flight (the networks' batch size)")
    a("--seed", type=int, default=0, help="opening order and sampling seed")
    a("--device", default="cpu", help="torch device of the networks")
    a("--threads", type=int, help="torch CPU threads (default: torch's; use 1 on a shared, oversubscribed "
      "machine, where intra-op threads stall)")
    a("--stockfish", help="Stockfish binary for sf: players")
    a("--elo-model", choices=elo.MODELS, default="bayeselo",
      help="draw model of the ladder's Elo fit: 'bayeselo' (Coulom's BayesElo, the paper's) or 'davidson' "
      "(Bradley-Terry with Davidson draws)")
    a("--anchor", help="player fixed at --anchor-elo (default the base)")
    a("--anchor-elo", type=float, default=0.0, help="the anchor's rating on the ladder (e.g. 1500 for "
      "--anchor sf:elo=1500)")
    a("--prior-draws", type=float, default=2.0, help="virtual draws per pair that met (BayesElo's prior)")
    a("--sprt", metavar="ELO0,ELO1[,ALPHA,BETA]", help="two players only: sequential test of H0 'the first "
      "--model is ELO0 stronger than the second' vs H1 'ELO1 stronger' (logistic Elo; alpha, beta default "
      "0.05), pentanomial LLR over complete opening pairs; no new games once it decides. Games already in "
      "flight (up to --concurrency) are played out and counted: use a --concurrency well below --games "
      "for an early stop. --games is then the maximum")
    a("--pgn", help="write every game as PGN here, as it finishes (finish order; Round is the schedule)")
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
        if v != "adaptive" and not v >= 0:
            raise ArenaError(f"--temperature {t!r}: use 'adaptive' or a number >= 0")
        return v

    return [tau(t) for t in (temps * n if len(temps) == 1 else temps)]


def parse_sprt(text: str) -> match.SPRT:
    """``--sprt elo0,elo1[,alpha,beta]`` → :class:`match.SPRT`."""
    try:
        values = [float(v) for v in text.split(",")]
        if len(values) not in (2, 4):
            raise ValueError("expected 2 or 4 numbers")
        return match.SPRT(*values)
    except ValueError as e:
        raise ArenaError(f"--sprt {text!r}: use elo0,elo1[,alpha,beta] with elo1 > elo0 and alpha, beta in "
                         f"(0, 0.5), e.g. --sprt 0,10 ({e})") from None


def _score(g: Game, player: int) -> float:
    return g.end.score_for(chess.WHITE if g.white == player else chess.BLACK)


def pair_scores(games: list[Game], a: int, b: int) -> list[float]:
    """A's scores (0, ½, 1, 1½, 2) over the complete opening pairs of A and B (games 2k and 2k+1 of the
    schedule: one opening, both colours)."""
    by_pair: dict[int, list[Game]] = {}
    for g in games:
        if {g.white, g.black} == {a, b} and g.end is not None:
            by_pair.setdefault(g.id // 2, []).append(g)
    return [sum(_score(g, a) for g in gs) for _, gs in sorted(by_pair.items()) if len(gs) == 2]


def match_summaries(games: list[Game], counts: np.ndarray, labels: list[str]) -> list[match.MatchSummary]:
    """One cutechess-style summary per pair that met (A = the earlier player), from the tallies."""
    out = []
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            w, d, lo = elo.pair_record(counts, i, j)
            if w + d + lo:
                out.append(match.summarize(labels[i], labels[j], w, lo, d, pair_scores(games, i, j)))
    return out


class SprtMonitor:
    """Tracks the SPRT of player 0 against player 1 as games finish (pentanomial, complete pairs)."""

    def __init__(self, test: match.SPRT) -> None:
        self.test = test
        self.halves: dict[int, float] = {}
        self.pairs: list[float] = []
        self.finished = 0
        self.decision: str | None = None
        self.llr = 0.0
        self.decided_after: int | None = None  # games finished when the bound was crossed
        self.llr_at_decision: float | None = None

    def __call__(self, g: Game) -> None:
        self.finished += 1
        k = g.id // 2
        if k in self.halves:
            self.pairs.append(self.halves.pop(k) + _score(g, 0))
            self.llr, decision = match.sprt_status(self.test, 0, 0, 0, self.pairs)
            if decision and self.decision is None:
                self.decision, self.decided_after, self.llr_at_decision = decision, self.finished, self.llr
        else:
            self.halves[k] = _score(g, 0)

    def stop(self) -> bool:
        return self.decision is not None


def run(args: argparse.Namespace) -> int:
    specs = args.model
    if len(specs) < 2:
        raise ArenaError("an arena needs at least two --model players")
    labels = args.label or list(specs)
    if len(labels) != len(specs):
        raise ArenaError(f"{len(labels)} --label for {len(specs)} --model")
    labels = [lab if labels.count(lab) == 1 else f"{lab}#{labels[:k + 1].count(lab)}" for k, lab in enumerate(labels)]
    temps = _temperatures(args, len(specs))
    sprt = parse_sprt(args.sprt) if getattr(args, "sprt", None) else None
    if sprt is not None and len(specs) != 2:
        raise ArenaError(f"--sprt tests one match: give exactly two --model players, got {len(specs)}")
    base = _resolve(args.base, labels, specs, "--base") or labels[0]
    anchor = _resolve(args.anchor, labels, specs, "--anchor") or base
    openings = load_openings(args.openings)
    random.Random(args.seed).shuffle(openings)
    bi = labels.index(base)
    sched = round_robin(len(specs), len(openings), args.games, bi if args.base_games else None, args.base_games)
    if max(args.games, args.base_games) // 2 > len(openings) and not args.sample:
        raise ArenaError(f"{max(args.games, args.base_games) // 2} paired openings needed, the suite has "
                         f"{len(openings)}: argmax games from a reused opening would be duplicates")
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    players = []
    monitor = SprtMonitor(sprt) if sprt is not None else None
    pgn = open(args.pgn, "w", encoding="utf-8") if args.pgn else None  # noqa: SIM115  (closed below)

    def finished(g: Game) -> None:
        if pgn is not None:  # streamed: a running arena can be watched (and a killed one keeps its games)
            print(to_pgn(g, labels), file=pgn, end="\n\n", flush=True)
        if monitor is not None:
            monitor(g)

    try:
        for k, (spec, lab, t) in enumerate(zip(specs, labels, temps)):
            players.append(make_player(spec, lab, sample=args.sample, temperature=t, seed=args.seed + k,
                                       device=args.device, stockfish=args.stockfish))
        t0 = time.perf_counter()
        games = play_games(players, openings, sched, max_plies=args.max_plies, claim_draws=args.claim_draws,
                           adjudicate=args.adjudicate, adjudicate_draw=args.adjudicate_draw,
                           adjudicate_win=args.adjudicate_win, concurrency=args.concurrency,
                           progress=not args.quiet, on_finish=finished,
                           stop=monitor.stop if monitor is not None else None)
        seconds = time.perf_counter() - t0
    finally:
        for p in players:
            p.close()
        if pgn is not None:
            pgn.close()
    counts = tally(games, len(specs))
    report = summarize(games, counts, labels, specs, base, anchor, args, seconds,
                       sprt=monitor, scheduled=len(sched))
    # the UCI_Elo scale moved between Stockfish versions: keep the version with the ratings
    report["stockfish"] = {p.label: p.version for p in players if isinstance(p, StockfishPlayer)}
    report["uci_engines"] = {p.label: p.version for p in players if isinstance(p, UciPlayer)}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    md = report["markdown"]
    if args.md:
        Path(args.md).write_text(md)
    print(md)
    return 0


def sprt_lines(monitor: SprtMonitor, played: int, scheduled: int) -> list[str]:
    """The SPRT's result as text (cutechess-cli's "SPRT: llr ..." line, then how the stop went)."""
    t = monitor.test
    lo, hi = t.bounds
    llr, final = match.sprt_status(t, 0, 0, 0, monitor.pairs)
    verdicts = {"H1": "H1 was accepted", "H0": "H0 was accepted", None: "no decision"}
    verdict = verdicts[monitor.decision or final]
    lines = [f"SPRT: llr {llr:.3g} ({100 * llr / hi if llr >= 0 else 100 * llr / -lo:.1f}%), "
             f"lbound {lo:.3g}, ubound {hi:.3g} - {verdict} (elo0 {t.elo0:g}, elo1 {t.elo1:g}, alpha "
             f"{t.alpha:g}, beta {t.beta:g}; pentanomial, {len(monitor.pairs)} complete pairs)"]
    if monitor.decided_after is not None:
        lines.append(f"SPRT stop: the bound was crossed after {monitor.decided_after} finished games (llr "
                     f"{monitor.llr_at_decision:.3g}); no game "
                     f"was started after that, the {played - monitor.decided_after} games in flight were "
                     f"played out and are counted ({played} of {scheduled} scheduled games played; games "
                     f"run in batches of up to --concurrency)")
    else:
        lines.append(f"SPRT: no bound crossed in {played} games (the --games maximum)")
    return lines


def summarize(games: list[Game], counts: np.ndarray, labels: list[str], specs: list[str], base: str,
              anchor: str, args: argparse.Namespace, seconds: float, *, sprt: SprtMonitor | None = None,
              scheduled: int | None = None) -> dict:
    """The JSON report (with its markdown rendering under ``"markdown"``)."""
    plies = sum(len(g.moves) for g in games)
    mode = "sampled" if args.sample else "argmax"
    head = (f"## Arena: {len(games)} games, {len(labels)} players, {mode}; openings {Path(args.openings).name}; "
            f"{seconds:.1f} s ({len(games) / max(seconds, 1e-9):.2f} games/s, {plies / max(seconds, 1e-9):.0f} "
            f"plies/s)\n\n")
    reasons = Counter(g.reason for g in games)
    head += "Terminations: " + ", ".join(f"{k} {v}" for k, v in reasons.most_common())
    report = {"config": {k: v for k, v in vars(args).items() if not k.startswith("_")},
              "players": [{"label": lab, "model": s} for lab, s in zip(labels, specs)],
              "base": base, "seconds": seconds, "games_per_s": len(games) / max(seconds, 1e-9),
              "plies": plies, "terminations": dict(reasons), "counts": counts.tolist(),
              "games": [{"white": labels[g.white], "black": labels[g.black], "opening": g.opening.id,
                         "round": g.round, "result": g.result, "reason": g.reason, "plies": len(g.moves)}
                        for g in games],
              "head_to_head": elo.head_to_head(labels, counts, base),
              "los_direct": elo.matrix_dict(labels, elo.direct_los_matrix(counts))}
    matches = match_summaries(games, counts, labels)
    report["matches"] = [_match_dict(m) for m in matches]
    block = [line for m in matches for line in (*m.lines(), "")]
    if sprt is not None:
        sprt_text = sprt_lines(sprt, len(games), scheduled if scheduled is not None else len(games))
        llr, final = match.sprt_status(sprt.test, 0, 0, 0, sprt.pairs)
        t = sprt.test
        report["sprt"] = {"elo0": t.elo0, "elo1": t.elo1, "alpha": t.alpha, "beta": t.beta,
                          "bounds": list(t.bounds), "llr": llr, "decision": sprt.decision or final,
                          "llr_at_decision": sprt.llr_at_decision,
                          "pairs": len(sprt.pairs), "decided_after_games": sprt.decided_after,
                          "games_played": len(games), "games_scheduled": scheduled, "text": sprt_text}
        block += sprt_text + [""]
    head += ("\n\n### Matches (cutechess-cli / fastchess style)\n\nPer pair, A's record: the score Elo of "
             "this pair's games alone (± 95 %), LOS from wins and losses, and the pentanomial record of "
             "its opening pairs (A's pair score 0, ½, 1, 1½, 2).\n\n```\n" + "\n".join(block).rstrip()
             + "\n```")
    try:
        fit = elo.fit_elo(labels, counts, model=args.elo_model, anchor=anchor, anchor_rating=args.anchor_elo,
                          prior_draws=args.prior_draws)
        report["elo"] = fit.as_dict()
        md = head + "\n\n" + elo.ladder_markdown(fit, counts, base)
    except elo.EloFitError as e:
        report["elo"] = {"error": str(e)}
        md = head + f"\n\nElo fit failed: {e}\n"
    report["markdown"] = md
    return report


def _match_dict(m: match.MatchSummary) -> dict:
    """A pair's summary as JSON (None for infinite Elo at a 0 % / 100 % score)."""
    def num(x):
        return None if x is None or not np.isfinite(x) else float(x)

    return {"a": m.a, "b": m.b, "wins": m.wins, "losses": m.losses, "draws": m.draws, "games": m.games,
            "score": m.score, "elo": num(m.elo), "elo_error": num(m.elo_error), "los": m.los,
            "draw_ratio": m.draw_ratio, "pentanomial": list(m.pentanomial) if m.pentanomial else None,
            "ptnml_elo": num(m.ptnml_elo), "ptnml_error": num(m.ptnml_error), "lines": m.lines()}
