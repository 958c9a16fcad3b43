"""Lightning callbacks of pdx_lightning, installed as ``pdx_lightning.callbacks``."""

from pdx_lightning.callbacks.beta import BetaSchedule
from pdx_lightning.callbacks.ema import EMAUpdate
from pdx_lightning.callbacks.games import SelfPlayGames
from pdx_lightning.callbacks.puzzle_validation import PuzzleValidation
from pdx_lightning.callbacks.tensorboard import HParamsSummary, PolicySnapshot

__all__ = ["BetaSchedule", "EMAUpdate", "HParamsSummary", "PolicySnapshot", "PuzzleValidation", "SelfPlayGames"]
