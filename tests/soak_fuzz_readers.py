"""Hostile-file soak: fuzz every reader of a file pdx takes from users, watching memory (issue 20).

    OMP_NUM_THREADS=1 python tests/soak_fuzz_readers.py                       # 300 inputs per reader
    OMP_NUM_THREADS=1 python tests/soak_fuzz_readers.py --iterations 2000 --readers lc0 suite_zst
    OMP_NUM_THREADS=1 python tests/soak_fuzz_readers.py --table               # README reliability rows

Readers: Lc0 ``.pb.gz`` and pdx ``.pt`` (``load_model``), ``.ckpt`` (``read_checkpoint``), puzzle
suites ``.csv`` / ``.csv.zst`` (``load_suite``), opening files ``.epd`` / ``.pgn``
(``load_openings``) and ``.npz`` position shards (``load_shard``). Each starts from a valid seed
file and is fed mutants: byte flips, truncation, duplicated and inserted chunks, mutations *inside*
the compression (decompress, mutate, recompress), and size attacks (appended gzip/zstd bombs, zip
members replaced by deflate bombs, lying zip directories, ``.npy`` headers and torch storage
records claiming huge sizes, expanded tensors, giant lines, floods of blank lines).

Every input must be accepted or refused with a named :class:`~pdx_lightning.errors.UserError`
(what ``pdx`` prints as one line) within ``--hang`` seconds, and its peak memory (VmHWM, reset
before each input through ``/proc/self/clear_refs``) must stay under ``--max-mb`` above the
worker's baseline. Anything else is a finding: printed, its input kept under ``--keep``, exit 1.
Workers run under an address-space limit (``--rlimit-gb``), so an unbounded allocation shows as
a MemoryError finding instead of taking the machine down. Not part of the default test run.

``--table`` instead builds one bomb per file kind (what the tests use, at full size) and prints
the reliability table: the bound, the refusal and the measured peak memory above a baseline.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from hostile_files import (  # noqa: E402  (after the thread cap and sys.path setup above)
    GiB,
    MiB,
    baseline_peak_mb,
    gzip_of_zeros,
    refusal_peak_mb,
    zip_bomb_member,
    zstd_of_zeros,
)

READERS = ("lc0", "pt", "ckpt", "suite_csv", "suite_zst", "epd", "pgn", "shard")


# ---------------------------------------------------------------- seeds


def make_seeds(d: Path) -> dict[str, Path]:
    """One valid file per reader."""
    import torch
    import zstandard

    from pdx_lightning.nets import lc0, load_model, save_network
    from pdx_lightning.nets.chessformer import Chessformer, ModelConfig

    torch.manual_seed(0)
    seeds = {
        "lc0": d / "seed.pb.gz",
        "pt": d / "seed.pt",
        "ckpt": d / "seed.ckpt",
        "suite_csv": d / "seed.csv",
        "suite_zst": d / "seed.csv.zst",
        "epd": d / "seed.epd",
        "pgn": d / "seed.pgn",
        "shard": d / "shard_00000.npz",
    }
    lc0.export_lc0(Chessformer(lc0.lc0_style(ModelConfig.from_name("tiny"))), seeds["lc0"])
    save_network(load_model("random:tiny"), seeds["pt"])
    net = load_model("random:tiny")
    torch.save(
        {
            "state_dict": {f"online.{k}": v for k, v in net.state_dict().items()},
            "hyper_parameters": {"base": "random:tiny"},
            "epoch": 0,
        },
        seeds["ckpt"],
    )
    suite = (ROOT / "data" / "mates_in_2.csv").read_bytes()
    seeds["suite_csv"].write_bytes(suite)
    seeds["suite_zst"].write_bytes(zstandard.ZstdCompressor(level=3).compress(suite))
    seeds["epd"].write_bytes(b"\n".join((ROOT / "data" / "openings_uho.epd").read_bytes().splitlines()[:200]))
    seeds["pgn"].write_text(
        '[Event "a"]\n[Opening "Open"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n'
        '[Event "b"]\n\n1. d4 d5 2. c4 {a comment} e6 (2... c6 3. Nc3) 3. Nc3 *\n\n'
        '[FEN "8/8/8/8/8/8/k7/4K2R w K - 0 1"]\n\n1. O-O Kb3 *\n'
    )
    shutil.copy(ROOT / "tests" / "fixtures" / "shards_small" / "shard_00000.npz", seeds["shard"])
    return seeds


# ---------------------------------------------------------------- mutations


def _bytes_mutation(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(7)
        i = rng.randrange(len(b) + 1) if b else 0
        if op == 0 and b:  # flip bits
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:  # random bytes
            b[i : i + rng.randint(1, 16)] = rng.randbytes(rng.randint(1, 16))
        elif op == 2:  # truncate
            del b[i:]
        elif op == 3 and b:  # duplicate a chunk
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 4096)]
        elif op == 4:  # insert a long run of one byte
            b[i:i] = bytes([rng.choice([0, 10, 32, 44, 34, 255, 48])]) * rng.choice([100, 70_000, 2 * MiB])
        elif op == 5 and b:  # delete a chunk
            del b[i : i + rng.randint(1, 256)]
        else:  # integers at random offsets: lying sizes
            if len(b) >= 8:
                j = rng.randrange(len(b) - 7)
                b[j : j + 8] = struct.pack(
                    "<Q", rng.choice([2**31 - 1, 2**32 - 1, 2**40, 2**63 - 1, rng.randrange(2**32)])
                )
    return bytes(b)


def _rezip(data: bytes, rng: random.Random, bomb_dir: Path) -> bytes:
    """A zip (.pt/.ckpt/.npz) with a member mutated, replaced by a bomb, or its directory lying."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = [(i.filename, zf.read(i)) for i in zf.infolist()]
    k = rng.randrange(len(members))
    op = rng.randrange(5)
    if op == 0:  # a member replaced by a 1 GiB deflate bomb
        path = zip_bomb_member(bomb_dir / "zb.zip", members[k][0], GiB, others=dict(members[:k] + members[k + 1 :]))
        return path.read_bytes()
    if op == 1 and members[k][0].endswith(".npy"):  # an .npy header claiming a huge shape
        name, raw = members[k]
        members[k] = (name, raw.replace(b"'shape': (", b"'shape': (1099511627776, ", 1))
    elif op == 2 and members[k][0].endswith("data.pkl"):  # a storage record claiming a huge numel
        name, raw = members[k]
        i = raw.find(b"X\x03\x00\x00\x00cpu")
        if i >= 0:
            i += 8
            i += {b"q": 2, b"r": 5, b"\x94": 1}.get(raw[i : i + 1], 0)
            w = {b"K": 2, b"M": 3, b"J": 5}.get(raw[i : i + 1])
            if w:
                members[k] = (
                    name,
                    raw[:i] + b"\x8a\x08" + struct.pack("<q", rng.choice([2**26, 2**40])) + raw[i + w :],
                )
    else:
        members[k] = (members[k][0], _bytes_mutation(members[k][1], rng))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if rng.random() < 0.3 else zipfile.ZIP_STORED) as zf:
        for name, raw in members:
            zf.writestr(name, raw)
    out = buf.getvalue()
    if op == 4:  # the central directory lies about sizes
        b = bytearray(out)
        cd = b.rfind(b"PK\x01\x02")
        if cd >= 0:
            at = cd + rng.choice([20, 24])  # compressed or uncompressed size
            b[at : at + 4] = struct.pack("<I", rng.randrange(2**32))
        out = bytes(b)
    return out


