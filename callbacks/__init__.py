"""Lightning callbacks of pdx_lightning, installed as ``pdx_lightning.callbacks``."""
