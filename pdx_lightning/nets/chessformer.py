"""The Chessformer (paper Appendix B): 64 square tokens, smolgen attention bias,
attention policy head, WDL value head — the structure of Lc0's attention-body
networks (BT4), in PyTorch.

Shapes: input ``x`` is ``(B, 112, 8, 8)`` (see ``encoding.py``); outputs are
policy logits ``(B, 4288)`` in the layout of ``moves.py`` and WDL logits
``(B, 3)`` from the side to move's view.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Literal, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from pdx_lightning.moves import N_FROM_TO, POLICY_SIZE

N_PLANES = 112
ACTIVATIONS = {"mish": F.mish, "silu": F.silu, "relu": F.relu, "gelu": F.gelu}


@dataclass(frozen=True)
class ModelConfig:
    """Chessformer hyperparameters. Presets in ``PRESETS``; build with ``from_name``."""

    name: str = "custom"
    embed_dim: int = 64            # d: token width
    n_layers: int = 4
    n_heads: int = 4
    ffn_dim: int = 128
    smolgen_compress: int = 8      # per-token channels fed to smolgen (Lc0: 32)
    smolgen_hidden: int = 64       # smolgen's hidden width (Lc0: 256)
    smolgen_gen: int = 64          # per-head code expanded to 64×64 by a shared linear map (Lc0: 256)
    input_dense: int = 0           # Lc0 "pos_info": dense map of the current position's 12 piece planes
                                   # to this many extra features per square (0 = off)
    policy_dim: int = 64           # width of the attention policy head's query/key space
    value_dim: int = 32            # per-token width of the value head
    value_pool: Literal["mean", "flatten"] = "mean"  # paper: mean-pool; Lc0 nets: flatten
    rule50_scale: float = 1.0 / 99.0  # the raw rule-50 plane is multiplied by this on input
    activation: Literal["mish", "silu", "relu", "gelu"] = "silu"
    # Lc0 nets use mish; on CPU torch's mish costs ~12× silu (measured 18 ms vs 1.5 ms on a
    # (256, 64, 192) tensor, 2 cores), so the CPU presets use silu.

    def __post_init__(self) -> None:
        for f in ("embed_dim", "n_layers", "n_heads", "ffn_dim", "smolgen_compress", "smolgen_hidden",
                  "smolgen_gen", "policy_dim", "value_dim"):
            if getattr(self, f) <= 0:
                raise ValueError(f"ModelConfig.{f} must be positive, got {getattr(self, f)}")
        if self.embed_dim % self.n_heads:
            raise ValueError(f"embed_dim {self.embed_dim} is not divisible by n_heads {self.n_heads}")
        if self.input_dense < 0:
            raise ValueError(f"ModelConfig.input_dense must be >= 0, got {self.input_dense}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.value_pool not in ("mean", "flatten"):
            raise ValueError(f"value_pool must be 'mean' or 'flatten', got {self.value_pool!r}")

    @classmethod
    def from_name(cls, name: str, **overrides) -> "ModelConfig":
        if name not in PRESETS:
            raise KeyError(f"unknown model preset {name!r}; presets: {', '.join(PRESETS)}")
        return replace(PRESETS[name], **overrides)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ModelConfig] = {
    # tests only
    "tiny": ModelConfig("tiny", embed_dim=32, n_layers=2, n_heads=2, ffn_dim=64, smolgen_compress=4,
                        smolgen_hidden=32, smolgen_gen=16, policy_dim=32, value_dim=16),
    # the bundled CPU base
    # the bundled CPU base: sized so a 256-game self-play step stays under ~1 s on 2 cores
    "small": ModelConfig("small", embed_dim=64, n_layers=4, n_heads=4, ffn_dim=128, smolgen_compress=8,
                         smolgen_hidden=64, smolgen_gen=32, policy_dim=64, value_dim=32),
    # BT4-1024x15x32h, the paper's network (Lc0 structure: pos_info dense, flatten value head)
    "bt4": ModelConfig("bt4", embed_dim=1024, n_layers=15, n_heads=32, ffn_dim=1536, smolgen_compress=32,
                       smolgen_hidden=256, smolgen_gen=256, input_dense=512, policy_dim=1024, value_dim=32,
                       value_pool="flatten", activation="mish"),
}
# Parameter counts of the presets (pinned by tests/test_chessformer.py).
PRESET_PARAMS = {"tiny": 0, "small": 0, "bt4": 0}


class NetOutput(NamedTuple):
    policy: torch.Tensor  # (B, 4288) logits
    wdl: torch.Tensor     # (B, 3) logits, side to move's view: win, draw, loss


class Smolgen(nn.Module):
    """Per-head 64×64 additive attention biases from a compressed board (Lc0's smolgen / GAB)."""

    def __init__(self, cfg: ModelConfig, shared: nn.Linear) -> None:
        super().__init__()
        self.n_heads, self.gen = cfg.n_heads, cfg.smolgen_gen
        self.compress = nn.Linear(cfg.embed_dim, cfg.smolgen_compress, bias=False)
        self.dense1 = nn.Linear(64 * cfg.smolgen_compress, cfg.smolgen_hidden)
        self.ln1 = nn.LayerNorm(cfg.smolgen_hidden)
        self.dense2 = nn.Linear(cfg.smolgen_hidden, cfg.n_heads * cfg.smolgen_gen)
        self.ln2 = nn.LayerNorm(cfg.n_heads * cfg.smolgen_gen)
        self.shared = [shared]  # a list, so the shared map is registered once, on the model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        c = self.compress(x).reshape(B, -1)                     # (B, 64*compress)
        h = self.ln1(F.silu(self.dense1(c)))                    # (B, hidden)
        g = self.ln2(F.silu(self.dense2(h)))                    # (B, heads*gen)
        g = g.reshape(B, self.n_heads, self.gen)                # (B, H, gen)
        return self.shared[0](g).reshape(B, self.n_heads, 64, 64)  # (B, H, 64, 64)


class EncoderLayer(nn.Module):
    """Post-LN encoder block with DeepNorm residual scaling, as in Lc0's attention body."""

    def __init__(self, cfg: ModelConfig, shared: nn.Linear) -> None:
        super().__init__()
        d = cfg.embed_dim
        self.n_heads = cfg.n_heads
        self.alpha = (2.0 * cfg.n_layers) ** 0.25
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.smolgen = Smolgen(cfg, shared)
        self.ln1 = nn.LayerNorm(d)
        self.ffn1 = nn.Linear(d, cfg.ffn_dim)
        self.ffn2 = nn.Linear(cfg.ffn_dim, d)
        self.ln2 = nn.LayerNorm(d)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # 3×(B,H,T,dh)
        bias = self.smolgen(x)                                           # (B, H, 64, 64)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)      # (B, H, T, dh)
        a = self.out(a.transpose(1, 2).reshape(B, T, d))                 # (B, T, d)
        x = self.ln1(x * self.alpha + a)
        x = self.ln2(x * self.alpha + self.ffn2(self.act(self.ffn1(x))))
        return x


class PolicyHead(nn.Module):
    """Lc0's attention policy: from/to embeddings → 64×64 logits, plus promotion offsets."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        p = cfg.policy_dim
        self.embed = nn.Linear(cfg.embed_dim, p)
        self.wq = nn.Linear(p, p)
        self.wk = nn.Linear(p, p)
        self.promo = nn.Linear(p, 4, bias=False)
        self.scale = p ** -0.5
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        e = self.act(self.embed(x))                                    # (B, 64, p)
        q, k = self.wq(e), self.wk(e)
        logits = torch.matmul(q, k.transpose(1, 2)) * self.scale    # (B, 64 from, 64 to)
        off = self.promo(k[:, 56:64]).transpose(1, 2) * self.scale   # (B, 4, 8 to-files)
        off = off[:, :3] + off[:, 3:4]                               # (B, 3: q r b, 8)
        base = logits[:, 48:56, 56:64]                               # (B, 8 from-files, 8 to-files)
        promo = base.unsqueeze(-1) + off.permute(0, 2, 1).unsqueeze(1)  # (B, 8, 8, 3)
        return torch.cat([logits.reshape(B, N_FROM_TO), promo.reshape(B, -1)], dim=1)  # (B, 4288)


class ValueHead(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.pool = cfg.value_pool
        self.embed = nn.Linear(cfg.embed_dim, cfg.value_dim)
        width = cfg.value_dim * (64 if self.pool == "flatten" else 1)
        self.fc = nn.Linear(width, 128)
        self.out = nn.Linear(128, 3)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.act(self.embed(x))                                    # (B, 64, dv)
        v = v.flatten(1) if self.pool == "flatten" else v.mean(1)    # (B, 64*dv) or (B, dv)
        return self.out(self.act(self.fc(v)))                          # (B, 3)


class Chessformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.embed_dim
        self.input_dense = nn.Linear(64 * 12, 64 * cfg.input_dense) if cfg.input_dense else None
        self.embed = nn.Linear(N_PLANES + cfg.input_dense, d)
        self.embed_ln = nn.LayerNorm(d)
        self.gate_mul = nn.Parameter(torch.ones(64, d))
        self.gate_add = nn.Parameter(torch.zeros(64, d))
        self.smolgen_shared = nn.Linear(cfg.smolgen_gen, 64 * 64, bias=False)
        self.layers = nn.ModuleList(EncoderLayer(cfg, self.smolgen_shared) for _ in range(cfg.n_layers))
        self.policy_head = PolicyHead(cfg)
        self.value_head = ValueHead(cfg)
        scale = torch.ones(N_PLANES)
        scale[109] = cfg.rule50_scale  # the raw rule-50 ply count (encoding.py)
        self.register_buffer("plane_scale", scale, persistent=False)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> NetOutput:
        B = x.shape[0]
        t = x.reshape(B, N_PLANES, 64).transpose(1, 2) * self.plane_scale  # (B, 64, 112)
        if self.input_dense is not None:
            pos = self.input_dense(t[:, :, :12].reshape(B, 64 * 12))       # (B, 64*input_dense)
            t = torch.cat([t, pos.reshape(B, 64, -1)], dim=2)
        h = self.embed_ln(self.act(self.embed(t)))                            # (B, 64, d)
        h = h * self.gate_mul + self.gate_add
        for layer in self.layers:
            h = layer(h)
        return NetOutput(self.policy_head(h), self.value_head(h))

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        """Parameters by learning-rate group (paper Appendix G): backbone, final block, heads."""
        final = set(map(id, self.layers[-1].parameters()))
        heads = {"policy_head": list(self.policy_head.parameters()), "value_head": list(self.value_head.parameters())}
        head_ids = {id(p) for ps in heads.values() for p in ps}
        backbone = [p for p in self.parameters() if id(p) not in final and id(p) not in head_ids]
        return {"backbone": backbone, "final_block": list(self.layers[-1].parameters()), **heads}


def count_params(cfg: ModelConfig) -> int:
    """Parameter count of ``cfg``, built on the meta device (no memory)."""
    with torch.device("meta"):
        return sum(p.numel() for p in Chessformer(cfg).parameters())
