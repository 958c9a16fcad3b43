"""The package version (its own module so that no layer has to import the package root)."""

__version__ = "0.1.0"

# The release that removes the migrations kept for files written before 0.1.0's layout: the moved
# settings keys (rl.settings.MOVED_KEYS, migrate_hparams, check_moved_keys: a checkpoint's
# hyperparameters moved into model.algorithm, an old key refused with a pointer) and the moved config
# paths (runtime.moved_configs), and rl.searched_settings' old class name SearchedSettings.
# tests/test_migrations_deadline.py fails once __version__ reaches it.
MIGRATIONS_REMOVED_IN = "0.2.0"
