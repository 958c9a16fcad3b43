"""The ``pdx`` command.

``pdx fit|validate`` are LightningCLI subcommands on :class:`PDXModule`
(any ``--trainer.*`` flag works, e.g. ``--trainer.strategy ddp``);
``pdx pretrain`` is LightningCLI ``fit`` on the distillation module; every
other subcommand is a plain argparse tool living in its own module, which
exposes ``add_arguments(parser)`` and ``run(args) -> int | None``.

Global options come before the command: ``pdx --threads N <command> ...`` sets torch's CPU
threads for every command (``OMP_NUM_THREADS`` before torch is imported, so DDP workers and
Stockfish-free subprocesses inherit it). The default is 1 thread (or ``$PDX_THREADS``, or an
``OMP_NUM_THREADS`` already set): on a shared 2-core machine torch's one-thread-per-core default
spins and made commands 4-80x slower (README, Performance); ``--threads auto`` keeps torch's default.
``pdx --kernels avx2|native <command>`` holds torch's, oneDNN's and MKL's CPU kernels to AVX2 (the
default, or ``$PDX_KERNELS``: the same numbers on an AVX2 and an AVX-512 machine) or lets them use what
the CPU offers; set before torch is imported too (``pdx_lightning.runtime.kernels``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import NoReturn

from pdx_lightning.runtime.kernels import KERNELS, apply_kernels

# name -> (module implementing add_arguments/run, one-line help)
TOOLS: dict[str, tuple[str, str]] = {
    "data positions": ("pdx_lightning.datagen.positions", "Stockfish-labelled training positions (sharded, resumable)"),
    "data pgn": ("pdx_lightning.datagen.pgn", "training shards from human games (PGN): the played move, the result"),
    "data mates": ("pdx_lightning.datagen.mate_suite", "exact mate-in-N suites in Lichess puzzle CSV format"),
    "data puzzles": ("pdx_lightning.datagen.puzzle_suite", "tactics suites in Lichess puzzle CSV format"),
    "data openings": ("pdx_lightning.datagen.opening_suite", "slightly unbalanced opening suites (EPD)"),
    "eval puzzles": ("pdx_lightning.evaluation.puzzle_scoring", "puzzle accuracy, solution probability p*"),
    "eval mates": ("pdx_lightning.evaluation.mate_depths", "mate-in-N accuracy and p* by depth"),
    "eval coverage": ("pdx_lightning.evaluation.coverage", "trajectory coverage (Eq. 8)"),
    "eval diagnostics": ("pdx_lightning.evaluation.diagnostics", "entropy, KLs to base, cov5 over self-play positions"),
    "eval humans": ("pdx_lightning.evaluation.humans", "move matching with human games (top-1/3/5, NLL) from PGN"),
    "eval recovery": ("pdx_lightning.evaluation.recovery", "what fine-tuning recovers vs. the base"),
    "eval value": (
        "pdx_lightning.evaluation.value_calibration",
        "value heads' W/D/L against Stockfish's on positions games reached (CE, KL, Brier, calibration)",
    ),
    "eval temperature": (
        "pdx_lightning.evaluation.temperature_match",
        "the policy softmax temperature that spreads a network's search priors as another's (to bake on export)",
    ),
    "arena": ("pdx_lightning.evaluation.arena", "batched searchless matches and Elo ladder"),
    "matches": (
        "pdx_lightning.evaluation.match_list",
        "a report's matches from one YAML list: run (resumable, shardable), status, save",
    ),
    "sweep": ("pdx_lightning.experiments.sweep.sweep_command", "the beta x term x temperature matrix"),
    "report": ("pdx_lightning.experiments.report.report_command", "the paper's tables and figures from stored JSON"),
    "uci": ("pdx_lightning.engines.uci", "the network as a UCI engine"),
    "config list": ("pdx_lightning.runtime.presets_command", "the config presets shipped with pdx (pdx:<name>)"),
    "config show": ("pdx_lightning.runtime.presets_command", "print a shipped preset (to copy and edit)"),
    "export lc0": ("pdx_lightning.nets.export_cli", "write a network (or a blend of two) as an Lc0 .pb.gz"),
    "export network": ("pdx_lightning.nets.export_network", "write a network (or a blend of two) as a pdx .pt"),
    "export onnx": (
        "pdx_lightning.nets.export_onnx",
        "write a network (or a blend of two) as ONNX with Lc0's interface",
    ),
}
LIGHTNING = {
    "fit": "self-play RL fine-tuning (LightningCLI; see `pdx fit --help`)",
    "validate": "validate a checkpoint (LightningCLI)",
    "pretrain": "supervised search distillation of a base network "
    "(LightningCLI fit; `validate` scores a network on the held-out split)",
}


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Shows each option's default after its help ("(default: 20)"), unless the help already speaks of
    its default or the default is None / False (nothing to show)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            any(action.default is v for v in (None, False, argparse.SUPPRESS))
            or "default" in text.lower()
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (``pdx arena: error: argument --games: ...``) instead of the usage
    text above them; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``pdx`` parser; ``only``: just that command's (or group's) tools, whose modules alone are imported
    (``pdx uci`` answers a GUI in a fraction of a second instead of after every tool's imports)."""
    parser = OneLineParser(
        prog="pdx",
        description="Prior-directed self-play fine-tuning of searchless chess networks.",
        epilog="Run `pdx <command> --help` for a command's options.",
    )
    parser.add_argument(
        "--threads",
        metavar="N|auto",
        default=None,
        help="torch CPU threads for the command (default: $PDX_THREADS, else an "
        "OMP_NUM_THREADS already set, else 1; 'auto': torch's one per core)",
    )
    parser.add_argument(
        "--kernels",
        choices=KERNELS,
        default=None,
        help="CPU vector kernels: 'avx2' holds torch, oneDNN and MKL to AVX2 on every x86-64 CPU (the same "
        "numbers on AVX2 and AVX-512 machines), 'native' uses what the CPU offers (faster where it has "
        "AVX-512) (default: $PDX_KERNELS, else avx2)",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show the Python traceback of user errors too (bad input, files, flags)",
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name, help_ in LIGHTNING.items():
        sub.add_parser(name, help=help_, add_help=False)
    groups: dict[str, argparse._SubParsersAction] = {}
    for name, (module, help_) in TOOLS.items():
        if (only is not None and name.split()[0] != only) or not _available(module):
            continue
        parts = name.split()
        target = sub
        if len(parts) == 2:
            if parts[0] not in groups:
                g = sub.add_parser(parts[0], help=f"{parts[0]} tools")
                groups[parts[0]] = g.add_subparsers(dest="tool", metavar="<tool>", required=True)
            target = groups[parts[0]]
        p = target.add_parser(parts[-1], help=help_, description=help_, formatter_class=DefaultsHelpFormatter)
        p.set_defaults(_module=module)
        importlib.import_module(module).add_arguments(p)
    return parser


def _lightning(command: str, argv: list[str]) -> None:
    from pdx_lightning.runtime.moved_configs import check_config_files  # noqa: PLC0415

    check_config_files(argv)  # size, text, alias expansion: a hostile config costs no Lightning import
    if command == "pretrain":
        from pdx_lightning.supervised.distill import run_pretrain_cli  # noqa: PLC0415  (Lightning loads only here)

        run_pretrain_cli(argv)
    else:
        from pdx_lightning.rl.module import run_cli  # noqa: PLC0415  (Lightning loads only here)

        run_cli([command, *argv])


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
MAX_THREADS = 1024  # past any machine's cores: a typo (torch would try to start them all)


def threads_setting(value: str | None) -> int | None:
    """Parse ``--threads`` / ``$PDX_THREADS``: a positive int, or ``auto`` (None: torch's default)."""
    if value is None or value == "auto":
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"--threads must be an integer from 1 to {MAX_THREADS} or 'auto', got {value!r}")
    return n


