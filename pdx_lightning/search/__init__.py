"""PUCT search over pdx's networks with Lc0 v0.31's semantics, batched over many games in flight."""

from pdx_lightning.search.batched import BatchedSearch, SearchInputError, SearchResult
from pdx_lightning.search.settings import SearchSettingError, SearchSettings

__all__ = ["BatchedSearch", "SearchInputError", "SearchResult", "SearchSettingError", "SearchSettings"]
