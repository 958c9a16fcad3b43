"""Self-play (paper Algorithm 1, Appendix D) with three *distinct* networks, so every test below
knows which network supplied τ(s), v(s'), p̂ and π_base: online (π_θ, its outputs handed to
``collect``), EMA θ̄ and base π_base are random:tiny networks of different seeds whose value
heads carry different hand-set output biases."""

import math

import chess
import pytest
import torch
from torch.testing import assert_close

from pdx_lightning.chesscore.moves import POLICY_SIZE, index_to_move, move_to_index
from pdx_lightning.chesscore.policy import score, wdl_entropy
from pdx_lightning.nets import load_model
from pdx_lightning.nets.inference import evaluate_boards
from pdx_lightning.rl import pdx_step
from pdx_lightning.rl.selfplay import SelfPlayConfig, SelfPlayDataset, SelfPlayError, SelfPlayNetworks
from pdx_lightning.rl.settings import SETTING_NAMES, PDXSettings, SettingsError

torch.set_num_threads(1)


def batch_tau(ds, batch):
    """τ(s) of every row of ``batch`` as the step computes it (:func:`pdx_step.step_temperature`)."""
    return pdx_step.step_temperature(batch, slice(None), None, ds.settings)


def collect(ds, batch, rows, log_p_theta, v_theta):
    """``pdx_step.collect`` on the dataset's games, τ(s) from the EMA (the batch's), sampler generator and
    parameter version, as the step passes them."""
    tau = pdx_step.step_temperature(batch, rows, None, ds.settings)
    return pdx_step.collect(ds, batch, rows, log_p_theta, v_theta, tau, generator=ds.gen, version=ds.networks.version())


LN3 = math.log(3)
# value-head output biases (W, D, L logits) that make the three networks' WDLs far apart
BIAS = {"online": (0.3, 1.0, -0.2), "ema": (1.5, 0.0, -1.0), "base": (-1.0, 0.5, 1.5)}


def network(role: str, seed: int, constant_wdl: bool = False, bias=None) -> torch.nn.Module:
    """random:tiny:<seed> with the role's value bias (or ``bias``); ``constant_wdl`` zeroes the
    value head's last weights, so its WDL is softmax(bias) in every position."""
    net = load_model(f"random:tiny:{seed}").eval()
    with torch.no_grad():
        net.value_head.out.bias.copy_(torch.tensor(bias or BIAS[role]))
        if constant_wdl:
            net.value_head.out.weight.zero_()
    return net


@pytest.fixture(scope="module")
def nets():
    return {"online": network("online", 1), "ema": network("ema", 2), "base": network("base", 3)}


def make(nets, n=4, version=lambda: 0, **kw):
    """A dataset of ``n`` games; ``kw`` naming a ``PDXSettings`` field go to the settings, the rest to the config."""
    kw.setdefault("opening_max_moves", 0)
    settings = PDXSettings(**{"micro_batch": n, **{k: kw.pop(k) for k in list(kw) if k in SETTING_NAMES}})
    ds = SelfPlayDataset(
        SelfPlayConfig(n_games=n, **kw),
        SelfPlayNetworks(ema=nets["ema"], base=nets["base"], version=version),
        settings,
    )
    return ds, iter(ds)


def forced(batch, ds, moves_by_game):
    """Online log-probs putting all mass on the given move of each game."""
    logp = torch.full((batch.size, POLICY_SIZE), float("-inf"))
    for g, uci in moves_by_game.items():
        logp[g, move_to_index(chess.Move.from_uci(uci), ds.boards[g].turn)] = 0.0
    return logp


def uniform(mask):
    return torch.log_softmax(torch.where(mask, 0.0, float("-inf")), 1)


def set_position(ds, g, board):
    ds.pool.set_board(g, board)


def online_outputs(online, boards):
    """What the training step hands to ``collect``: log π_θ(·|s) and v_θ(s) of the online network."""
    logp, wdl = evaluate_boards(online, boards)
    return logp, score(wdl)


def test_validates_config():
    with pytest.raises(SettingsError, match=r"model\.algorithm\.temperature: must be one of adaptive, fixed"):
        PDXSettings(temperature="hot")
    with pytest.raises(ValueError, match="openings_file"):
        SelfPlayConfig(restart="openings")


