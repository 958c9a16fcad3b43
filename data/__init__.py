"""The ``data/`` files, installed as ``pdx_lightning.data`` (package data; no code): the bundled
networks, the default suites and openings (``MANIFEST.md``), read through :mod:`pdx_lightning.files.resources`."""
