"""The default fit config at toy size, shared by the tests that run ``pdx fit`` for real."""

from __future__ import annotations

from pathlib import Path

CONF = str(Path(__file__).resolve().parents[1] / "conf" / "fit" / "pdx.yaml")


def tiny_fit_args(steps: int, opening_max_moves: int = 1, max_plies: int = 6) -> list[str]:
    """Flags after ``--config CONF``: the random tiny network, 4 games, no bars, ``steps`` steps."""
    return [
        "--model.base",
        "random:tiny",
        "--model.warmup_steps",
        "1",
        "--model.selfplay.n_games",
        "4",
        "--model.algorithm.micro_batch",
        "4",
        "--model.selfplay.opening_max_moves",
        str(opening_max_moves),
        "--model.selfplay.max_plies",
        str(max_plies),
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--trainer.max_steps",
        str(steps),
    ]
