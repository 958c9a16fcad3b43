import chess
import pytest
import torch

from pdx_lightning.chess.moves import POLICY_SIZE, move_to_index
from pdx_lightning.nets import load_model
from pdx_lightning.rl.objectives import DRAW, WIN
from pdx_lightning.rl.selfplay import SelfPlayConfig, SelfPlayDataset, SelfPlayError

torch.set_num_threads(1)


def make(n=4, **kw):
    kw.setdefault("opening_max_moves", 0)
    ds = SelfPlayDataset(SelfPlayConfig(n_games=n, micro_batch=n, **kw))
    net = load_model("random:tiny")
    ds.attach(net, net, net)
    return ds, iter(ds)


def forced(batch, moves_by_game):
    """Online log-probs putting all mass on the given move of each game."""
    logp = torch.full((batch.size, POLICY_SIZE), float("-inf"))
    for g, uci in moves_by_game.items():
        b = batch.dataset.boards[g]
        logp[g, move_to_index(chess.Move.from_uci(uci), b.turn)] = 0.0
    return logp


def set_position(ds, g, board):
    from pdx_lightning.chess.encoding import GameHistory
    ds.boards[g] = board
    ds.hist[g] = GameHistory(board)
    ds.legal[g] = list(board.legal_moves)


def test_needs_networks_and_validates_config():
    with pytest.raises(SelfPlayError, match="attach"):
        next(iter(SelfPlayDataset(SelfPlayConfig(n_games=2))))
    with pytest.raises(ValueError, match="temperature"):
        SelfPlayConfig(temperature="hot")
    with pytest.raises(ValueError, match="openings_file"):
        SelfPlayConfig(restart="openings")


def test_opening_randomization_staggers_games():
    ds, it = make(n=8, opening_max_moves=10)
    next(it)
    lengths = [len(b.move_stack) for b in ds.boards]
    assert all(n % 2 == 0 and n <= 20 for n in lengths) and len(set(lengths)) > 1


