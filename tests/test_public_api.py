"""The package root's public API: the classes users subclass or call, each importable by name."""

from __future__ import annotations

import subprocess
import sys

import pdx_lightning


def test_every_exported_name_resolves_to_what_users_subclass_or_call():
    for name in pdx_lightning.__all__:
        assert getattr(pdx_lightning, name) is not None, name
    from pdx_lightning.rl.searched_module import SearchedModule
    from pdx_lightning.search import BatchedSearch, SearchSettings

    assert pdx_lightning.SearchedModule is SearchedModule
    assert (pdx_lightning.BatchedSearch, pdx_lightning.SearchSettings) == (BatchedSearch, SearchSettings)
    for name in ("PDXModule", "PDXSettings", "SearchedSelfPlaySettings", "ComposedNetwork", "SelfPlayConfig"):
        assert name in dir(pdx_lightning)


def test_importing_the_root_stays_cheap():
    code = "import sys, pdx_lightning; print('torch' in sys.modules, 'lightning' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
