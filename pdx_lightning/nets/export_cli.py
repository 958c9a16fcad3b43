"""``pdx export lc0``: write any loadable network, or a blend of two, as an Lc0 ``.pb.gz`` (``nets/lc0/``).

It sits beside ``lc0/`` rather than inside it: it loads models by name (``files.py``), and
``files.py`` reads ``.pb.gz`` files through ``lc0/``. ``--blend B --alpha α`` writes
(1 − α)·A + α·B instead of A (``blend.py``); ``--policy-temperature T`` divides its policy logits by T
(``temper.py``); ``pdx export network`` (``export_network.py``) writes
the same to a pdx ``.pt`` network file, for networks Lc0 cannot express.
"""

from __future__ import annotations

import argparse
import sys

import torch

from pdx_lightning import argtypes
from pdx_lightning.nets.arguments import add_network_arguments
from pdx_lightning.nets.blend import NetworkBlendError, blend_networks
from pdx_lightning.nets.files import ModelLoadError, load_model
from pdx_lightning.nets.lc0 import Lc0ExportError, export_lc0
from pdx_lightning.nets.lc0 import schema as P
from pdx_lightning.nets.temper import PolicyTemperatureError, bake_policy_temperature


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The network to write: ``--model`` A, or with ``--blend B --alpha α`` the blend of A and B."""
    add_network_arguments(
        parser,
        "network to export (base:<name>, a .pt/.ckpt, an Lc0 .pb.gz); A of a blend",
        repeat=False,
        weights_help="which weights of a checkpoint (A's and B's)",
        micro_batch=False,
        device=None,
    )
    parser.add_argument(
        "--blend",
        metavar="B",
        default=None,
        help="a second network of A's family and shape: write (1 - alpha)*A + alpha*B "
        "(every floating tensor), e.g. A = the base, B = its fine-tuned checkpoint",
    )
    parser.add_argument(
        "--alpha",
        type=argtypes.finite_float(-10, 10),
        default=None,
        help="blend weight of B with --blend: 0 = A, 1 = B, 0.5 = the midpoint; values "
        "outside [0, 1] extrapolate (2 = B + (B - A), -1 = A - (B - A); at most 10 either way)",
    )
    parser.add_argument(
        "--policy-temperature",
        metavar="T",
        type=argtypes.finite_float(0.05, 20),
        default=None,
        help="bake a policy softmax temperature into the file: its policy logits divided by T (value and "
        "argmax move unchanged). A search at PolicyTemperature P then searches as the unbaked network at "
        "P*T: for Lc0 at its default 1.359 to search as at S, give S/1.359 (e.g. 2.6/1.359 = 1.913)",
    )


def load_source(args: argparse.Namespace) -> tuple[torch.nn.Module, str]:
    """The network ``add_source_arguments`` names (its temperature baked in with ``--policy-temperature``),
    and how to name it in messages."""
    if (args.blend is None) != (args.alpha is None):
        raise NetworkBlendError("--blend B and --alpha go together: give both (or neither)")
    model = load_model(args.model, weights=args.weights)
    what = args.model
    if args.blend is not None:
        b = load_model(args.blend, weights=args.weights)
        what = f"(1 - α)·A + α·B, A = {args.model}, B = {args.blend}, α = {args.alpha:g}"
        model = blend_networks(model, b, args.alpha)
    if args.policy_temperature is not None:
        model = bake_policy_temperature(model, args.policy_temperature)
        what += f", policy logits / {args.policy_temperature:g}"
    return model, what


def source_meta(args: argparse.Namespace) -> dict:
    """What a written file records of its source: the model, its weights, a blend, a baked temperature."""
    meta = {"source": args.model, "weights": args.weights}
    if args.blend is not None:
        meta.update(blend=args.blend, alpha=args.alpha)
    if args.policy_temperature is not None:
        meta.update(policy_temperature=args.policy_temperature)
    return meta


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--out", required=True, help="output file, e.g. net.pb.gz")
    parser.add_argument(
        "--encoding",
        default="linear16",
        choices=tuple(P.ENCODINGS),
        help="layer encoding: linear16 (default; what released nets use and every Lc0 "
        "reads; 16-bit levels between each tensor's min and max), float16, bfloat16, "
        "or float32 (lossless); the last three need an Lc0 that reads per-layer "
        "encodings",
    )
    parser.add_argument("--no-moves-left", action="store_true", help="drop a carried moves-left head")
    parser.add_argument(
        "--allow-castling-mismatch",
        action="store_true",
        help="export a network that scores castling on e1g1 (Lc0 will read e1h1)",
    )


def run(args: argparse.Namespace) -> int:
    what = args.model if args.blend is None else f"{args.model} + {args.blend}"
    try:
        model, what = load_source(args)
        out = export_lc0(
            model,
            args.out,
            encoding=args.encoding,
            moves_left=not args.no_moves_left,
            allow_castling_mismatch=args.allow_castling_mismatch,
        )
    except (ModelLoadError, Lc0ExportError, NetworkBlendError, PolicyTemperatureError) as e:
        print(f"pdx export lc0: {what}: {e}", file=sys.stderr)
        return 2
    print(
        f"wrote {out} ({out.stat().st_size:,} bytes, {args.encoding}, "
        f"{sum(p.numel() for p in model.parameters()):,} parameters): {what}"
    )
    return 0