def test_a_batch_completed_after_the_parameters_moved_is_refused(nets):
    version = [0]
    ds, it = make(nets, n=2, version=lambda: version[0])
    batch = next(it)
    assert batch.version == 0
    version[0] = 1  # an optimizer step between begin and complete
    with pytest.raises(SelfPlayError, match="stale batch: begun at parameter version 0, completed at 1"):
        collect(ds, batch, slice(0, 2), uniform(batch.mask), torch.zeros(2))
    assert next(it).version == 1


def test_opening_randomization_staggers_games(nets):
    ds, it = make(nets, n=8, opening_max_moves=10)
    next(it)
    lengths = [len(b.move_stack) for b in ds.boards]
    assert all(n % 2 == 0 and n <= 20 for n in lengths) and len(set(lengths)) > 1


def test_tau_and_pi_base_at_s_come_from_the_ema_and_the_base(nets):
    ds, it = make(nets, n=6, opening_max_moves=4, seed=3)
    batch = next(it)
    boards = [b.copy() for b in ds.boards]
    wdl = {role: evaluate_boards(net, boards)[1] for role, net in nets.items()}
    assert_close(batch.wdl_ema, wdl["ema"])  # the EMA's WDL at s, whose entropy is τ(s)
    assert_close(batch_tau(ds, batch), wdl_entropy(wdl["ema"]))  # τ(s) = H(p_θ̄(s)), Eq. 5
    for other in ("online", "base"):  # the networks are far apart
        assert (batch_tau(ds, batch) - wdl_entropy(wdl[other])).abs().min() > 1e-2
    logp_base = evaluate_boards(nets["base"], boards)[0]
    assert_close(batch.log_p_base, logp_base)  # π_base(·|s), −inf off the legal moves
    for other in ("online", "ema"):
        off = (batch.log_p_base - evaluate_boards(nets[other], boards)[0])[batch.mask].abs()
        assert off.max() > 1e-2


def test_non_terminal_target_is_the_flipped_ema_wdl_at_the_successor_and_advantage_uses_v_theta(nets):
    ds, it = make(nets, n=6, opening_max_moves=4, seed=4)
    batch = next(it)
    before = [b.copy() for b in ds.boards]
    logp, v_theta = online_outputs(nets["online"], before)
    completion = collect(ds, batch, slice(0, 6), logp, v_theta)
    assert not completion.terminal.any()
    after = []
    for b, a in zip(before, completion.action.tolist()):
        b.push(index_to_move(a, b))
        after.append(b)
    assert [b.move_stack for b in ds.boards] == [b.move_stack for b in after]
    p_next = evaluate_boards(nets["ema"], after)[1]  # p_θ̄(s'), side to move at s'
    assert_close(completion.target, p_next[:, [2, 1, 0]])  # p̂ = flip(p_θ̄(s')) = (L, D, W)
    assert (completion.target[:, 0] - p_next[:, 0]).abs().min() > 1e-2  # the flip matters here
    assert_close(completion.advantage, (1 - score(p_next)) - v_theta)  # A = (1 − v_θ̄(s')) − v_θ(s), Eq. 4
    for other in ("online", "base"):  # v(s') is the EMA's, not another's
        v_other = score(evaluate_boards(nets[other], after)[1])
        assert ((1 - v_other) - v_theta - completion.advantage).abs().min() > 1e-2


# White mates, Black mates, stalemate, and a game that goes on, in one micro-batch
WHITE_MATES = ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8")
BLACK_MATES = ("r5k1/8/8/8/8/8/5PPP/6K1 b - - 0 1", "a8a1")
STALEMATE = ("k7/2K5/8/8/8/8/8/1Q6 w - - 0 1", "b1b6")
GOES_ON = ("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3", "f1b5")


def test_terminal_rows_take_the_true_result_from_the_movers_view_for_either_colour(nets):
    ds, it = make(nets, n=4)
    next(it)
    for g, (fen, _) in enumerate((WHITE_MATES, BLACK_MATES, STALEMATE, GOES_ON)):
        set_position(ds, g, chess.Board(fen))
    batch = next(it)
    logp = forced(batch, ds, {g: uci for g, (_, uci) in enumerate((WHITE_MATES, BLACK_MATES, STALEMATE, GOES_ON))})
    v_theta = torch.tensor([0.9, 0.2, 0.7, 0.4])
    successor = chess.Board(GOES_ON[0])
    successor.push_uci(GOES_ON[1])
    completion = collect(ds, batch, slice(0, 4), logp, v_theta)
    assert completion.terminal.tolist() == [True, True, True, False]
    assert completion.target[:3].tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]  # mover's view
    p_next = evaluate_boards(nets["ema"], [successor])[1][0]
    assert_close(completion.target[3], p_next.flip(0))
    expect = torch.tensor([1.0 - 0.9, 1.0 - 0.2, 0.5 - 0.7, (1 - score(p_next)).item() - 0.4])
    assert_close(completion.advantage, expect)  # A = score(p̂) − v_θ(s)
    assert (ds.stats["white_win"], ds.stats["black_win"], ds.stats["draw"]) == (1, 1, 1)
    assert [b.fen() for b in ds.boards[:3]] == [chess.STARTING_FEN] * 3  # finished games restart
    assert ds.boards[3].fen() == successor.fen()


