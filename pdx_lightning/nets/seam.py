"""The network seam: what training, evaluation and export rely on, and the family registry.

Every network pdx trains or evaluates is an ``nn.Module`` of some *family* (the Chessformer,
Lc0's classic residual tower, ...) that satisfies :class:`Network`:

* ``forward(x)`` takes the 112 input planes ``(B, 112, 8, 8)`` (``chesscore/encoding.py``) and returns
  a :class:`NetOutput`: policy logits ``(B, 4288)`` in the layout of ``chesscore/moves.py``, WDL
  logits ``(B, 3)`` from the side to move's view, optionally moves-left ``(B,)`` in plies;
* ``cfg`` is its config (:class:`NetConfig`): a ``family`` name and ``to_dict()``, with
  ``config_cls(**cfg.to_dict())`` rebuilding an equal config;
* ``param_groups()`` returns the four layerwise learning-rate groups of paper Appendix G
  (:data:`PARAM_GROUPS`), each parameter in exactly one group.

The registry maps a family name to its config class, model class, an optional consistency
check of a stored (config, tensors) pair, and its presets (``random:<preset>``).
:func:`build_network` turns a stored (family, config dict, state dict) into a network, checking
it first without allocating anything: the family's check, then the shapes of a model built on
the meta device against the stored tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

import torch
from torch import nn

from pdx_lightning.errors import UserError

__all__ = [
    "NetOutput",
    "NetConfig",
    "Network",
    "PARAM_GROUPS",
    "Family",
    "FAMILIES",
    "ModelLoadError",
    "register_family",
    "get_family",
    "find_preset",
    "build_network",
]

PARAM_GROUPS = ("backbone", "final_block", "policy_head", "value_head")


class ModelLoadError(UserError, ValueError):
    """A model name or file that cannot be turned into a network (``pdx`` prints it as one line)."""


class NetOutput(NamedTuple):
    """What every network's ``forward`` returns."""

    policy: torch.Tensor  # (B, 4288) logits, chesscore/moves.py's layout
    wdl: torch.Tensor  # (B, 3) logits, side to move's view: win, draw, loss
    moves_left: torch.Tensor | None = None  # (B,) expected plies to the end, if forward computes it


@runtime_checkable
class NetConfig(Protocol):
    """A family's hyperparameters: ``type(cfg)(**cfg.to_dict()) == cfg``."""

    @property
    def family(self) -> str: ...  # a class attribute (ClassVar) of the config class

    def to_dict(self) -> dict: ...


@runtime_checkable
class Network(Protocol):
    """A network of any family (an ``nn.Module``; see the module docstring)."""

    cfg: NetConfig

    def forward(self, x: torch.Tensor) -> NetOutput: ...

    def param_groups(self) -> dict[str, list[nn.Parameter]]: ...


# check(config dict, state dict, where): raise ModelLoadError when the stored config cannot
# describe the stored tensors. It runs before any model is built, even on the meta device. The
# config is what the file holds (possibly not a dict, or None).
StoredCheck = Callable[[object, dict, str], None]


@dataclass(frozen=True)
class Family:
    name: str
    config_cls: type
    model_cls: type
    check: StoredCheck | None = None
    presets: Mapping[str, NetConfig] = field(default_factory=dict)

    def config_from_dict(self, config: object, where: str) -> NetConfig:
        """The family's config from a stored dict (a ``family`` key in it must name this family)."""
        if not isinstance(config, dict):
            raise ModelLoadError(f"{where}: the stored model config is a {type(config).__name__}, not a dict")
        config = dict(config)
        named = config.pop("family", self.name)
        if named != self.name:
            raise ModelLoadError(f"{where}: the stored config names family {named!r}, the file {self.name!r}")
        try:
            return self.config_cls(**config)
        except (TypeError, ValueError, KeyError) as e:
            raise ModelLoadError(f"{where}: unusable stored {self.name} config: {e}") from e


FAMILIES: dict[str, Family] = {}


