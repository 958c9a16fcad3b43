"""Lightning callbacks of pdx_lightning, installed as ``pdx_lightning.callbacks``."""
from pdx_lightning.callbacks.beta import BetaSchedule
from pdx_lightning.callbacks.ema import EMAUpdate
from pdx_lightning.callbacks.puzzles import PuzzleValidation

__all__ = ["BetaSchedule", "EMAUpdate", "PuzzleValidation"]
