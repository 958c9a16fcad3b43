"""The migrations for files written before 0.1.0's layout are dropped in MIGRATIONS_REMOVED_IN."""

from __future__ import annotations

from pdx_lightning._version import MIGRATIONS_REMOVED_IN, __version__


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("+")[0].split(".")[:3])


def test_the_migrations_are_removed_by_their_release():
    assert _release(__version__) < _release(MIGRATIONS_REMOVED_IN), (
        f"pdx {__version__} has reached {MIGRATIONS_REMOVED_IN}: remove rl.settings.MOVED_KEYS, "
        "migrate_hparams, check_moved_keys, runtime/moved_configs.py and rl.searched_settings' old name "
        "SearchedSettings (and their callers and tests)"
    )


def test_the_deadline_is_stated_where_users_read_it():
    from pathlib import Path

    page = Path(__file__).resolve().parents[1] / "docs" / "fine-tuning.md"
    assert f"removed in {MIGRATIONS_REMOVED_IN}" in page.read_text()


def test_the_searched_settings_old_name_still_reads_with_a_warning():
    import pytest

    from pdx_lightning.rl import searched_settings

    with pytest.warns(DeprecationWarning, match="SearchedSelfPlaySettings"):
        old = searched_settings.SearchedSettings
    assert old is searched_settings.SearchedSelfPlaySettings