def register_family(
    name: str,
    config_cls: type,
    model_cls: type,
    check: StoredCheck | None = None,
    presets: Mapping[str, NetConfig] | None = None,
) -> Family:
    """Make family ``name`` loadable; ``config_cls.family`` must be ``name``."""
    if getattr(config_cls, "family", None) != name:
        raise ValueError(
            f"{config_cls.__name__}.family is {getattr(config_cls, 'family', None)!r}, registered as {name!r}"
        )
    if name in FAMILIES and (FAMILIES[name].config_cls, FAMILIES[name].model_cls) != (config_cls, model_cls):
        raise ValueError(f"network family {name!r} is already registered with other classes")
    FAMILIES[name] = Family(name, config_cls, model_cls, check, dict(presets or {}))
    return FAMILIES[name]


def get_family(name: str | None) -> Family:
    """The registered family ``name``; ModelLoadError naming the known ones otherwise (also for None:
    a config without a family)."""
    try:
        if name is None:
            raise KeyError(name)
        return FAMILIES[name]
    except (KeyError, TypeError):
        raise ModelLoadError(
            f"unknown network family {name!r}; known families: {', '.join(sorted(FAMILIES)) or 'none'}"
        ) from None


def find_preset(name: str) -> tuple[Family, NetConfig]:
    """The family and config of preset ``name`` (``random:<name>``), searched in every family."""
    hits = [(f, f.presets[name]) for f in FAMILIES.values() if name in f.presets]
    if len(hits) != 1:
        known = ", ".join(f"{p} ({f.name})" for f in FAMILIES.values() for p in f.presets)
        what = "unknown" if not hits else f"ambiguous ({', '.join(f.name for f, _ in hits)})"
        raise KeyError(f"{what} model preset {name!r}; presets: {known}")
    return hits[0]


def _meta_shapes(family: Family, cfg: NetConfig, where: str) -> dict[str, tuple[int, ...]]:
    try:
        with torch.device("meta"):
            return {k: tuple(v.shape) for k, v in family.model_cls(cfg).state_dict().items()}
    except (TypeError, ValueError, KeyError, RuntimeError) as e:
        raise ModelLoadError(f"{where}: unusable stored {family.name} config: {e}") from e


def build_network(family: str, config: object, state: dict | None, where: str) -> nn.Module:
    """A network of ``family`` from a stored config dict and state dict, in eval mode.

    ``state=None`` builds freshly initialized weights. Otherwise nothing is allocated until the
    stored tensors are known to fit: finite values, the family's own check, then every tensor's
    shape against a model built on the meta device. Any misfit is a ModelLoadError saying where.
    """
    try:
        fam = get_family(family)
    except ModelLoadError as e:
        raise ModelLoadError(f"{where}: {e}") from None
    if state is not None:
        if not isinstance(state, dict):
            raise ModelLoadError(f"{where}: the stored weights are a {type(state).__name__}, not a state dict")
        for k, v in state.items():  # a NaN/inf weight would only surface later as a NaN loss or a bad move
            if isinstance(v, torch.Tensor) and v.is_floating_point() and not bool(torch.isfinite(v).all()):
                raise ModelLoadError(f"{where}: tensor {k!r} holds NaN or infinite values")
        if fam.check is not None:
            fam.check(config, state, where)
    cfg = fam.config_from_dict(config, where)
    if state is not None:
        want = _meta_shapes(fam, cfg, where)
        got = {str(k): tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
        if want != got:
            bad = sorted(k for k in want.keys() & got.keys() if want[k] != got[k])[:3]
            raise ModelLoadError(
                f"{where}: weights do not fit the stored {fam.name} config (missing "
                f"{sorted(want.keys() - got.keys())[:3]}, unexpected {sorted(got.keys() - want.keys())[:3]}, "
                f"shape mismatches {[(k, got[k], want[k]) for k in bad]})"
            )
    try:
        model = fam.model_cls(cfg)
        if state is not None:
            model.load_state_dict(state)
    except (TypeError, ValueError, RuntimeError) as e:
        raise ModelLoadError(f"{where}: weights do not fit the stored {fam.name} config: {e}") from e
    return model.eval()
