"""Lc0's classic residual tower (the "classic" family): the SE-ResNets of the T-series and Maia,
in PyTorch, computing what the Lc0 engine computes.

Shapes: input ``x`` is ``(B, 112, 8, 8)``, Lc0's classic 112-plane input (``chesscore/encoding.py``;
the rule-50 plane 109 is the raw ply count, fed unscaled as Lc0 does). Outputs (``seam.NetOutput``)
are policy logits ``(B, 4288)`` in the layout of ``chesscore/moves.py`` and WDL logits ``(B, 3)``.

The computation (Lc0 ``network_legacy.cc`` and the BLAS/Eigen backend, read to learn):

* body: a 3×3 input convolution (112 → C) and activation, then ``blocks`` residual blocks
  ``y = act(g(x) + x)`` with ``g = conv3×3 → act → conv3×3`` and, when the file has it, the
  squeeze-excitation unit on the second convolution's output ``z``: ``s = mean over the 64
  squares of z`` → FC (C → se_channels) → act → FC (se_channels → 2C) = ``(w, b)``, and
  ``SE(z) = sigmoid(w)·z + b`` per channel, so ``y = act(sigmoid(w)·z + b + x)``;
* batch normalization is folded into each convolution's weights and bias (Lc0 folds
  ``gamma/sqrt(var + 1e-5)`` in at load time; ``nets/lc0/classic.py`` does the same), so a
  convolution here is a plain ``Conv2d`` with bias;
* the activation is ReLU, or mish where the file says ``DEFAULT_ACTIVATION_MISH``; it is also the
  activation of the SE unit's first FC and of every head's hidden layer;
* policy, POLICY_CONVOLUTION: conv3×3 (C → C) → act → conv3×3 (C → 80 planes, no activation);
  the first 73 planes × 64 squares are Lc0's AlphaZero-style move planes (56 queen-line planes:
  direction N, NE, E, SE, S, SW, W, NW, distance 1…7; 8 knight planes; 9 promotion planes:
  to-file offset −1, 0, +1 × rook, bishop, queen), gathered straight into our 4,288 layout
  (``conv_policy_index``); the queen-line move onto the last rank is the knight promotion there,
  as in Lc0's 1,858 list;
* policy, POLICY_CLASSICAL: conv1×1 (C → policy_channels) → act → FC onto Lc0's 1,858 moves,
  scattered into our layout (``lc0_policy.policy_from_1858``);
* slots of our 4,288 layout that no Lc0 move occupies (square pairs no piece moves between,
  promotion cells two files apart) get ``UNMAPPED_LOGIT`` (finite, so nothing downstream meets
  an inf; never legal, so ``masked_log_softmax`` drops them); castling is scored on
  king-takes-rook by Lc0 and swapped into our king-destination slots (``castling_to_ours``);
* value: conv1×1 (C → value_channels) → act → FC (→ value_hidden) → act → FC to 3 WDL logits
  (VALUE_WDL) or to one scalar ``v`` with ``q = tanh(v)`` (VALUE_CLASSICAL);
* moves-left (MOVES_LEFT_V1, when the file has it): conv1×1 → act → FC → act → FC → ReLU, in
  plies; carried as buffers (never trained: the fine-tuning objective has no moves-left term),
  as the Chessformer carries its own; :meth:`ClassicResNet.moves_left` computes it.

A classical-value network (no WDL head) has WDL logits ``(v, UNMAPPED_LOGIT, −v)``: its
softmax is ``W = (1 + q)/2``, ``D = 0``, ``L = (1 − q)/2`` exactly, with ``W − L = q = tanh(v)``,
what Lc0 reports for such a net. That is enough to evaluate or play it, but not to train it
with pdx: τ = H(WDL) (paper Sec. 2.3) and the WDL value loss need a real draw probability.
:func:`require_wdl_head` is the refusal, named, for the code that needs one.

Inference path (performance only, the same computation): without autograd (``torch.no_grad`` /
``inference_mode``), on the CPU, in float32, :meth:`ClassicResNet.forward` runs the tower in the
channels-last memory format (oneDNN's fast layout for these 3×3 convolutions), calls the functional ops
directly (no module dispatch per layer), applies ReLU in place and computes only the 73 planes of the
convolutional policy head that Lc0 reads. The channels-last copies of the convolution weights are cached
and rebuilt whenever a weight changes (tensor versions: optimizer steps, EMA updates, ``load_state_dict``;
an in-place write through ``.data`` is not versioned by PyTorch: call :meth:`ClassicResNet.clear_inference_cache`
after one). Measured on Maia (benchmarks/lc0_throughput.py): 10–30 % less CPU per
position than the module path, batch 1 to 256; outputs agree with it to float32 rounding (both paths are
within 2.5e-5 of a float64 evaluation on Maia's logits, |logit| ≤ 18). Training (autograd on) and other
devices or dtypes take the module path; ``INFERENCE_FAST_PATH = False`` turns the inference path off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from typing import ClassVar, Literal, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pdx_lightning.chesscore.moves import N_FROM_TO, POLICY_SIZE
from pdx_lightning.nets.lc0_policy import castling_to_ours, policy_from_1858
from pdx_lightning.nets.seam import ModelLoadError, NetOutput

__all__ = [
    "ClassicConfig",
    "ClassicResNet",
    "PRESETS",
    "PRESET_PARAMS",
    "UNMAPPED_LOGIT",
    "N_POLICY_1858",
    "CONV_POLICY_PLANES",
    "conv_policy_index",
    "count_params",
    "check_stored",
    "require_wdl_head",
    "WdlHeadMissingError",
]

N_PLANES = 112
N_POLICY_1858 = 1858
CONV_POLICY_PLANES = 73  # Lc0 reads the first 73 of the convolutional head's planes
UNMAPPED_LOGIT = -1.0e4  # logit of a 4,288 slot no Lc0 move occupies (see module docstring)
ACTIVATIONS = {"relu": F.relu, "mish": F.mish}
INFERENCE_FAST_PATH = True  # module docstring, "Inference path"; False: always the module path
_CHANNELS_LAST = torch.channels_last


@dataclass(frozen=True)
class ClassicConfig:
    """Hyperparameters of a classic Lc0 residual tower. Presets in ``PRESETS``.

    ``family`` is a class attribute (not a field), as for the Chessformer's ``ModelConfig``.
    """

    family: ClassVar[str] = "classic"
    name: str = "custom"
    channels: int = 64  # filters of the tower (Maia: 64; T60: 384)
    blocks: int = 6  # residual blocks
    se_channels: int = 8  # hidden width of each block's SE unit (channels / se_ratio); 0 = none
    activation: Literal["relu", "mish"] = "relu"
    policy: Literal["convolution", "classical"] = "convolution"
    policy_channels: int = 80  # convolution: planes of the last 3×3 conv (Lc0: 80, 73 read);
    # classical: planes of the 1×1 conv before the FC (Lc0: 32)
    value: Literal["wdl", "classical"] = "wdl"
    value_channels: int = 32  # planes of the value head's 1×1 conv
    value_hidden: int = 128  # width of the value head's hidden FC
    moves_left_channels: int = 0  # planes of the moves-left head's 1×1 conv; 0 = no moves-left head
    moves_left_hidden: int = 128

    def __post_init__(self) -> None:
        for f in ("channels", "blocks", "policy_channels", "value_channels", "value_hidden", "moves_left_hidden"):
            if getattr(self, f) <= 0:
                raise ValueError(f"ClassicConfig.{f} must be positive, got {getattr(self, f)}")
        for f in ("se_channels", "moves_left_channels"):
            if getattr(self, f) < 0:
                raise ValueError(f"ClassicConfig.{f} must be >= 0, got {getattr(self, f)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"ClassicConfig.activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.policy not in ("convolution", "classical"):
            raise ValueError(f"ClassicConfig.policy must be 'convolution' or 'classical', got {self.policy!r}")
        if self.value not in ("wdl", "classical"):
            raise ValueError(f"ClassicConfig.value must be 'wdl' or 'classical', got {self.value!r}")
        if self.policy == "convolution" and self.policy_channels < CONV_POLICY_PLANES:
            raise ValueError(
                f"a convolutional policy head needs >= {CONV_POLICY_PLANES} planes (Lc0's move "
                f"planes), got policy_channels={self.policy_channels}"
            )

    @property
    def wdl_head(self) -> bool:
        """Whether the value head predicts W/D/L (False: a tanh scalar, D = 0 by construction)."""
        return self.value == "wdl"

    @classmethod
    def from_name(cls, name: str, **overrides) -> ClassicConfig:
        if name not in PRESETS:
            raise KeyError(f"unknown classic preset {name!r}; presets: {', '.join(PRESETS)}")
        return replace(PRESETS[name], **overrides)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ClassicConfig] = {
    # tests only: every part present (SE, convolutional policy, WDL, moves-left), a few KB
    "classic-tiny": ClassicConfig(
        "classic-tiny",
        channels=8,
        blocks=2,
        se_channels=2,
        moves_left_channels=2,
        value_channels=4,
        value_hidden=16,
        moves_left_hidden=8,
    ),
    # the Maia networks' shape (6 SE blocks × 64 filters, convolutional policy, WDL; no moves-left)
    "classic-maia": ClassicConfig("classic-maia"),
}
# Parameter counts of the presets (pinned by tests/nets/test_resnet.py).
PRESET_PARAMS = {"classic-tiny": 21_163, "classic-maia": 865_571}


# ---------------------------------------------------------------- Lc0's convolutional policy map

_QUEEN_DIRS = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))  # N NE E SE S SW W NW
_KNIGHT_JUMPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
_PROMO_SLOT = {"q": 0, "r": 1, "b": 2}  # chesscore/moves.py's order inside a promotion cell


@lru_cache(maxsize=1)
def _conv_policy_index() -> np.ndarray:
    fill = CONV_POLICY_PLANES * 64
    index = np.full(POLICY_SIZE, fill, dtype=np.int64)
    for plane in range(CONV_POLICY_PLANES):
        for sq in range(64):
            file, rank = sq % 8, sq // 8
            if plane < 56:
                (dx, dy), dist = _QUEEN_DIRS[plane // 7], plane % 7 + 1
                dx, dy, piece = dx * dist, dy * dist, None
            elif plane < 64:
                (dx, dy), piece = _KNIGHT_JUMPS[plane - 56], None
            else:
                dx, dy, piece = (plane - 64) // 3 - 1, 1, "rbq"[(plane - 64) % 3]
                if rank != 6:
                    continue
            tf, tr = file + dx, rank + dy
            if not (0 <= tf < 8 and 0 <= tr < 8):
                continue
            if piece is None:
                slot = sq * 64 + tr * 8 + tf
            else:
                slot = N_FROM_TO + file * 24 + tf * 3 + _PROMO_SLOT[piece]
            index[slot] = plane * 64 + sq
    index.setflags(write=False)
    return index


def conv_policy_index() -> torch.Tensor:
    """``(4288,)`` int64: for each slot of our layout, the flat index ``plane*64 + from_square``
    into the convolutional head's first 73 planes, or ``73*64`` (a fill column) where no Lc0 move
    occupies the slot. Squares and moves in Lc0's frame (side to move, castling king-takes-rook).
    A new tensor on the current default device (the table itself is cached as a numpy array)."""
    return torch.tensor(_conv_policy_index())


# ---------------------------------------------------------------- the network


class SqueezeExcitation(nn.Module):
    """Lc0's SE unit: pooled FC → act → FC producing a per-channel scale (sigmoid) and bias."""

    def __init__(self, channels: int, hidden: int, act) -> None:
        super().__init__()
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, 2 * channels)
        self.act = act

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        C = z.shape[1]
        s = self.fc2(self.act(self.fc1(z.mean(dim=(2, 3)))))  # (B, 2C)
        w, b = s[:, :C, None, None], s[:, C:, None, None]
        return torch.sigmoid(w) * z + b  # (B, C, 8, 8)


