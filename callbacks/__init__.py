"""Lightning callbacks of pdx_lightning, installed as ``pdx_lightning.callbacks``."""
from pdx_lightning.callbacks.beta import BetaSchedule
from pdx_lightning.callbacks.ema import EMAUpdate

__all__ = ["BetaSchedule", "EMAUpdate"]
