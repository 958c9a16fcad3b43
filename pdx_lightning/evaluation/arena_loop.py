"""The arena's schedule and game loop: many games at once, one batched call per player per ply.

:func:`round_robin` pairs every two players on paired openings (App. F: each opening played from
both colours); :func:`play_games` keeps up to ``concurrency`` games in flight and, at each ply, asks
every player for its moves in all the games in which it is to move at once
(:class:`~pdx_lightning.evaluation.arena_players.Player`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Sequence

from pdx_lightning.chesscore.opening_files import Opening
from pdx_lightning.evaluation.arena_game import MAX_PLIES, ArenaError, Game, GameRules
from pdx_lightning.evaluation.arena_players import Player
from pdx_lightning.runtime.progress import note
from pdx_lightning.runtime.progress import progress as progress_bar


def round_robin(
    n_players: int, n_openings: int, games: int, base: int | None = None, base_games: int = 0
) -> list[tuple[int, int, int]]:
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


def in_shard(slot: int, k: int, n: int) -> bool:
    """Whether schedule index ``slot`` is in shard ``k`` of ``n`` (1-based): its opening pair ``p`` (games
    ``2p`` and ``2p + 1``) has ``p mod n == k - 1``. The shards partition a schedule, each keeping its pairs
    whole."""
    if not 1 <= k <= n:
        raise ArenaError(f"shard {k}/{n}: K must be in [1, N]")
    return (slot // 2) % n == k - 1


def shard_slots(n_games: int, k: int, n: int) -> frozenset[int]:
    """The schedule indices of shard ``k`` of ``n`` (:func:`in_shard`)."""
    return frozenset(i for i in range(n_games) if in_shard(i, k, n))


def play_games(
    players: Sequence[Player],
    openings: list[Opening],
    schedule: list[tuple[int, int, int]],
    *,
    max_plies: int = MAX_PLIES,
    claim_draws: bool = True,
    adjudicate: int = 0,
    adjudicate_draw: float = 0.9,
    adjudicate_win: float = 0.97,
    concurrency: int = 1024,
    progress: bool = True,
    on_finish: Callable[[Game], None] | None = None,
    stop: Callable[[], bool] | None = None,
    played: Sequence[Game] = (),
    only: Collection[int] | None = None,
) -> list[Game]:
    """Play ``schedule`` with up to ``concurrency`` games in flight; finished games in schedule order.

    ``on_finish(game)`` is called as each game ends (finish order). ``stop()`` is asked before a pair's
    first game (even schedule index) is started: True schedules nothing more (the second game of a
    started pair is always played, games in flight finish). ``played``: finished games of this
    schedule (a resumed arena's, ``arena_resume``), kept as they are; their slots are not played.
    ``only``: the schedule indices to play (a shard's, :func:`shard_slots`; default all)."""
    rules = GameRules(max_plies, claim_draws, adjudicate, adjudicate_draw, adjudicate_win)
    skip = {g.id for g in played}
    pending = deque((i, s) for i, s in enumerate(schedule) if i not in skip and (only is None or i in only))
    active: list[Game] = []
    done: list[Game] = list(played)

    def finish(games: list[Game]) -> None:
        done.extend(games)
        if on_finish is not None:
            for g in games:
                on_finish(g)

    bar = progress_bar(
        total=len(pending) + len(played),
        initial=len(played),
        desc="arena",
        unit="game",
        leave=True,
        disable=not progress,
    )
    rounds = 0  # plies played by every game in flight: the bar's note while no game has ended yet
    try:
        while pending or active:
            while pending and len(active) < concurrency:
                if stop is not None and pending[0][0] % 2 == 0 and stop():
                    pending.clear()
                    break
                gid, (w, b, o) = pending.popleft()
                g = Game(gid, w, b, openings[o], f"{gid // 2 + 1}.{gid % 2 + 1}")
                g.end = g.rules_end(claim_draws)  # an opening position that is already over
                if g.end:
                    finish([g])
                else:
                    active.append(g)
            by_player: dict[int, list[Game]] = {}
            for g in active:
                by_player.setdefault(g.white if g.board.turn else g.black, []).append(g)
            for p, gs in by_player.items():  # one batched call per player per ply
                for g, (move, wdl) in zip(gs, players[p].choose(gs)):
                    g.play(move, wdl, rules, players[g.white].has_value_head and players[g.black].has_value_head)
            rounds += 1
            finished = [g for g in active if g.end]
            if finished:
                active = [g for g in active if not g.end]
                finish(finished)
                bar.update(len(finished))
            if active:
                note(bar, f"ply round {rounds}, {len(active)} in flight")
        bar.set_postfix_str("", refresh=False)  # the final count stands alone
    finally:
        bar.close()
    return sorted(done, key=lambda g: g.id)