def apply_threads(value: str | None) -> int | None:
    """Set the CPU thread count for this process and its children, before torch is imported."""
    if value is None:
        value = os.environ.get("PDX_THREADS")
        if value is None:
            if any(k in os.environ for k in THREAD_ENV):
                return None  # the user's own setting wins
            value = "1"
    n = threads_setting(value)
    if n is not None:
        for k in THREAD_ENV:
            os.environ[k] = str(n)
        if "torch" in sys.modules:  # imported already (library use): set it directly too
            sys.modules["torch"].set_num_threads(n)
    return n


def _global_options(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Options before the command (``pdx --threads 2 fit ...``)."""
    g = argparse.ArgumentParser(add_help=False)
    g.add_argument("--threads")
    g.add_argument("--kernels")
    g.add_argument("--version", action="store_true")
    g.add_argument("--traceback", action="store_true")
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-h", "--help"):
        i += 1 if ("=" in argv[i] or argv[i] in ("--version", "--traceback")) else 2
    opts, rest = g.parse_known_args(argv[:i])
    return opts, rest + argv[i:]


def _user_error_types() -> tuple[type[BaseException], ...]:
    from pdx_lightning.errors import UserError  # noqa: PLC0415

    # an error class of a module never imported cannot have been raised; importing it here would load
    # torch (checkpoint_read) just to print a config file's one-line refusal
    named = (
        ("pdx_lightning.runtime.checkpoint_read", "CheckpointLoadError"),
        ("pdx_lightning.runtime.preflight", "PreflightError"),
        # Lightning's own class for a configuration it cannot run (raised during fit as well as at start)
        ("lightning.fabric.utilities.exceptions", "MisconfigurationException"),
    )
    return (UserError, *(getattr(sys.modules[m], n) for m, n in named if m in sys.modules))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts, argv = _global_options(argv)
    if opts.version:
        from pdx_lightning._version import __version__  # noqa: PLC0415

        print(f"pdx {__version__}")
        return 0
    try:
        apply_threads(opts.threads)
        apply_kernels(opts.kernels)
    except ValueError as e:
        print(f"pdx: error: {e}", file=sys.stderr)
        return 2
    name = argv[0] if argv else ""
    try:
        if argv and argv[0] in LIGHTNING:
            _lightning(argv[0], argv[1:])
            return 0
        known = {n.split()[0] for n in TOOLS}
        parser = build_parser(only=argv[0] if argv and argv[0] in known else None)
        args = parser.parse_args(argv)
        if not getattr(args, "_module", None):
            parser.print_help()
            return 0 if not argv else 2
        name = " ".join(filter(None, [args.command, getattr(args, "tool", None)]))
        from pdx_lightning.runtime.preflight import check_tool_outputs  # noqa: PLC0415

        check_args = getattr(importlib.import_module(args._module), "check_args", None)
        if check_args is not None:  # flags that must agree (a range, a pair), before anything is created
            check_args(args)
        check_tool_outputs(args._module, args)  # unwritable or full output locations fail now, not after the work
        rc = importlib.import_module(args._module).run(args)
        return int(rc or 0)
    except _user_error_types() as e:  # a user mistake: one line that says what and how to fix it
        if opts.traceback:
            raise
        msg = " ".join(str(e).split("\n")) or type(e).__name__
        print(f"pdx {name}: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
