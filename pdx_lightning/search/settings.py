"""The search's settings, named as Lc0 names them, with Lc0 v0.31's defaults; checked once, here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import cast

from pdx_lightning.argtypes import check_number
from pdx_lightning.errors import UserError

MAX_NODES = 1_000_000  # per move: a tree of that size holds ~40 M edges (~0.5 GB); beyond, use Lc0 itself


class SearchSettingError(UserError, ValueError):
    """A search setting out of its range (the message names the setting, Lc0's name and the value)."""


@dataclass(frozen=True)
class SearchSettings:
    """PUCT with Lc0 v0.31's semantics. Each field is an Lc0 option (its UCI name in the comment) at
    Lc0 v0.31's default; ``nodes`` is ``go nodes N``: the root's visits when the search stops (visits a
    reused tree already holds count, as in Lc0, and every search makes at least one playout)."""

    nodes: int = 64
    cpuct: float = 1.745  # CPuct
    cpuct_base: float = 38739.0  # CPuctBase
    cpuct_factor: float = 3.894  # CPuctFactor
    fpu_value: float = 0.330  # FpuValue, FpuStrategy=reduction (the only strategy pdx implements)
    policy_softmax_temp: float = 1.359  # PolicyTemperature
    two_fold_draws: bool = True  # TwoFoldDraws
    sticky_endgames: bool = True  # StickyEndgames
    cache_size: int = 200_000  # NNCacheSize: positions whose network outputs a game's searches keep

    def __post_init__(self) -> None:
        _int_in("nodes", "go nodes", self.nodes, 1, MAX_NODES)
        _float_in("cpuct", "CPuct", self.cpuct, 0.0, 100.0)
        _float_in("cpuct_base", "CPuctBase", self.cpuct_base, 1.0, 1e9)
        _float_in("cpuct_factor", "CPuctFactor", self.cpuct_factor, 0.0, 1000.0)
        _float_in("fpu_value", "FpuValue", self.fpu_value, -100.0, 100.0)
        _float_in("policy_softmax_temp", "PolicyTemperature", self.policy_softmax_temp, 0.1, 10.0)
        for name, lc0 in (("two_fold_draws", "TwoFoldDraws"), ("sticky_endgames", "StickyEndgames")):
            if not isinstance(getattr(self, name), bool):
                raise SearchSettingError(
                    f"search setting {name} ({lc0}): must be true or false, got {getattr(self, name)!r}"
                )
        _int_in("cache_size", "NNCacheSize", self.cache_size, 1, 100_000_000)

    @staticmethod
    def check_nodes(nodes: object) -> int:
        """``nodes`` if it is a valid node count (as the ``nodes`` field checks it), else SearchSettingError."""
        _int_in("nodes", "go nodes", nodes, 1, MAX_NODES)
        return cast(int, nodes)

    def replace(self, **changes: object) -> SearchSettings:
        """A copy with ``changes`` (checked as a new settings object)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def _int_in(name: str, lc0: str, v: object, lo: int, hi: int) -> None:
    check_number(f"search setting {name} ({lc0})", v, lo, hi, integer=True, error=SearchSettingError)


def _float_in(name: str, lc0: str, v: object, lo: float, hi: float) -> None:
    check_number(f"search setting {name} ({lc0})", v, lo, hi, error=SearchSettingError)
