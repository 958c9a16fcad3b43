"""pdx_lightning: prior-directed self-play fine-tuning of searchless chess networks.

The library entry points are re-exported here, imported on first use (PEP 562) so that
``import pdx_lightning`` stays cheap and the layers below never import this root::

    from pdx_lightning import encode_boards, move_to_index, index_to_move, legal_mask, load_model
    from pdx_lightning import forward_kl, pdx_loss      # the policy math and the objectives
    from pdx_lightning import PDXModule, PDXSettings, SelfPlayConfig              # the PDX trainer
    from pdx_lightning import SearchedModule, SearchedSelfPlaySettings            # searched self-play
    from pdx_lightning import BatchedSearch, SearchSettings, ComposedNetwork      # the search
"""

from __future__ import annotations

import importlib

from pdx_lightning._version import __version__

_EXPORTS = {
    "encode_boards": "pdx_lightning.chesscore.encoding",
    "move_to_index": "pdx_lightning.chesscore.moves",
    "index_to_move": "pdx_lightning.chesscore.moves",
    "legal_mask": "pdx_lightning.chesscore.moves",
    "POLICY_SIZE": "pdx_lightning.chesscore.moves",
    "load_model": "pdx_lightning.nets",
    "save_network": "pdx_lightning.nets",
    "NetOutput": "pdx_lightning.nets",
    "ComposedNetwork": "pdx_lightning.nets.composed",
    "PDXModule": "pdx_lightning.rl.module",
    "PDXSettings": "pdx_lightning.rl.settings",
    "SelfPlayConfig": "pdx_lightning.rl.selfplay",
    "SearchedModule": "pdx_lightning.rl.searched_module",
    "SearchedSelfPlaySettings": "pdx_lightning.rl.searched_settings",
    "BatchedSearch": "pdx_lightning.search",
    "SearchSettings": "pdx_lightning.search",
    "SearchSpec": "pdx_lightning.search.spec",
    "parse_search_spec": "pdx_lightning.search.spec",
}
_POLICY = "pdx_lightning.chesscore.policy"
_OBJECTIVES = "pdx_lightning.rl.objectives"
# the policy math (chesscore/policy.py) and the RL objectives (rl/objectives.py), by name
_MATH = {
    **dict.fromkeys(
        (
            "TAU_MIN",
            "masked_log_softmax",
            "entropy",
            "forward_kl",
            "reverse_kl",
            "tempered_log_probs",
            "wdl_entropy",
            "play_temperature",
            "score",
            "flip_wdl",
        ),
        _POLICY,
    ),
    **dict.fromkeys(
        (
            "EXPLORATION_TERMS",
            "PDXLoss",
            "base_wdl_kl",
            "exploration_term",
            "importance_weight",
            "pdx_loss",
            "value_loss",
            "value_target",
        ),
        _OBJECTIVES,
    ),
}

__all__ = ["__version__", *_EXPORTS, *_MATH]  # noqa: PLE0604  (the names: the keys of the two tables)


def __getattr__(name: str):
    module = _EXPORTS.get(name) or _MATH.get(name)
    if module is None:
        raise AttributeError(f"module 'pdx_lightning' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
