"""Lc0 interoperability: read Leela Chess Zero ``.pb.gz`` networks into a pdx network family,
and write ours in that format (``pdx export lc0``: ``nets/export_cli.py``).

Layout of this package:

* ``schema.py``: net.proto as protobuf classes (no protoc step);
* ``format.py``: the family-independent format layer: reading and writing files, what a file
  declares (its network body kind), the layer encodings, the 4,288 ↔ 1,858 policy maps and the
  castling remap (those two from ``nets/lc0_policy.py``);
* one mapping module per network body (``attention.py``: attention body ↔ Chessformer;
  ``classic.py``: residual towers, Maia's SE-ResNet among them ↔ ClassicResNet). A
  mapping defines ``BODY``, ``FAMILY``, ``decode(net, fmt, where) -> (config, state dict)``,
  ``export_problems(cfg, allow_castling_mismatch) -> list[str]`` and
  ``encode(model, encoding, moves_left, allow_castling_mismatch) -> schema.Net``.

:func:`load_lc0` reads a file, detects its body kind and dispatches to that body's mapping;
:func:`export_lc0` dispatches on ``model.cfg.family``. Both bodies Lc0 ships are read (attention:
BT4, T82; residual: the classic and SE towers, Maia); a file whose body no mapping reads, or that its
mapping cannot hold, is refused with ``Lc0FormatError`` saying what it is.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import torch

from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.lc0.format import (
    ATTN_TO_1858,
    POLICY_1858,
    Lc0ExportError,
    Lc0FormatError,
    NetFormat,
    detect_format,
    enum_name,
    lc0_1858_moves,
    policy_to_1858,
    read_net,
    write_net,
)
from pdx_lightning.nets.seam import get_family

__all__ = [
    "Lc0FormatError",
    "Lc0ExportError",
    "load_lc0",
    "export_lc0",
    "lc0_export_problems",
    "lc0_style",
    "ATTN_TO_1858",
    "POLICY_1858",
    "lc0_1858_moves",
    "policy_to_1858",
    "mappings",
]


def mappings() -> dict[str, ModuleType]:
    """Lc0 network body kind (``format.NetFormat.body``) → the module mapping it onto a pdx family.

    A new body: write its mapping module beside ``attention.py`` and add it here. The imports are
    inside the function: importing any module of this package (e.g. ``format.py``, from a
    family's model) first runs this file, and importing the mappings, and through them the
    models, at module level here would then be circular.
    """
    from pdx_lightning.nets.lc0 import attention, classic  # noqa: PLC0415  (see docstring)

    return {m.BODY: m for m in (attention, classic)}


def _mapping_for_family(family: str | None) -> ModuleType | None:
    return next((m for m in mappings().values() if family == m.FAMILY), None)


def _unmapped(fmt: NetFormat, where: str) -> Lc0FormatError:
    readable = ", ".join(f"{b} → {m.FAMILY}" for b, m in mappings().items())
    if fmt.body == "residual":
        what = (
            f"a residual-tower (classic/SE convolutional) network with {fmt.n_residual} blocks, format "
            f"{enum_name(P.NETWORK_NAMES, fmt.network)}"
        )
    else:
        what = f"a network with body {fmt.body!r} ({fmt.describe()})"
    return Lc0FormatError(
        f"{where}: {what}; pdx reads these Lc0 network bodies: {readable} (attention: BT4, T82 onto the Chessformer)"
    )


def load_lc0(path: str | os.PathLike) -> torch.nn.Module:
    """Read an Lc0 network (``.pb.gz`` or ``.pb``) as the pdx family its body maps onto (eval mode)."""
    path = Path(path)
    where = str(path)
    net = read_net(path)
    fmt = detect_format(net, where)
    mapping = mappings().get(fmt.body)
    if mapping is None:
        raise _unmapped(fmt, where)
    cfg, state = mapping.decode(net, fmt, where)
    del net  # BT4: ~0.4 GB of protobuf, freed before the ~0.75 GB model is built
    model = get_family(cfg.family).model_cls(cfg)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:  # a table/model mismatch is a bug, but still never a half-loaded model
        raise Lc0FormatError(f"{where}: weights do not fit the inferred model: {e}") from e
    return model.eval()


def lc0_export_problems(cfg, allow_castling_mismatch: bool = False) -> list[str]:
    """Why ``cfg``'s computation has no exact Lc0 equivalent (empty: exportable)."""
    family = getattr(cfg, "family", None)
    mapping = _mapping_for_family(family)
    if mapping is None:
        return [
            f"network family {family!r} has no Lc0 mapping (mapped: {', '.join(m.FAMILY for m in mappings().values())})"
        ]
    return mapping.export_problems(cfg, allow_castling_mismatch)


def lc0_style(cfg, embedding: str = "pe_dense"):
    """A Chessformer config changed into what Lc0 can express (``attention.lc0_style``)."""
    from pdx_lightning.nets.lc0 import attention  # noqa: PLC0415  (see mappings)

    return attention.lc0_style(cfg, embedding)


def export_lc0(
    model: torch.nn.Module,
    path: str | os.PathLike,
    encoding: str = "linear16",
    moves_left: bool = True,
    allow_castling_mismatch: bool = False,
) -> Path:
    """Write ``model`` as an Lc0 ``.pb.gz`` in the format of its family's mapping.

    ``encoding``: linear16 (every Lc0 release and tool reads it; quantized to 65,536 levels per
    tensor), float16, bfloat16, or float32 (lossless; needs a recent Lc0). ``moves_left=False``
    drops a carried moves-left head. Refuses (``Lc0ExportError``) what Lc0 cannot express; then
    nothing is written.
    """
    family = getattr(model.cfg, "family", None)
    mapping = _mapping_for_family(family)
    if mapping is None:
        raise Lc0ExportError(lc0_export_problems(model.cfg)[0])
    if encoding not in P.ENCODINGS:
        raise Lc0ExportError(f"unknown encoding {encoding!r}; choose one of {', '.join(P.ENCODINGS)}")
    net = mapping.encode(
        model, P.ENCODINGS[encoding], moves_left=moves_left, allow_castling_mismatch=allow_castling_mismatch
    )
    return write_net(net, path)
