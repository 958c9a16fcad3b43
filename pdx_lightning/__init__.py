"""pdx_lightning: prior-directed self-play fine-tuning of searchless chess networks."""

__version__ = "0.1.0"