class ResidualBlock(nn.Module):
    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        C = cfg.channels
        self.act = ACTIVATIONS[cfg.activation]
        self.conv1 = nn.Conv2d(C, C, 3, padding=1)
        self.conv2 = nn.Conv2d(C, C, 3, padding=1)
        self.se = SqueezeExcitation(C, cfg.se_channels, self.act) if cfg.se_channels else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.conv2(self.act(self.conv1(x)))
        if self.se is not None:
            z = self.se(z)
        return self.act(z + x)


class ConvPolicyHead(nn.Module):
    """POLICY_CONVOLUTION: two 3×3 convolutions to Lc0's move planes, gathered into our layout."""

    index: torch.Tensor  # a buffer (register_buffer)

    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cfg.channels, cfg.channels, 3, padding=1)
        self.conv2 = nn.Conv2d(cfg.channels, cfg.policy_channels, 3, padding=1)
        self.act = ACTIVATIONS[cfg.activation]
        self.register_buffer("index", conv_policy_index(), persistent=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        planes = self.conv2(self.act(self.conv1(h)))[:, :CONV_POLICY_PLANES].flatten(1)  # (B, 73*64)
        padded = F.pad(planes, (0, 1), value=UNMAPPED_LOGIT)  # fill column
        return padded[:, self.index]  # (B, 4288)


class ClassicalPolicyHead(nn.Module):
    """POLICY_CLASSICAL: a 1×1 convolution and a fully connected layer onto Lc0's 1,858 moves."""

    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cfg.channels, cfg.policy_channels, 1)
        self.fc = nn.Linear(cfg.policy_channels * 64, N_POLICY_1858)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return policy_from_1858(self.fc(self.act(self.conv(h)).flatten(1)), fill=UNMAPPED_LOGIT)