def mutate(reader: str, seed: Path, rng: random.Random, work: Path) -> Path:
    import zstandard

    data = seed.read_bytes()
    out = work / f"input{''.join(seed.suffixes)}" if reader != "shard" else work / "shard_00001.npz"
    kind = rng.randrange(4)
    if kind == 0:
        result = _bytes_mutation(data, rng)
    elif reader == "lc0":
        inner = gzip.decompress(data)
        result = gzip.compress(_bytes_mutation(inner, rng), 1) if kind == 1 else data
        if kind == 2:  # concatenate a gzip bomb member
            result = data + gzip_of_zeros(work / "gz.bomb", rng.choice([64, 512, 4096]) * MiB).read_bytes()
        elif kind == 3:  # a structurally valid net with a lying layer
            from pdx_lightning.nets.lc0 import schema as P

            net = P.Net.FromString(inner)
            layer = net.weights.encoder[rng.randrange(len(net.weights.encoder))].mha.q_w
            layer.params = rng.randbytes(rng.choice([2, 2 * MiB, 48 * MiB]))
            if rng.random() < 0.3:
                for _ in range(rng.choice([10, 600])):
                    net.weights.encoder.add()
            result = gzip.compress(net.SerializeToString(), 1)
    elif reader in ("pt", "ckpt", "shard"):
        if kind == 3 and reader != "shard":  # expanded views / giant configs via torch.save
            import torch

            blob = torch.load(seed, weights_only=True)
            if "config" in blob and rng.random() < 0.5:
                blob["config"] = dict(blob["config"], embed_dim=rng.choice([1 << 20, 64, 0, -5]))
            else:
                blob["state_dict"] = dict(blob["state_dict"])
                k = rng.choice(sorted(blob["state_dict"]))
                blob["state_dict"][k] = torch.zeros(1).expand(rng.choice([10, 50_000]), 50_000)
            torch.save(blob, out)
            return out
        result = _rezip(data, rng, work)
    elif reader == "suite_zst":
        inner = zstandard.ZstdDecompressor().decompress(data)
        if kind == 1:
            result = zstandard.ZstdCompressor(level=1).compress(_bytes_mutation(inner, rng))
        elif kind == 2:  # a bomb frame appended (zeros or newlines)
            result = data + zstd_of_zeros(work / "z.bomb", GiB, rng.choice([b"\0", b"\n", b","])).read_bytes()
        else:
            result = data[: rng.randrange(len(data))]  # cut mid-frame
    else:  # text: csv, epd, pgn
        text = bytearray(data)
        i = rng.randrange(len(text) + 1)
        if kind == 1:  # a giant line
            text[i:i] = b"x" * rng.choice([70_000, 3 * MiB])
        elif kind == 2:  # floods of lines, an unclosed quote, many games
            text[i:i] = rng.choice(
                [b"\n" * 500_000, b'"' + b"a,b\n" * 200, b"e2e4\n" * 300_000, b"\n\n1. Nf3 Nf6 2. Ng1 Ng8 *\n" * 30_000]
            )
        else:
            text = bytearray(_bytes_mutation(bytes(text), rng))
        result = bytes(text)
    out.write_bytes(result)
    return out


