"""Networks: the seam every family satisfies, the families, and ``load_model`` for every model name.

* ``seam.py``: ``NetOutput``, the ``Network``/``NetConfig`` protocols, the family registry and
  ``build_network`` (a stored network, checked before anything is allocated);
* ``families.py``: the registered families; ``chessformer.py``: the Chessformer and its presets;
  ``resnet.py``: the classic family (Lc0's residual towers, SE included: Maia);
* ``files.py``: model names (``base:``, ``random:``, ``.pt``, ``.ckpt``, ``.pb.gz``), ``load_model``,
  ``save_network`` and what checkpoints record (``network_record``, ``base_reference``);
* ``bundled.py``: the ``base:<name>`` files; ``inference.py``: batched masked evaluation;
* ``arguments.py``: the tools' network flags (``--model``, ``--weights``, ``--micro-batch``, ``--device``);
* ``blend.py``: network arithmetic, (1 − α)·A + α·B of two networks of one shape
  (``pdx export lc0|network --blend B --alpha α``; ``export_network.py``: ``pdx export network``);
* ``lc0/``: Lc0 ``.pb.gz`` import and export (``export_cli.py``: ``pdx export lc0``);
  ``lc0_policy.py``: Lc0's 1,858-move policy and castling convention in our 4,288 layout;
* ``export_onnx.py``: ``pdx export onnx``, any network as ONNX with Lc0's ``leela2onnx`` interface.
* ``temper.py``: a policy softmax temperature baked into a network (``pdx export ... --policy-temperature``).
"""

from __future__ import annotations

from pdx_lightning.nets.chessformer import PRESETS, Chessformer, ModelConfig, count_params
from pdx_lightning.nets.files import (
    CHECKPOINT_CONFIG_KEY,
    CHECKPOINT_FAMILY_KEY,
    DATA_DIR,
    DEFAULT_FAMILY,
    NETWORK_FORMAT,
    base_reference,
    check_base_reference,
    file_sha256,
    load_model,
    network_record,
    resolve_model_path,
    save_network,
)
from pdx_lightning.nets.seam import (
    FAMILIES,
    PARAM_GROUPS,
    ModelLoadError,
    NetConfig,
    NetOutput,
    Network,
    build_network,
    get_family,
    register_family,
)

__all__ = [
    "Chessformer",
    "ModelConfig",
    "NetOutput",
    "PRESETS",
    "count_params",
    "load_model",
    "save_network",
    "resolve_model_path",
    "file_sha256",
    "ModelLoadError",
    "DATA_DIR",
    "NetConfig",
    "Network",
    "PARAM_GROUPS",
    "FAMILIES",
    "register_family",
    "get_family",
    "build_network",
    "network_record",
    "base_reference",
    "check_base_reference",
    "NETWORK_FORMAT",
    "CHECKPOINT_FAMILY_KEY",
    "CHECKPOINT_CONFIG_KEY",
    "DEFAULT_FAMILY",
]