class ValueHead(nn.Module):
    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        self.wdl = cfg.value == "wdl"
        self.conv = nn.Conv2d(cfg.channels, cfg.value_channels, 1)
        self.fc1 = nn.Linear(cfg.value_channels * 64, cfg.value_hidden)
        self.fc2 = nn.Linear(cfg.value_hidden, 3 if self.wdl else 1)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out = self.fc2(self.act(self.fc1(self.act(self.conv(h)).flatten(1))))
        if self.wdl:
            return out  # (B, 3)
        v = out  # (B, 1): q = tanh(v)
        return torch.cat([v, torch.full_like(v, UNMAPPED_LOGIT), -v], dim=1)  # W-L = tanh(v), D = 0


class MovesLeftHead(nn.Module):
    """Lc0's moves-left head (plies), carried as buffers like the Chessformer's."""

    # buffers (register_buffer)
    conv_weight: torch.Tensor
    conv_bias: torch.Tensor
    fc1_weight: torch.Tensor
    fc1_bias: torch.Tensor
    fc2_weight: torch.Tensor
    fc2_bias: torch.Tensor

    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        m, hid, C = cfg.moves_left_channels, cfg.moves_left_hidden, cfg.channels
        for name, shape in (
            ("conv_weight", (m, C, 1, 1)),
            ("conv_bias", (m,)),
            ("fc1_weight", (hid, 64 * m)),
            ("fc1_bias", (hid,)),
            ("fc2_weight", (1, hid)),
            ("fc2_bias", (1,)),
        ):
            self.register_buffer(name, torch.zeros(shape))
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        m = self.act(F.conv2d(h, self.conv_weight, self.conv_bias)).flatten(1)  # (B, 64*m)
        m = self.act(F.linear(m, self.fc1_weight, self.fc1_bias))
        return F.relu(F.linear(m, self.fc2_weight, self.fc2_bias)).squeeze(-1)  # (B,) plies