# ---------------------------------------------------------------- the worker


class Hang(BaseException):
    pass


def _vmhwm_mb() -> float:
    return next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM")) / 1024


def _reader_call(reader: str):
    if reader in ("lc0", "pt"):
        from pdx_lightning.nets import load_model

        return load_model
    if reader == "ckpt":
        from pdx_lightning.runtime.checkpoint_read import read_checkpoint

        return read_checkpoint
    if reader.startswith("suite"):
        from pdx_lightning.evaluation.suite import load_suite

        return lambda p: load_suite(p, skip_bad=True)
    if reader in ("epd", "pgn"):
        from pdx_lightning.chesscore.opening_files import load_openings

        return load_openings
    from pdx_lightning.supervised.shards import load_shard

    return load_shard


def worker(args) -> None:
    """Fuzz one reader in this process; print one JSON line of results."""
    from pdx_lightning.errors import UserError

    limit = int(args.rlimit_gb * GiB)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    rng = random.Random(f"{args.seed}:{args.worker}")
    work = Path(tempfile.mkdtemp(prefix=f"pdx-soak-{args.worker}-"))
    seeds = {k: Path(v) for k, v in json.loads(args.seeds).items()}
    call = _reader_call(args.worker)
    call(str(seeds[args.worker]))  # the seed itself is readable
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Hang()))
    base = _vmhwm_mb()
    stats = {
        "reader": args.worker,
        "inputs": 0,
        "accepted": 0,
        "refused": {},
        "findings": [],
        "max_peak_mb": 0.0,
        "max_seconds": 0.0,
    }
    for n in range(args.iterations):
        path = mutate(args.worker, seeds[args.worker], rng, work)
        size_mb = path.stat().st_size / MiB
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        start = time.monotonic()
        signal.alarm(args.hang)
        problem = None
        try:
            call(str(path))
            stats["accepted"] += 1
        except UserError as e:
            stats["refused"][type(e).__name__] = stats["refused"].get(type(e).__name__, 0) + 1
            if "\n" in str(e).strip() and type(e).__name__ != "ModelLoadError":
                problem = f"multi-line message: {str(e)[:300]!r}"
        except Hang:
            problem = f"no answer within {args.hang} s"
        except BaseException as e:  # noqa: BLE001  (anything unnamed is a finding)
            problem = f"{type(e).__name__}: {str(e)[:300]}\n{traceback.format_exc(limit=4)[-1500:]}"
        finally:
            signal.alarm(0)
        seconds = time.monotonic() - start
        peak = _vmhwm_mb() - base
        stats["inputs"] += 1
        stats["max_peak_mb"] = max(stats["max_peak_mb"], peak)
        stats["max_seconds"] = max(stats["max_seconds"], seconds)
        if args.verbose:
            print(f"{n}: {size_mb:.1f} MB, +{peak:.0f} MB, {seconds:.1f} s, {problem or 'ok'}", file=sys.stderr)
        if problem is None and peak > args.max_mb + 3 * size_mb:
            problem = f"peak {peak:.0f} MB above baseline for a {size_mb:.1f} MB input"
        if problem:
            kept = Path(args.keep) / f"{args.worker}-{n}{''.join(path.suffixes)}"
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, kept)
            stats["findings"].append({"input": str(kept), "problem": problem})
    shutil.rmtree(work, ignore_errors=True)
    print("RESULT " + json.dumps(stats), flush=True)


