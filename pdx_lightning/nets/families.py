"""The network families pdx builds, registered with the seam's registry (``seam.py``).

A new family: a module with its config class (``family`` class attribute, ``to_dict()``), its
model class (``seam.Network``), optionally a stored-config check and presets; register it here.
"""

from __future__ import annotations

from pdx_lightning.nets import chessformer, resnet
from pdx_lightning.nets.seam import register_family

register_family(
    "chessformer",
    chessformer.ModelConfig,
    chessformer.Chessformer,
    check=chessformer.check_stored,
    presets=chessformer.PRESETS,
)
register_family(
    "classic", resnet.ClassicConfig, resnet.ClassicResNet, check=resnet.check_stored, presets=resnet.PRESETS
)
