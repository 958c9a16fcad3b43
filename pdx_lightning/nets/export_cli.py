"""``pdx export lc0``: write any loadable network as an Lc0 ``.pb.gz`` (``nets/lc0/``).

It sits beside ``lc0/`` rather than inside it: it loads models by name (``files.py``), and
``files.py`` reads ``.pb.gz`` files through ``lc0/``.
"""
from __future__ import annotations

import argparse
import sys

from pdx_lightning.nets.files import ModelLoadError, load_model
from pdx_lightning.nets.lc0 import Lc0ExportError, export_lc0
from pdx_lightning.nets.lc0 import schema as P


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="network to export (base:<name>, a .pt/.ckpt, an Lc0 .pb.gz)")
    parser.add_argument("--out", required=True, help="output file, e.g. net.pb.gz")
    parser.add_argument("--weights", default="ema", choices=("ema", "online"),
                        help="which weights of a checkpoint")
    parser.add_argument("--encoding", default="linear16", choices=tuple(P.ENCODINGS),
                        help="layer encoding: linear16 (default; what released nets use and every Lc0 "
                             "reads; 16-bit levels between each tensor's min and max), float16, bfloat16, "
                             "or float32 (lossless); the last three need an Lc0 that reads per-layer "
                             "encodings")
    parser.add_argument("--no-moves-left", action="store_true", help="drop a carried moves-left head")
    parser.add_argument("--allow-castling-mismatch", action="store_true",
                        help="export a network that scores castling on e1g1 (Lc0 will read e1h1)")


def run(args: argparse.Namespace) -> int:
    try:
        model = load_model(args.model, weights=args.weights)
        out = export_lc0(model, args.out, encoding=args.encoding, moves_left=not args.no_moves_left,
                         allow_castling_mismatch=args.allow_castling_mismatch)
    except (ModelLoadError, Lc0ExportError) as e:
        print(f"pdx export lc0: {args.model}: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({out.stat().st_size:,} bytes, {args.encoding}, "
          f"{sum(p.numel() for p in model.parameters()):,} parameters)")
    return 0
