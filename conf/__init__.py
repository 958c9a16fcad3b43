"""The ``conf/`` presets, installed as ``pdx_lightning.conf`` (package data; no code): the LightningCLI
YAML files that ``pdx fit --config pdx:<preset>`` and ``pdx config list|show`` read through
:mod:`pdx_lightning.files.resources`."""
