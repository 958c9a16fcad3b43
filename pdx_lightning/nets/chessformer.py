"""The Chessformer (paper Appendix B): 64 square tokens, smolgen attention bias,
attention policy head, WDL value head — the structure of Lc0's attention-body
networks (BT4), in PyTorch.

Shapes: input ``x`` is ``(B, 112, 8, 8)`` (see ``encoding.py``); outputs are
policy logits ``(B, 4288)`` in the layout of ``moves.py`` and WDL logits
``(B, 3)`` from the side to move's view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from pdx_lightning.chesscore.moves import N_FROM_TO
from pdx_lightning.nets.lc0_policy import castling_to_ours
from pdx_lightning.nets.seam import ModelLoadError, NetOutput

__all__ = [
    "ModelConfig",
    "Chessformer",
    "PRESETS",
    "PRESET_PARAMS",
    "NetOutput",
    "count_params",
    "check_stored",
    "castling_to_ours",
    "lc0_position_table",
]

N_PLANES = 112
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "mish": F.mish,
    "silu": F.silu,
    "relu": F.relu,
    "gelu": F.gelu,
}


@dataclass(frozen=True)
class ModelConfig:
    """Chessformer hyperparameters. Presets in ``PRESETS``; build with ``from_name``.

    ``family`` is a class attribute, not a field: ``to_dict()`` holds the fields only, so
    ``ModelConfig(**cfg.to_dict())`` works, and so do dicts stored before families existed.
    Files record the family beside the config (``nets/files.py``)."""

    family: ClassVar[str] = "chessformer"
    name: str = "custom"
    embed_dim: int = 64  # d: token width
    n_layers: int = 4
    n_heads: int = 4
    ffn_dim: int = 128
    smolgen_compress: int = 8  # per-token channels fed to smolgen (Lc0: 32)
    smolgen_hidden: int = 64  # smolgen's hidden width (Lc0: 256)
    smolgen_gen: int = 64  # per-head code expanded to 64×64 by a shared linear map (Lc0: 256)
    input_dense: int = 0  # Lc0 "pos_info": dense map of the current position's 12 piece planes
    # to this many extra features per square (0 = off)
    policy_dim: int = 64  # width of the attention policy head's query/key space
    value_dim: int = 32  # per-token width of the value head
    value_pool: Literal["mean", "flatten"] = "mean"  # paper: mean-pool; Lc0 nets: flatten
    rule50_scale: float = 1.0 / 99.0  # the raw rule-50 plane is multiplied by this on input
    activation: Literal["mish", "silu", "relu", "gelu"] = "silu"
    # Lc0 nets use mish; on CPU torch's mish costs ~12× silu (measured 18 ms vs 1.5 ms on a
    # (256, 64, 192) tensor, 2 cores), so the CPU presets use silu.

    # --- Lc0 attention-body structure (nets/lc0/attention.py). The defaults are the original pdx
    # Chessformer, so the tiny/small presets and their saved weights compute what they always did.
    input_posenc: bool = False  # append Lc0's fixed 64-wide square table to each square's input
    # (T82's INPUT_EMBEDDING_PE_MAP)
    embed_ln: bool = True  # LayerNorm after the input embedding's activation (Lc0: PE_DENSE only)
    embed_ffn_dim: int = 0  # BT4's FFN sublayer after the gates, with its own LayerNorm (0 = off)
    ln_eps: float = 1e-5  # embedding and encoder LayerNorms (Lc0: 1e-3 for PE_DENSE nets, else 1e-6)
    smolgen_ln_eps: float = 1e-5  # smolgen's two LayerNorms (Lc0: always 1e-3)
    deepnorm: Literal["scale_skip", "scale_sublayer"] = "scale_skip"
    # scale_skip: LN(α·x + f(x)), α = (2L)^¼ (lczero-training's training graph);
    # scale_sublayer: LN(x + f(x)/α) (what the Lc0 engine computes). Equal up to the LN epsilon.
    promo_offsets_scaled: bool = True  # promotion offsets scaled by 1/√policy_dim with the q·k logits
    # (pdx); Lc0 adds them unscaled to the scaled logits
    policy_embed_dim: int = 0  # width of the policy head's embedding (0 = policy_dim; Lc0 may differ)
    policy_castling: Literal["king_to", "king_takes_rook"] = "king_to"
    # which square pair the raw attention logits score castling on: the king's destination
    # (e1g1, moves.py) or Lc0's king-takes-rook (e1h1). The output is always in moves.py's layout.
    moves_left_dim: int = 0  # Lc0 moves-left head, carried (buffers, never trained); 0 = none
    moves_left_hidden: int = 128

    def __post_init__(self) -> None:
        for f in (
            "embed_dim",
            "n_layers",
            "n_heads",
            "ffn_dim",
            "smolgen_compress",
            "smolgen_hidden",
            "smolgen_gen",
            "policy_dim",
            "value_dim",
            "moves_left_hidden",
            "ln_eps",
            "smolgen_ln_eps",
        ):
            if getattr(self, f) <= 0:
                raise ValueError(f"ModelConfig.{f} must be positive, got {getattr(self, f)}")
        for f in ("embed_ffn_dim", "policy_embed_dim", "moves_left_dim"):
            if getattr(self, f) < 0:
                raise ValueError(f"ModelConfig.{f} must be >= 0, got {getattr(self, f)}")
        if self.deepnorm not in ("scale_skip", "scale_sublayer"):
            raise ValueError(f"deepnorm must be 'scale_skip' or 'scale_sublayer', got {self.deepnorm!r}")
        if self.policy_castling not in ("king_to", "king_takes_rook"):
            raise ValueError(f"policy_castling must be 'king_to' or 'king_takes_rook', got {self.policy_castling!r}")
        if self.embed_dim % self.n_heads:
            raise ValueError(f"embed_dim {self.embed_dim} is not divisible by n_heads {self.n_heads}")
        if self.input_dense < 0:
            raise ValueError(f"ModelConfig.input_dense must be >= 0, got {self.input_dense}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}")
        if self.value_pool not in ("mean", "flatten"):
            raise ValueError(f"value_pool must be 'mean' or 'flatten', got {self.value_pool!r}")

    @classmethod
    def from_name(cls, name: str, **overrides) -> ModelConfig:
        if name not in PRESETS:
            raise KeyError(f"unknown model preset {name!r}; presets: {', '.join(PRESETS)}")
        return replace(PRESETS[name], **overrides)

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ModelConfig] = {
    # tests only
    "tiny": ModelConfig(
        "tiny",
        embed_dim=32,
        n_layers=2,
        n_heads=2,
        ffn_dim=64,
        smolgen_compress=4,
        smolgen_hidden=32,
        smolgen_gen=16,
        policy_dim=32,
        value_dim=16,
    ),
    # the bundled CPU base
    # the bundled CPU base: sized so a 256-game self-play step stays under ~1 s on 2 cores
    "small": ModelConfig(
        "small",
        embed_dim=64,
        n_layers=4,
        n_heads=4,
        ffn_dim=128,
        smolgen_compress=8,
        smolgen_hidden=64,
        smolgen_gen=32,
        policy_dim=64,
        value_dim=32,
    ),
    # BT4-1024x15x32h, the paper's network, as Lc0 computes it (nets/lc0/attention.py): PE_DENSE
    # embedding (512-wide board preprocessing, LayerNorm, gates, embedding FFN), post-LN encoders with
    # DeepNorm on the sublayer, LayerNorm eps 1e-3, unscaled promotion offsets, king-takes-rook
    # castling, raw rule-50 input, flatten value head, moves-left head. A real BT4 file is read
    # with its own sizes (load_lc0); this preset fixes the shapes for tests and benchmarks.
    "bt4": ModelConfig(
        "bt4",
        embed_dim=1024,
        n_layers=15,
        n_heads=32,
        ffn_dim=1536,
        smolgen_compress=32,
        smolgen_hidden=256,
        smolgen_gen=256,
        input_dense=512,
        policy_dim=1024,
        value_dim=128,
        value_pool="flatten",
        rule50_scale=1.0,
        activation="mish",
        embed_ffn_dim=1536,
        ln_eps=1e-3,
        smolgen_ln_eps=1e-3,
        deepnorm="scale_sublayer",
        promo_offsets_scaled=False,
        policy_castling="king_takes_rook",
        moves_left_dim=32,
    ),
}
# Parameter counts of the presets (pinned by tests/nets/test_chessformer.py).
PRESET_PARAMS = {"tiny": 115_859, "small": 468_131, "bt4": 184_958_851}


class DeepNorm:
    """The pre-LayerNorm residual sum of cfg's DeepNorm variant: ``α·x + f`` (scale_skip,
    α = (2L)^¼) or ``x + f·β`` (scale_sublayer, β = (2L)^-¼, Lc0's ``alpha``)."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.alpha = (2.0 * cfg.n_layers) ** 0.25 if cfg.deepnorm == "scale_skip" else None
        self.beta = (2.0 * cfg.n_layers) ** -0.25

    def __call__(self, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        return x * self.alpha + f if self.alpha is not None else x + f * self.beta


def lc0_position_table() -> torch.Tensor:
    """Lc0's fixed ``kPosEncoding`` (64, 64) square table (PE_MAP embedding): row ``s`` is −1 at
    ``s``, 1 on every square a queen or a knight on ``s`` reaches, 0 elsewhere."""
    sq = torch.arange(64)
    df = (sq[:, None] % 8 - sq[None, :] % 8).abs()
    dr = (sq[:, None] // 8 - sq[None, :] // 8).abs()
    reach = (df == 0) | (dr == 0) | (df == dr) | ((df == 1) & (dr == 2)) | ((df == 2) & (dr == 1))
    table = reach.float()
    table.fill_diagonal_(-1.0)
    return table


class Smolgen(nn.Module):
    """Per-head 64×64 additive attention biases from a compressed board (Lc0's smolgen / GAB)."""

    def __init__(self, cfg: ModelConfig, shared: nn.Linear) -> None:
        super().__init__()
        self.n_heads, self.gen = cfg.n_heads, cfg.smolgen_gen
        self.compress = nn.Linear(cfg.embed_dim, cfg.smolgen_compress, bias=False)
        self.dense1 = nn.Linear(64 * cfg.smolgen_compress, cfg.smolgen_hidden)
        self.ln1 = nn.LayerNorm(cfg.smolgen_hidden, eps=cfg.smolgen_ln_eps)
        self.dense2 = nn.Linear(cfg.smolgen_hidden, cfg.n_heads * cfg.smolgen_gen)
        self.ln2 = nn.LayerNorm(cfg.n_heads * cfg.smolgen_gen, eps=cfg.smolgen_ln_eps)
        self.shared = [shared]  # a list, so the shared map is registered once, on the model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        c = self.compress(x).reshape(B, -1)  # (B, 64*compress)
        h = self.ln1(F.silu(self.dense1(c)))  # (B, hidden)
        g = self.ln2(F.silu(self.dense2(h)))  # (B, heads*gen)
        g = g.reshape(B, self.n_heads, self.gen)  # (B, H, gen)
        return self.shared[0](g).reshape(B, self.n_heads, 64, 64)  # (B, H, 64, 64)


class EncoderLayer(nn.Module):
    """Post-LN encoder block with DeepNorm residual scaling, as in Lc0's attention body."""

    def __init__(self, cfg: ModelConfig, shared: nn.Linear) -> None:
        super().__init__()
        d = cfg.embed_dim
        self.n_heads = cfg.n_heads
        self.residual = DeepNorm(cfg)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.smolgen = Smolgen(cfg, shared)
        self.ln1 = nn.LayerNorm(d, eps=cfg.ln_eps)
        self.ffn1 = nn.Linear(d, cfg.ffn_dim)
        self.ffn2 = nn.Linear(cfg.ffn_dim, d)
        self.ln2 = nn.LayerNorm(d, eps=cfg.ln_eps)
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # 3×(B,H,T,dh)
        bias = self.smolgen(x)  # (B, H, 64, 64)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # (B, H, T, dh)
        a = self.out(a.transpose(1, 2).reshape(B, T, d))  # (B, T, d)
        x = self.ln1(self.residual(x, a))
        x = self.ln2(self.residual(x, self.ffn2(self.act(self.ffn1(x)))))
        return x


class PolicyHead(nn.Module):
    """Lc0's attention policy: from/to embeddings → 64×64 logits, plus promotion offsets."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        p = cfg.policy_dim
        pe = cfg.policy_embed_dim or p
        self.embed = nn.Linear(cfg.embed_dim, pe)
        self.wq = nn.Linear(pe, p)
        self.wk = nn.Linear(pe, p)
        self.promo = nn.Linear(p, 4, bias=False)
        self.scale = p**-0.5
        self.promo_scale = self.scale if cfg.promo_offsets_scaled else None
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B = x.shape[0]
        e = self.act(self.embed(x))  # (B, 64, pe)
        q, k = self.wq(e), self.wk(e)
        logits = torch.matmul(q, k.transpose(1, 2)) * self.scale  # (B, 64 from, 64 to)
        off = self.promo(k[:, 56:64]).transpose(1, 2)  # (B, 4, 8 to-files)
        if self.promo_scale is not None:
            off = off * self.promo_scale
        off = off[:, :3] + off[:, 3:4]  # (B, 3: q r b, 8); knight offset added
        base = logits[:, 48:56, 56:64]  # (B, 8 from-files, 8 to-files)
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
        v = self.act(self.embed(x))  # (B, 64, dv)
        v = v.flatten(1) if self.pool == "flatten" else v.mean(1)  # (B, 64*dv) or (B, dv)
        return self.out(self.act(self.fc(v)))  # (B, 3)


class MovesLeftHead(nn.Module):
    """Lc0's moves-left head (expected plies to the end), carried so an imported network
    exports whole. Its weights are buffers: the fine-tuning objective has no moves-left
    term, so they are never in an optimizer and never need a DDP gradient."""

    # buffers (register_buffer)
    embed_weight: torch.Tensor
    embed_bias: torch.Tensor
    fc1_weight: torch.Tensor
    fc1_bias: torch.Tensor
    fc2_weight: torch.Tensor
    fc2_bias: torch.Tensor

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        m, h, d = cfg.moves_left_dim, cfg.moves_left_hidden, cfg.embed_dim
        for name, shape in (
            ("embed_weight", (m, d)),
            ("embed_bias", (m,)),
            ("fc1_weight", (h, 64 * m)),
            ("fc1_bias", (h,)),
            ("fc2_weight", (1, h)),
            ("fc2_bias", (1,)),
        ):
            self.register_buffer(name, torch.zeros(shape))
        self.act = ACTIVATIONS[cfg.activation]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.act(F.linear(x, self.embed_weight, self.embed_bias)).flatten(1)  # (B, 64*m)
        m = self.act(F.linear(m, self.fc1_weight, self.fc1_bias))  # (B, hidden)
        return F.relu(F.linear(m, self.fc2_weight, self.fc2_bias)).squeeze(-1)  # (B,) plies


class Chessformer(nn.Module):
    # buffers (register_buffer); posenc only where cfg.input_posenc
    plane_scale: torch.Tensor
    posenc: torch.Tensor

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.embed_dim
        self.input_dense = nn.Linear(64 * 12, 64 * cfg.input_dense) if cfg.input_dense else None
        n_in = N_PLANES + cfg.input_dense + (64 if cfg.input_posenc else 0)
        self.embed = nn.Linear(n_in, d)
        self.embed_ln = nn.LayerNorm(d, eps=cfg.ln_eps) if cfg.embed_ln else None
        self.gate_mul = nn.Parameter(torch.ones(64, d))
        self.gate_add = nn.Parameter(torch.zeros(64, d))
        if cfg.embed_ffn_dim:
            self.embed_ffn1 = nn.Linear(d, cfg.embed_ffn_dim)
            self.embed_ffn2 = nn.Linear(cfg.embed_ffn_dim, d)
            self.embed_ln2 = nn.LayerNorm(d, eps=cfg.ln_eps)
            self.embed_residual = DeepNorm(cfg)
        self.smolgen_shared = nn.Linear(cfg.smolgen_gen, 64 * 64, bias=False)
        self.layers = nn.ModuleList(EncoderLayer(cfg, self.smolgen_shared) for _ in range(cfg.n_layers))
        self.policy_head = PolicyHead(cfg)
        self.value_head = ValueHead(cfg)
        self.moves_left_head = MovesLeftHead(cfg) if cfg.moves_left_dim else None
        scale = torch.ones(N_PLANES)
        scale[109] = cfg.rule50_scale  # the raw rule-50 ply count (encoding.py)
        self.register_buffer("plane_scale", scale, persistent=False)
        if cfg.input_posenc:
            self.register_buffer("posenc", lc0_position_table(), persistent=False)
        self.act = ACTIVATIONS[cfg.activation]

    def body(self, x: torch.Tensor) -> torch.Tensor:
        """Input planes ``(B, 112, 8, 8)`` → encoder output ``(B, 64, d)``."""
        B = x.shape[0]
        t = x.reshape(B, N_PLANES, 64).transpose(1, 2) * self.plane_scale  # (B, 64, 112)
        if self.input_dense is not None:
            pos = self.input_dense(t[:, :, :12].reshape(B, 64 * 12))  # (B, 64*input_dense)
            t = torch.cat([t, pos.reshape(B, 64, -1)], dim=2)
        if self.cfg.input_posenc:
            t = torch.cat([t, self.posenc.expand(B, 64, 64)], dim=2)  # (B, 64, 112+64)
        h = self.act(self.embed(t))  # (B, 64, d)
        if self.embed_ln is not None:
            h = self.embed_ln(h)
        h = h * self.gate_mul + self.gate_add
        if self.cfg.embed_ffn_dim:
            h = self.embed_ln2(self.embed_residual(h, self.embed_ffn2(self.act(self.embed_ffn1(h)))))
        for layer in self.layers:
            h = layer(h)
        return h

    def forward(self, x: torch.Tensor) -> NetOutput:
        h = self.body(x)
        policy = self.policy_head(h)
        if self.cfg.policy_castling == "king_takes_rook":
            policy = castling_to_ours(policy, x)
        return NetOutput(policy, self.value_head(h))

    def moves_left(self, x: torch.Tensor) -> torch.Tensor:
        """Lc0's moves-left estimate ``(B,)`` in plies (networks imported with that head)."""
        if self.moves_left_head is None:
            raise ValueError("this network has no moves-left head (ModelConfig.moves_left_dim = 0)")
        return self.moves_left_head(self.body(x))

    def policy_logit_layers(self) -> list[nn.Linear | nn.Conv2d]:
        """The layer whose weight and bias, scaled by c, scale every policy logit by c (``temper.py``):
        the attention policy's key projection (the q·k logits and the promotion offsets are linear in k)."""
        return [self.policy_head.wk]

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


def check_stored(config: object, state: dict, where: str) -> None:
    """A stored (config, state dict) pair's encoder depth, before any model is built: a config
    claiming more (or fewer) encoder layers than the tensors hold is refused here, so a lying
    config cannot make even the meta-device build loop over layers the file lacks. Every
    tensor's shape is then checked on the meta device (``seam.build_network``)."""
    layers = {str(k).split(".")[1] for k in state if str(k).startswith("layers.")}
    if not isinstance(config, dict) or config.get("n_layers", len(layers)) != len(layers):
        raise ModelLoadError(
            f"{where}: the stored model config does not describe the stored weights "
            f"({len(layers)} encoder layers stored)"
        )