# ---------------------------------------------------------------- the bomb table


def bomb_table(d: Path) -> list[dict]:
    """One bomb per file kind at the sizes the tests use; peak memory above a baseline interpreter."""
    import torch

    from pdx_lightning.files import safeio

    rows = []

    def measure(kind: str, bound: str, path: Path, call: str, imports: str, error: str, env=None):
        base = baseline_peak_mb(imports)
        start = time.monotonic()
        peak, msg = refusal_peak_mb(call.format(p=str(path)), error, env, imports)
        rows.append(
            {
                "kind": kind,
                "bound": bound,
                "file": f"{path.name} ({path.stat().st_size / MiB:.1f} MB)",
                "peak_mb": round(peak - base, 1),
                "baseline_mb": round(base),
                "seconds": round(time.monotonic() - start, 1),
                "refusal": msg.split(": ", 1)[-1][:140],
            }
        )
        print(f"{kind}: +{peak - base:.0f} MB", file=sys.stderr)

    nets = "from pdx_lightning.nets import load_model, ModelLoadError\nload_model('random:tiny')"
    measure(
        "Lc0 .pb.gz (gzip bomb, 4 GiB of zeros)",
        f"stream cap {safeio.NET_BYTES.shown()} ({safeio.NET_BYTES.env}), ratio "
        f"{safeio.COMPRESSION_RATIO.shown()} ({safeio.COMPRESSION_RATIO.env}), depth 512, layer sizes "
        "checked before decoding",
        gzip_of_zeros(d / "bomb.pb.gz", 4 * GiB),
        "load_model({p!r})",
        nets,
        "ModelLoadError",
    )
    big = d / "big.pb.gz"
    big.write_bytes(gzip.compress(os.urandom(96 * MiB), 1))
    measure(
        "Lc0 .pb.gz (96 MiB incompressible, cap set to 32M)",
        "the stream cap itself",
        big,
        "load_model({p!r})",
        nets,
        "ModelLoadError",
        {"PDX_MAX_NET_BYTES": "32M"},
    )
    torch.save({"format": "pdx_network/1", "state_dict": {"w": torch.zeros(4)}}, d / "ok.pt")
    with zipfile.ZipFile(d / "ok.pt") as zf:
        others = {i.filename: zf.read(i) for i in zf.infolist() if not i.filename.endswith("data/0")}
        name = next(i.filename for i in zf.infolist() if i.filename.endswith("data/0"))
    check = (
        f"declared sizes <= {safeio.CHECKPOINT_BYTES.shown()} ({safeio.CHECKPOINT_BYTES.env}) and the "
        f"file, ratio {safeio.COMPRESSION_RATIO.shown()}, tensors checked on the meta device"
    )
    measure(
        ".pt network (zip bomb, 4 GiB member)",
        check,
        zip_bomb_member(d / "bomb.pt", name, 4 * GiB - MiB, others=others),
        "load_model({p!r})",
        nets,
        "ModelLoadError",
    )
    torch.save(
        {
            "format": "pdx_network/1",
            "family": "chessformer",
            "config": {},
            "state_dict": {"w": torch.zeros(1).expand(50_000, 50_000)},
        },
        d / "expanded.pt",
    )
    measure(
        ".pt network (10 GB expanded view, 1.6 KB file)",
        check,
        d / "expanded.pt",
        "load_model({p!r})",
        nets,
        "ModelLoadError",
    )
    ckpt = "from pdx_lightning.runtime.checkpoint_read import read_checkpoint, CheckpointLoadError"
    measure(
        ".ckpt checkpoint (zip bomb, 4 GiB member)",
        check,
        zip_bomb_member(d / "last.ckpt", name, 4 * GiB - MiB, others=others),
        "read_checkpoint({p!r})",
        ckpt,
        "CheckpointLoadError",
    )
    suites = "from pdx_lightning.evaluation.suite import load_suite, PuzzleFormatError"
    header = b"PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n"
    zbound = (
        f"streamed; {safeio.SUITE_BYTES.shown()} ({safeio.SUITE_BYTES.env}), ratio "
        f"{safeio.COMPRESSION_RATIO.shown()}, window {safeio.ZSTD_WINDOW.shown()} "
        f"({safeio.ZSTD_WINDOW.env}), lines {safeio.LINE_BYTES.shown()} ({safeio.LINE_BYTES.env})"
    )
    measure(
        "suite .csv.zst (4 GiB of newlines)",
        zbound,
        zstd_of_zeros(d / "nl.csv.zst", 4 * GiB, b"\n", header),
        "load_suite({p!r})",
        suites,
        "PuzzleFormatError",
    )
    sparse = d / "sparse.csv"
    with open(sparse, "wb") as f:
        f.write(header)
        f.truncate(4 * GiB)
    measure(
        "suite .csv (4 GiB line, sparse file)",
        f"streamed; lines {safeio.LINE_BYTES.shown()}, records 64 lines",
        sparse,
        "load_suite({p!r})",
        suites,
        "PuzzleFormatError",
    )
    openings = "from pdx_lightning.chesscore.opening_files import load_openings, OpeningFormatError"
    obound = (
        f"streamed; lines {safeio.LINE_BYTES.shown()}, PGN games {safeio.PGN_GAME_BYTES.shown()} "
        f"({safeio.PGN_GAME_BYTES.env}), {safeio.OPENINGS.shown()} openings ({safeio.OPENINGS.env}), "
        f"{safeio.OPENING_PLIES.shown()} moves ({safeio.OPENING_PLIES.env})"
    )
    for suffix in (".epd", ".pgn"):
        p = d / f"sparse{suffix}"
        with open(p, "wb") as f:
            f.write(b"e2e4\n" if suffix == ".epd" else b'[Event "x"]\n')
            f.truncate(4 * GiB)
        measure(
            f"openings {suffix} (4 GiB line, sparse file)",
            obound,
            p,
            "load_openings({p!r})",
            openings,
            "OpeningFormatError",
        )
    many = d / "many.pgn"
    many.write_text("\n\n".join(["1. Nf3 Nf6 2. Ng1 Ng8 " * 10 + "*"] * 30_000) + "\n")
    measure(
        "openings .pgn (30,000 games of 40 plies: past the move cap)",
        obound,
        many,
        "load_openings({p!r})",
        openings,
        "OpeningFormatError",
    )
    shards = "from pdx_lightning.supervised.shards import load_shard, CorruptShard"
    measure(
        ".npz shard (zip bomb, 4 GiB member)",
        f".npy headers <= {safeio.SHARD_BYTES.shown()} "
        f"({safeio.SHARD_BYTES.env}), ratio {safeio.COMPRESSION_RATIO.shown()}",
        zip_bomb_member(d / "shard_00000.npz", "key.npy", 4 * GiB - MiB),
        "load_shard({p!r})",
        shards,
        "CorruptShard",
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=300, help="inputs per reader")
    ap.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hang", type=int, default=120, help="seconds an input may take")
    ap.add_argument(
        "--max-mb",
        type=float,
        default=300.0,
        help="peak MB above the worker's baseline allowed (plus 3x the input's size)",
    )
    ap.add_argument("--rlimit-gb", type=float, default=6.0, help="address-space limit of each worker")
    ap.add_argument("--keep", default="soak_fuzz_findings", help="directory for inputs that found a problem")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--table", action="store_true", help="measure one bomb per file kind instead")
    ap.add_argument("--verbose", action="store_true", help="print every input's size, peak and time")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--seeds", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="pdx-soak-") as tmp:
        if args.table:
            rows = bomb_table(Path(tmp))
            print("| file kind | bound (environment variable) | crafted file | refusal | peak above baseline |")
            print("|---|---|---|---|---|")
            for r in rows:
                print(
                    f"| {r['kind']} | {r['bound']} | {r['file']} | {r['refusal']} | "
                    f"{r['peak_mb']:.0f} MB (baseline {r['baseline_mb']} MB, {r['seconds']} s) |"
                )
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
            return 0
        seeds = {k: str(v) for k, v in make_seeds(Path(tmp)).items()}
        results, failed = [], False
        for reader in args.readers:
            start = time.monotonic()
            cmd = [
                sys.executable,
                __file__,
                "--worker",
                reader,
                "--seeds",
                json.dumps(seeds),
                "--iterations",
                str(args.iterations),
                "--seed",
                str(args.seed),
                "--hang",
                str(args.hang),
                "--max-mb",
                str(args.max_mb),
                "--rlimit-gb",
                str(args.rlimit_gb),
                "--keep",
                args.keep,
                *(["--verbose"] if args.verbose else []),
            ]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None if args.verbose else subprocess.PIPE, text=True)
            line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
            if line is None:
                failed = True
                print(f"{reader}: worker died (exit {r.returncode}): {(r.stderr or '')[-2000:]}")
                continue
            stats = json.loads(line[7:])
            stats["seconds"] = round(time.monotonic() - start, 1)
            results.append(stats)
            failed |= bool(stats["findings"])
            refused = ", ".join(f"{k} {v}" for k, v in stats["refused"].items())
            print(
                f"| {reader} | {stats['inputs']} | {stats['accepted']} | "
                f"{sum(stats['refused'].values())} ({refused}) | {len(stats['findings'])} | "
                f"{stats['max_peak_mb']:.0f} MB | {stats['max_seconds']:.1f} s |",
                flush=True,
            )
            for f in stats["findings"][:5]:
                print(f"    finding: {f['problem']} (input kept: {f['input']})")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