def test_mated_game_is_a_win_for_the_mover_and_restarts():
    ds, it = make(n=2)
    first = next(it)  # games at the start position; replace game 0 by a mate in one
    set_position(ds, 0, chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"))
    batch = ds._begin()
    logp = forced(batch, {0: "a1a8"})
    logp[1] = torch.log_softmax(torch.where(batch.mask[1], 0.0, float("-inf")), 0)
    done = batch.complete(slice(0, 2), logp, torch.tensor([0.9, 0.5]))
    assert done.terminal.tolist() == [True, False]
    assert done.target[0].tolist() == [1.0, 0.0, 0.0]            # true result, mover's view
    assert done.advantage[0].item() == pytest.approx(1.0 - 0.9)   # A = score(p̂) − v_θ(s)
    assert ds.boards[0].fen() == chess.STARTING_FEN and ds.stats["white_win"] == 1
    assert first.version == batch.version == 0


def test_game_reaching_the_ply_cap_is_a_draw_and_bootstrap_option_keeps_the_ema_value():
    for cap_result, terminal in (("draw", True), ("bootstrap", False)):
        ds, it = make(n=1, max_plies=3, cap_result=cap_result)
        next(it)
        b = chess.Board()
        for uci in ("g1f3", "g8f6"):
            b.push_uci(uci)
        set_position(ds, 0, b)
        batch = ds._begin()
        done = batch.complete(slice(0, 1), forced(batch, {0: "f3g1"}), torch.tensor([0.5]))
        assert done.terminal.item() is terminal
        if terminal:
            assert done.target[0].tolist() == [0.0, 1.0, 0.0]
        assert ds.stats["draw"] == 1 and len(ds.boards[0].move_stack) == 0  # restarted either way
    assert SelfPlayConfig().max_plies == 512


def test_stalemate_and_claimed_threefold_are_draws():
    ds, it = make(n=1)
    next(it)
    set_position(ds, 0, chess.Board("k7/2K5/8/8/8/8/8/1Q6 w - - 0 1"))
    batch = ds._begin()
    done = batch.complete(slice(0, 1), forced(batch, {0: "b1b6"}), torch.tensor([0.5]))
    assert done.terminal.item() and done.target[0].tolist() == [0.0, 1.0, 0.0]  # stalemate
    ds, it = make(n=1, claim_draws=True)
    next(it)
    b = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        b.push_uci(uci)
    set_position(ds, 0, b)
    batch = ds._begin()
    done = batch.complete(slice(0, 1), forced(batch, {0: "f6g8"}), torch.tensor([0.5]))
    assert done.terminal.item() and done.target[0].tolist() == [0.0, 1.0, 0.0]


def test_state_dict_round_trip_continues_the_same_games():
    ds, it = make(n=3, opening_max_moves=4, seed=5)
    batch = next(it)
    batch.complete(slice(0, 3), torch.log_softmax(torch.where(batch.mask, 0.0, float("-inf")), 1), torch.zeros(3))
    state = ds.state_dict()
    after = []
    for _ in range(2):
        b = next(it)
        d = b.complete(slice(0, 3), torch.log_softmax(torch.where(b.mask, 0.0, float("-inf")), 1), torch.zeros(3))
        after.append(d.action.tolist())
    ds2, _ = make(n=3, opening_max_moves=4, seed=5)
    ds2.load_state_dict(state)
    it2 = iter(ds2)
    again = []
    for _ in range(2):
        b = next(it2)
        d = b.complete(slice(0, 3), torch.log_softmax(torch.where(b.mask, 0.0, float("-inf")), 1), torch.zeros(3))
        again.append(d.action.tolist())
    assert again == after


def test_fixed_temperature_gives_unit_tau_and_rho_one():
    ds, it = make(n=4, temperature="fixed")
    batch = next(it)
    assert torch.all(batch.tau == 1)
    logp = torch.log_softmax(torch.where(batch.mask, torch.randn(batch.mask.shape), float("-inf")), 1)
    done = batch.complete(slice(0, 4), logp, torch.zeros(4))
    assert torch.allclose(done.rho, torch.ones(4))


def test_adaptive_temperature_sharpens_and_rho_below_one_on_favoured_moves():
    ds, it = make(n=4)
    batch = next(it)
    assert torch.all(batch.tau > 0) and torch.all(batch.tau <= torch.log(torch.tensor(3.0)) + 1e-6)


def test_restart_policies(tmp_path):
    book = tmp_path / "book.txt"
    book.write_text("e2e4 e7e5 g1f3\n")
    for restart, expect_len in (("openings", 3), ("random_plies", None)):
        ds, it = make(n=1, restart=restart, openings_file=str(book), restart_max_moves=3)
        next(it)
        set_position(ds, 0, chess.Board("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"))
        batch = ds._begin()
        batch.complete(slice(0, 1), forced(batch, {0: "a1a8"}), torch.zeros(1))
        n = len(ds.boards[0].move_stack)
        if expect_len is not None:
            assert [m.uci() for m in ds.boards[0].move_stack] == ["e2e4", "e7e5", "g1f3"]
        else:
            assert n % 2 == 0 and n <= 6 and ds.boards[0].root().fen() == chess.STARTING_FEN


def test_reuse_successor_eval_skips_the_ema_pass_for_continuing_games():
    calls = []
    ds, it = make(n=4, reuse_successor_eval=True)
    orig = ds._eval
    ds._eval = lambda name, x, m: (calls.append((name, x.shape[0])), orig(name, x, m))[1]
    for _ in range(3):
        b = next(it)
        b.complete(slice(0, 4), torch.log_softmax(torch.where(b.mask, 0.0, float("-inf")), 1), torch.zeros(4))
    ema_on_s = [n for name, n in calls if name == "ema"]
    # step 1: ema(s) for 4 games + ema(s') for 4; later steps: only ema(s')
    assert ema_on_s == [4, 4, 4, 4]