def test_game_reaching_the_ply_cap_is_a_draw_and_bootstrap_option_keeps_the_ema_value(nets):
    for cap_result, terminal in (("draw", True), ("bootstrap", False)):
        ds, it = make(nets, n=1, max_plies=3, cap_result=cap_result)
        next(it)
        b = chess.Board()
        for uci in ("g1f3", "g8f6"):
            b.push_uci(uci)
        set_position(ds, 0, b.copy())
        batch = next(it)
        completion = collect(ds, batch, slice(0, 1), forced(batch, ds, {0: "f3g1"}), torch.tensor([0.5]))
        assert completion.terminal.item() is terminal
        if terminal:
            assert completion.target[0].tolist() == [0.0, 1.0, 0.0]
        else:
            b.push_uci("f3g1")
            assert_close(completion.target[0], evaluate_boards(nets["ema"], [b])[1][0].flip(0))
        assert ds.stats["draw"] == 1 and len(ds.boards[0].move_stack) == 0  # restarted either way
    assert SelfPlayConfig().max_plies == 512


def test_claimed_threefold_is_a_draw(nets):
    ds, it = make(nets, n=1, claim_draws=True)
    next(it)
    b = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        b.push_uci(uci)
    set_position(ds, 0, b)
    batch = next(it)
    completion = collect(ds, batch, slice(0, 1), forced(batch, ds, {0: "f6g8"}), torch.tensor([0.5]))
    assert completion.terminal.item() and completion.target[0].tolist() == [0.0, 1.0, 0.0]


def _play(it, ds, steps, n):
    out = []
    for _ in range(steps):
        b = next(it)
        d = collect(ds, b, slice(0, n), uniform(b.mask), torch.zeros(n))
        out.append((batch_tau(ds, b), d.action.tolist()))
    return out


def test_state_dict_round_trip_continues_the_same_games(nets):
    ds, it = make(nets, n=3, opening_max_moves=4, seed=5)
    _play(it, ds, 1, 3)
    state = ds.state_dict()
    after = _play(it, ds, 2, 3)
    ds2, _ = make(nets, n=3, opening_max_moves=4, seed=5)
    ds2.load_state_dict(state)
    again = _play(iter(ds2), ds2, 2, 3)
    assert [a for _, a in again] == [a for _, a in after]


def test_fixed_temperature_gives_unit_tau_and_rho_one(nets):
    ds, it = make(nets, n=4, temperature="fixed")
    batch = next(it)
    assert torch.all(batch_tau(ds, batch) == 1)
    logp = torch.log_softmax(torch.where(batch.mask, torch.randn(batch.mask.shape), float("-inf")), 1)
    completion = collect(ds, batch, slice(0, 4), logp, torch.zeros(4))
    assert torch.allclose(completion.rho, torch.ones(4))


