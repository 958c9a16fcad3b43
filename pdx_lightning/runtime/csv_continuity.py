"""A resumed run's ``metrics.csv`` keeps the rows of the run it resumes.

Lightning's ``CSVLogger`` deletes ``metrics.csv`` when it creates its writer in a directory that has one,
so a run resumed into the same version (:mod:`~pdx_lightning.runtime.log_continuity` pins it) would keep
only the steps it trains itself. :func:`carry_rows` reads the file before the writer exists, lets the
writer be created, and writes the rows back (the writer appends to them from then on).
:func:`drop_rows_after` then removes the rows logged from the step the resumed run logs first (a killed run's
rows after its checkpoint; the validation a fit logs at its start): the resumed run logs those steps again
(identical values for a seeded run), so each step's rows appear once.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

from lightning.fabric.loggers.csv_logs import CSVLogger

from pdx_lightning.files.atomicfile import atomic_write

METRICS = "metrics.csv"


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with atomic_write(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def csv_loggers(loggers) -> list[CSVLogger]:
    """The loggers that write a ``metrics.csv`` (Lightning's ``CSVLogger``, both packages' classes)."""
    return [lg for lg in loggers if isinstance(lg, CSVLogger)]


def carry_rows(logger: CSVLogger) -> int:
    """Keep ``logger``'s existing ``metrics.csv`` across the creation of its writer (call it after the
    version is pinned, before anything logs); the number of rows kept (0 without a file)."""
    path = Path(logger.log_dir) / METRICS
    if not path.is_file():
        return 0
    header, rows = _read(path)
    with warnings.catch_warnings():  # its "will be deleted" warning: not so, the rows are written back below
        warnings.filterwarnings("ignore", message=r"Experiment logs directory .* exists and is not empty")
        writer = logger.experiment  # Lightning's writer: deletes metrics.csv when it is created
    if not header:
        return 0
    writer.metrics_keys = sorted(header)  # as the writer keeps them: new keys rewrite the header
    _write(path, writer.metrics_keys, rows)
    return len(rows)


def drop_rows_after(logger: CSVLogger, step: int) -> int:
    """Remove the rows logged at steps after ``step``; the number of rows removed."""
    path = Path(logger.log_dir) / METRICS
    if not path.is_file():
        return 0
    header, rows = _read(path)

    def later(row: dict[str, str]) -> bool:
        try:
            return int(float(row.get("step") or "")) > step
        except ValueError:
            return False

    kept = [r for r in rows if not later(r)]
    if len(kept) != len(rows):
        _write(path, header, kept)
    return len(rows) - len(kept)
