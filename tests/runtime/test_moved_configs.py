"""conf/ grouped by kind (issue 27): the old flat paths fail with a one-line pointer to the new one, for
every command that reads a config path, and the table covers every shipped config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pdx_lightning import cli
from pdx_lightning.runtime.moved_configs import (
    MOVED,
    MovedConfigError,
    check_config_args,
    check_config_path,
    current_path,
    moved_to,
)

ROOT = Path(__file__).resolve().parents[2]


def test_moved_to_keeps_the_prefix_and_knows_only_the_old_paths():
    assert moved_to("conf/maia.yaml") == "conf/fit/maia.yaml"
    assert moved_to("./conf/sweep.yaml") == "conf/sweep/cpu.yaml"
    assert moved_to("/clone/conf/pretrain_maia.yaml") == "/clone/conf/pretrain/maia.yaml"
    assert moved_to(Path("conf") / "sweep_maia_seeds.yaml") == "conf/sweep/maia_seeds.yaml"
    for not_old in ("conf/fit/maia.yaml", "maia.yaml", "mine/maia.yaml", "conf/mine.yaml", "conf"):
        assert moved_to(not_old) is None, not_old
    assert [current_path(p) for p in ("conf/maia.yaml", "conf/fit/maia.yaml", "x.yaml", None)] == [
        "conf/fit/maia.yaml",
        "conf/fit/maia.yaml",
        "x.yaml",
        None,
    ]


def test_the_table_moves_every_old_file_to_a_shipped_one_and_no_old_file_is_left():
    shipped = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "conf").rglob("*.yaml"))
    # every moved config is shipped, each once; configs made after the move (no flat name) are the rest
    assert set(MOVED.values()) <= set(shipped) and len(set(MOVED.values())) == len(MOVED)
    assert sorted(set(shipped) - set(MOVED.values())) == [
        "conf/fit/maia_search.yaml",
        "conf/fit/searched.yaml",
        "conf/sweep/maia_anchor.yaml",
        "conf/sweep/maia_batch1024.yaml",
        "conf/sweep/maia_paper_recipe.yaml",
        "conf/sweep/maia_paper_recipe_ref_lr.yaml",
        "conf/sweep/maia_seeds8.yaml",
        "conf/sweep/maia_value_hold.yaml",
    ]
    assert len(MOVED) == 20 and {Path(p).parts[1] for p in shipped} == {"fit", "pretrain", "sweep"}
    assert not any((ROOT / old).exists() for old in MOVED)


def test_an_old_path_fails_only_when_it_is_gone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MovedConfigError, match=r"^conf/maia\.yaml moved to conf/fit/maia\.yaml$"):
        check_config_path("conf/maia.yaml")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "maia.yaml").write_text("{}\n")  # a user's own file of that name: read as it is
    check_config_path("conf/maia.yaml")
    with pytest.raises(MovedConfigError, match=r"^-c: conf/pdx\.yaml moved to conf/fit/pdx\.yaml$"):
        check_config_args(["fit", "--config", "conf/maia.yaml", "-c", "conf/pdx.yaml"])
    with pytest.raises(MovedConfigError, match=r"^--config: conf/paper\.yaml moved"):
        check_config_args(["fit", "--config=conf/paper.yaml"])
    check_config_args(["fit", "--config", str(ROOT / "conf" / "fit" / "pdx.yaml"), "--trainer.max_steps", "1"])


@pytest.mark.parametrize(
    "argv, line",
    [
        (["fit", "--config", "conf/maia.yaml"], "pdx fit: error: --config: conf/maia.yaml moved to conf/fit/maia.yaml"),
        (
            ["validate", "--config", "conf/pdx.yaml", "--ckpt_path", "last"],
            "pdx validate: error: --config: conf/pdx.yaml moved to conf/fit/pdx.yaml",
        ),
        (
            ["fit", "--config", "conf/fit/pdx.yaml", "--config", "conf/arm_none.yaml"],
            "pdx fit: error: --config: conf/arm_none.yaml moved to conf/fit/arm_none.yaml",
        ),
        (
            ["pretrain", "--config", "conf/pretrain.yaml"],
            "pdx pretrain: error: --config: conf/pretrain.yaml moved to conf/pretrain/small.yaml",
        ),
        (
            ["pretrain", "validate", "--config", "conf/pretrain_small_v2.yaml"],
            "pdx pretrain: error: --config: conf/pretrain_small_v2.yaml moved to conf/pretrain/small_v2.yaml",
        ),
        (
            ["sweep", "--config", "conf/sweep_maia.yaml"],
            "pdx sweep: error: --config: conf/sweep_maia.yaml moved to conf/sweep/maia.yaml",
        ),
    ],
)
def test_every_command_points_an_old_config_path_to_its_new_one(argv, line, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)  # as the README's commands run: from the clone
    assert cli.main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


def test_a_sweep_yaml_naming_an_old_fit_config_points_to_the_new_one(tmp_path, monkeypatch, capsys):
    old = ROOT / "conf" / "maia.yaml"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"eval": {"selection": "a.csv"}, "fit_config": str(old)}))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sweep", "--config", str(path), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"pdx sweep: error: {path}: fit_config: {old} moved to {ROOT / 'conf' / 'fit' / 'maia.yaml'}\n"
    )


def test_a_shipped_preset_resolves_from_anywhere(tmp_path, monkeypatch):
    """``--config pdx:<preset>`` and a ``conf/...`` path missing here read the package's file; a file of
    that name here wins; an unknown preset is one line listing the presets."""
    from pdx_lightning.files.resources import ShippedFileError, package_dir
    from pdx_lightning.runtime.moved_configs import resolve_config_args

    monkeypatch.chdir(tmp_path)
    shipped = str(package_dir("conf") / "fit" / "maia.yaml")
    assert resolve_config_args(["fit", "--config", "pdx:fit/maia"]) == ["fit", "--config", shipped]
    assert resolve_config_args(["fit", "--config=conf/fit/maia.yaml"]) == ["fit", f"--config={shipped}"]
    assert resolve_config_args(["fit", "-c", "pdx:fit/maia.yaml", "--x", "1"]) == ["fit", "-c", shipped, "--x", "1"]
    (tmp_path / "conf" / "fit").mkdir(parents=True)
    (tmp_path / "conf" / "fit" / "maia.yaml").write_text("{}\n")
    assert resolve_config_args(["fit", "--config", "conf/fit/maia.yaml"]) == ["fit", "--config", "conf/fit/maia.yaml"]
    with pytest.raises(ShippedFileError, match=r"no config preset 'pdx:fit/nope' .*fit/maia, .*sweep/cpu"):
        resolve_config_args(["fit", "--config", "pdx:fit/nope"])
