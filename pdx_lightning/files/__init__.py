"""Files: how pdx reads what a user hands it and writes what it keeps.

* :mod:`~pdx_lightning.files.safeio`: bounded readers of user files (configs, checkpoints, PGN, CSV,
  compressed streams): a size, a decompression ratio, a truncation or corruption is one named error;
* :mod:`~pdx_lightning.files.atomicfile`: writes that land whole or not at all (a temporary file,
  fsync, rename), and the cleanup of a killed run's temporaries;
* :mod:`~pdx_lightning.files.resources`: the files shipped inside the package (``conf/`` presets,
  ``data/`` networks, suites, openings) and the names users give them (``pdx:<preset>``, ``data/...``).
"""