def test_adaptive_temperature_sharpens_and_rho_below_one_on_favoured_moves():
    """τ(s) = H(p_θ̄(s)) < 1 (a confident EMA) ⇒ μ ∝ π_θ^{1/τ} is sharper than π_θ: the samples
    follow μ, not π_θ, and ρ = min(1, π_θ/μ) < 1 exactly on the sampled moves μ favours
    (μ > π_θ)."""
    n, bias = 400, (3.0, 0.0, -3.0)
    ema = network("ema", 2, constant_wdl=True, bias=bias)  # p_θ̄ = softmax(3, 0, −3) everywhere
    ds, it = make({"ema": ema, "base": network("base", 3)}, n=n, seed=7)
    batch = next(it)
    p_ema = torch.softmax(torch.tensor(bias), 0)
    tau = -(p_ema * p_ema.log()).sum()
    assert 0 < tau < 1
    assert_close(batch_tau(ds, batch), tau.expand(n))
    # π_θ over the 20 legal moves of the start position: logits 0, 0.15, ..., 2.85 (distinct, graded)
    legal = batch.mask[0].nonzero().flatten()
    logits = torch.full((POLICY_SIZE,), float("-inf"))
    logits[legal] = 0.15 * torch.arange(len(legal), dtype=torch.float32)
    logp = torch.log_softmax(logits, 0).expand(n, -1).clone()
    pi = logp[0].exp()
    mu = torch.softmax(logits / tau, 0)  # Eq. 6 by hand
    h = lambda p: -(p[legal] * p[legal].log()).sum()  # noqa: E731
    assert h(mu) < h(pi) and mu.max() > pi.max()  # sharper
    completion = collect(ds, batch, slice(0, n), logp, torch.zeros(n))
    a = completion.action
    assert batch.mask[torch.arange(n), a].all()
    top = legal[-1]
    freq = (a == top).float().mean().item()
    sd = math.sqrt(mu[top] * (1 - mu[top]) / n)
    assert abs(freq - mu[top].item()) < 4 * sd  # the samples follow μ ...
    assert abs(freq - pi[top].item()) > 8 * sd  # ... not π_θ
    favoured = mu[a] > pi[a]
    assert favoured.any() and (~favoured).any()  # both kinds of move were sampled
    assert torch.equal(completion.rho < 1, favoured)  # ρ < 1 exactly where μ favours the move
    assert_close(completion.rho, torch.clamp(pi[a] / mu[a], max=1.0))


def test_restart_policies(nets, tmp_path):
    book = tmp_path / "book.txt"
    book.write_text("e2e4 e7e5 g1f3\n")
    for restart, expect_len in (("openings", 3), ("random_plies", None)):
        ds, it = make(nets, n=1, restart=restart, openings_file=str(book), restart_max_moves=3)
        next(it)
        set_position(ds, 0, chess.Board(WHITE_MATES[0]))
        batch = next(it)
        collect(ds, batch, slice(0, 1), forced(batch, ds, {0: "a1a8"}), torch.zeros(1))
        n = len(ds.boards[0].move_stack)
        if expect_len is not None:
            assert [m.uci() for m in ds.boards[0].move_stack] == ["e2e4", "e7e5", "g1f3"]
        else:
            assert n % 2 == 0 and n <= 6 and ds.boards[0].root().fen() == chess.STARTING_FEN


def test_reuse_successor_eval_skips_the_ema_pass_for_continuing_games(nets):
    calls = []
    ds, it = make(nets, n=4, reuse_successor_eval=True)
    orig = ds._eval
    ds._eval = lambda name, x, m: (calls.append((name, x.shape[0])), orig(name, x, m))[1]
    _play(it, ds, 3, 4)
    ema_on_s = [n for name, n in calls if name == "ema"]
    # step 1: ema(s) for 4 games + ema(s') for 4; later steps: only ema(s')
    assert ema_on_s == [4, 4, 4, 4]


def test_reuse_successor_eval_cache_survives_a_state_dict_round_trip():
    """The cached ema(s') was made by the EMA *before* its last update: a restored dataset must use
    the stored values (a fresh evaluation with the moved EMA would give other τ)."""

    def nets_():
        return {"ema": network("ema", 2), "base": network("base", 3)}

    a = nets_()
    ds, it = make(a, n=4, opening_max_moves=3, seed=2, reuse_successor_eval=True)
    _play(it, ds, 2, 4)
    state = ds.state_dict()
    boards = [bd.copy() for bd in ds.boards]
    assert state["ema_cache"].shape == (4, 3) and not state["ema_cache"].isnan().any()
    with torch.no_grad():  # the EMA update after that step
        a["ema"].value_head.out.bias.add_(torch.tensor([0.5, -0.5, 0.0]))
    cont = _play(it, ds, 2, 4)
    b = nets_()
    with torch.no_grad():
        b["ema"].value_head.out.bias.add_(torch.tensor([0.5, -0.5, 0.0]))
    ds2, _ = make(b, n=4, opening_max_moves=3, seed=2, reuse_successor_eval=True)
    ds2.load_state_dict(state)
    again = _play(iter(ds2), ds2, 2, 4)
    for (tau_a, act_a), (tau_b, act_b) in zip(cont, again):
        assert torch.equal(tau_a, tau_b) and act_a == act_b
    fresh = wdl_entropy(evaluate_boards(b["ema"], boards)[1])  # what a restart without the cache gives
    assert (fresh - cont[0][0]).abs().min() > 1e-3
