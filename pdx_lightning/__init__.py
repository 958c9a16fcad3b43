"""pdx_lightning: prior-directed self-play fine-tuning of searchless chess networks.

The library entry points are re-exported here, imported on first use (PEP 562) so that
``import pdx_lightning`` stays cheap and the layers below never import this root::

    from pdx_lightning import encode_boards, move_to_index, index_to_move, legal_mask, load_model
    from pdx_lightning import forward_kl, pdx_loss      # the objectives (rl/objectives.py)
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
    "PDXModule": "pdx_lightning.rl.module",
    "SelfPlayConfig": "pdx_lightning.rl.selfplay",
}
_OBJECTIVES = "pdx_lightning.rl.objectives"

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        objectives = importlib.import_module(_OBJECTIVES)
        if name in getattr(objectives, "__all__", ()) or (not name.startswith("_") and hasattr(objectives, name)):
            return getattr(objectives, name)
        raise AttributeError(f"module 'pdx_lightning' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