class ClassicResNet(nn.Module):
    """Lc0's classic residual tower (module docstring), a ``seam.Network``."""

    def __init__(self, cfg: ClassicConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.act = ACTIVATIONS[cfg.activation]
        self.input = nn.Conv2d(N_PLANES, cfg.channels, 3, padding=1)
        self.blocks = nn.ModuleList(ResidualBlock(cfg) for _ in range(cfg.blocks))
        self.policy_head = ConvPolicyHead(cfg) if cfg.policy == "convolution" else ClassicalPolicyHead(cfg)
        self.value_head = ValueHead(cfg)
        self.moves_left_head = MovesLeftHead(cfg) if cfg.moves_left_channels else None

    def body(self, x: torch.Tensor) -> torch.Tensor:
        """Input planes ``(B, 112, 8, 8)`` → the tower's output ``(B, C, 8, 8)``."""
        h = self.act(self.input(x))
        for block in self.blocks:
            h = block(h)
        return h

    def forward(self, x: torch.Tensor) -> NetOutput:
        if (
            INFERENCE_FAST_PATH
            and not torch.is_grad_enabled()
            and x.device.type == "cpu"
            and x.dtype == torch.float32
            and self.input.weight.dtype == torch.float32
        ):
            return self._inference_forward(x)
        h = self.body(x)
        policy = castling_to_ours(self.policy_head(h), x)  # Lc0 scores castling on e1h1/e1a1
        return NetOutput(policy, self.value_head(h))

    # ------------------------------------------------------------ inference path (module docstring)

    def clear_inference_cache(self) -> None:
        """Drop the cached channels-last weights of the inference path (rebuilt at the next call)."""
        self.__dict__.pop("_inference_cache", None)

    def _conv_weights(self) -> list[torch.Tensor]:
        """Every 3×3/1×1 convolution weight the inference path uses, in a fixed order."""
        convs = [self.input] + [c for b in cast(Iterable[ResidualBlock], self.blocks) for c in (b.conv1, b.conv2)]
        head = self.policy_head
        convs += [head.conv1, head.conv2] if isinstance(head, ConvPolicyHead) else [head.conv]
        return [c.weight for c in convs + [self.value_head.conv]]

    def _inference_weights(self) -> list[torch.Tensor]:
        """Channels-last copies of :meth:`_conv_weights` (the policy head's last convolution cut to Lc0's
        73 planes), cached under the weights' identities and versions."""
        weights = self._conv_weights()
        try:
            key = tuple((w.data_ptr(), w._version) for w in weights)
        except RuntimeError:  # inference tensors (made under inference_mode) have no version: no cache
            key = None
        cache = self.__dict__.get("_inference_cache")
        if key is None or cache is None or cache[0] != key:
            packed = [w.detach().contiguous(memory_format=_CHANNELS_LAST) for w in weights]
            if isinstance(self.policy_head, ConvPolicyHead):
                k = 2 * len(self.blocks) + 2  # input, the blocks, policy conv1, policy conv2
                packed[k] = weights[k].detach()[:CONV_POLICY_PLANES].contiguous(memory_format=_CHANNELS_LAST)
            cache = (key, packed)
            self.__dict__["_inference_cache"] = cache  # a plain attribute: not a buffer, not saved
        return cache[1]

    def _inference_forward(self, x: torch.Tensor) -> NetOutput:
        """What :meth:`forward` computes, channels-last and functional (no autograd)."""
        relu = self.cfg.activation == "relu"

        def act_(t: torch.Tensor) -> torch.Tensor:  # in place: every input here is a fresh tensor
            return t.relu_() if relu else F.mish(t, inplace=True)

        w = iter(self._inference_weights())
        h = act_(F.conv2d(x.contiguous(memory_format=_CHANNELS_LAST), next(w), self.input.bias, padding=1))
        C = self.cfg.channels
        for block in cast(Iterable[ResidualBlock], self.blocks):
            z = F.conv2d(act_(F.conv2d(h, next(w), block.conv1.bias, padding=1)), next(w), block.conv2.bias, padding=1)
            if block.se is not None:
                se = block.se
                s = F.linear(
                    act_(F.linear(z.mean(dim=(2, 3)), se.fc1.weight, se.fc1.bias)), se.fc2.weight, se.fc2.bias
                )  # (B, 2C)
                z = torch.addcmul(s[:, C:, None, None], torch.sigmoid(s[:, :C, None, None]), z)
            h = act_(z.add_(h))
        head = self.policy_head
        if isinstance(head, ConvPolicyHead):
            assert head.conv2.bias is not None  # nn.Conv2d's default bias=True
            planes = F.conv2d(
                act_(F.conv2d(h, next(w), head.conv1.bias, padding=1)),
                next(w),
                head.conv2.bias[:CONV_POLICY_PLANES],
                padding=1,
            ).flatten(1)  # (B, 73*64)
            policy = F.pad(planes, (0, 1), value=UNMAPPED_LOGIT)[:, head.index]
        else:
            p = act_(F.conv2d(h, next(w), head.conv.bias)).flatten(1)
            policy = policy_from_1858(F.linear(p, head.fc.weight, head.fc.bias), fill=UNMAPPED_LOGIT)
        vh = self.value_head
        v = act_(F.conv2d(h, next(w), vh.conv.bias)).flatten(1)
        out = F.linear(act_(F.linear(v, vh.fc1.weight, vh.fc1.bias)), vh.fc2.weight, vh.fc2.bias)
        if not vh.wdl:
            out = torch.cat([out, torch.full_like(out, UNMAPPED_LOGIT), -out], dim=1)
        return NetOutput(castling_to_ours(policy, x), out)

    def moves_left(self, x: torch.Tensor) -> torch.Tensor:
        """Lc0's moves-left estimate ``(B,)`` in plies (networks with that head)."""
        if self.moves_left_head is None:
            raise ValueError("this network has no moves-left head (ClassicConfig.moves_left_channels = 0)")
        return self.moves_left_head(self.body(x))

    def policy_logit_layers(self) -> list[nn.Linear | nn.Conv2d]:
        """The layer whose weight and bias, scaled by c, scale every policy logit by c (``temper.py``):
        the last convolution of a convolutional policy head, the fully connected layer of a classical one."""
        head = self.policy_head
        return [head.conv2 if isinstance(head, ConvPolicyHead) else head.fc]

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by learning-rate group (paper Appendix G): the input convolution and every
        block but the last (backbone), the last residual block, the policy head, the value head
        (the moves-left head has no parameters: it is carried, not trained)."""
        backbone = list(self.input.parameters()) + [p for b in self.blocks[:-1] for p in b.parameters()]
        return {
            "backbone": backbone,
            "final_block": list(self.blocks[-1].parameters()),
            "policy_head": list(self.policy_head.parameters()),
            "value_head": list(self.value_head.parameters()),
        }


def count_params(cfg: ClassicConfig) -> int:
    """Parameter count of ``cfg``, built on the meta device (no memory)."""
    with torch.device("meta"):
        return sum(p.numel() for p in ClassicResNet(cfg).parameters())


def check_stored(config: object, state: dict, where: str) -> None:
    """A stored (config, state dict) pair's depth, before any model is built: a config claiming
    more (or fewer) residual blocks than the tensors hold is refused here (every tensor's shape
    is then checked on the meta device by ``seam.build_network``)."""
    blocks = {str(k).split(".")[1] for k in state if str(k).startswith("blocks.")}
    if not isinstance(config, dict) or config.get("blocks") != len(blocks):
        claimed = config.get("blocks") if isinstance(config, dict) else None
        raise ModelLoadError(
            f"{where}: the stored classic config claims {claimed} residual blocks, the "
            f"stored weights hold {len(blocks)}"
        )


class WdlHeadMissingError(ModelLoadError):
    """A network without a WDL value head used where one is needed."""


def require_wdl_head(model: nn.Module, purpose: str, where: str = "the network") -> None:
    """Refuse (``WdlHeadMissingError``) a network whose value head is not WDL for ``purpose``
    (e.g. "fine-tuning with pdx: τ = H(WDL) and the WDL value loss"). Any family: a config
    without a ``wdl_head`` property is taken to have one (the Chessformer always does)."""
    cfg = getattr(model, "cfg", None)
    if getattr(cfg, "wdl_head", True):
        return
    raise WdlHeadMissingError(
        f"{where} ({getattr(cfg, 'family', '?')} family, {getattr(cfg, 'name', '?')}) has a classical value "
        f"head (VALUE_CLASSICAL: one tanh scalar q, no draw probability); {purpose} needs a WDL value head "
        f"(VALUE_WDL). It can still be evaluated and played: its W/D/L is ((1+q)/2, 0, (1-q)/2)."
    )
