"""Config: every shipped YAML loads; bad keys, types, values and files fail with a clear message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from translator.config import Config, ModelConfig, config_from_dict, load_config, save_config
from translator.errors import ConfigError

SHIPPED = sorted((ROOT / "configs").glob("*.yaml"))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_configs_directory_ships_several_configs() -> None:
    assert len(SHIPPED) >= 3, [p.name for p in SHIPPED]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_loads_and_validates(path: Path) -> None:
    config = load_config(path)
    assert isinstance(config, Config)
    assert config.model.d_model % config.model.n_heads == 0
    assert config.model.max_positions >= config.data.max_len + 2
    # The resolved config survives a save/load round trip unchanged.
    save_config(config, Path("resolved.yaml"))
    assert load_config("resolved.yaml") == config


def test_no_file_means_defaults() -> None:
    assert load_config(None) == Config()


def test_yaml_values_reach_the_typed_config(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.yaml",
        "model:\n  d_model: 64\n  n_heads: 4\n  norm: post\ntrain:\n  lr: 2\n  max_steps: null\n",
    )
    config = load_config(path)
    assert config.model.d_model == 64 and config.model.n_heads == 4
    assert config.model.norm == "post"
    assert config.train.lr == 2.0 and isinstance(config.train.lr, float)  # int accepted as float
    assert config.train.max_steps is None
    assert config.model.encoder_layers == ModelConfig().encoder_layers  # untouched key: default


# --------------------------------------------------------------------------- unknown keys


def test_unknown_key_names_it_and_suggests_the_closest(tmp_path: Path) -> None:
    path = write(tmp_path / "typo.yaml", "model:\n  d_modle: 64\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "model.d_modle" in message
    assert "did you mean model.d_model" in message
    assert str(path) in message


def test_unknown_section_names_it(tmp_path: Path) -> None:
    path = write(tmp_path / "section.yaml", "modle:\n  d_model: 64\n")
    with pytest.raises(ConfigError, match=r"unknown config key modle; did you mean model\?"):
        load_config(path)


def test_unknown_section_without_close_match_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({"zzzz": {}})
    message = str(err.value)
    assert "zzzz" in message
    for section in ("data", "tokenizer", "model", "train", "decode"):
        assert section in message


def test_section_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="section 'model' must be a mapping"):
        config_from_dict({"model": [1, 2]})


# --------------------------------------------------------------------------- types


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("model", "d_model", "big"),
        ("model", "d_model", 1.5),
        ("train", "epochs", True),  # a bool is not an integer here
        ("train", "max_steps", False),
        ("train", "lr", "fast"),
        ("train", "lr", True),
        ("train", "compile", 1),  # an int is not a bool
        ("data", "source", 3),
        ("model", "norm", "sandwich"),
        ("train", "max_steps", "many"),
    ],
)
def test_wrong_type_names_the_key(section: str, key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict({section: {key: value}})
    assert f"{section}.{key}" in str(err.value)
    assert repr(value) in str(err.value)


def test_wrong_type_from_a_file(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", 'model:\n  d_model: "big"\n')
    with pytest.raises(ConfigError, match=r"model\.d_model must be an integer, got 'big'"):
        load_config(path)


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"model": {"d_model": 30, "n_heads": 4}}, "model.d_model"),
        ({"model": {"dropout": 1.0}}, "model.dropout"),
        ({"model": {"dropout": -0.1}}, "model.dropout"),
        ({"model": {"attention_dropout": 1.0}}, "model.attention_dropout"),
        ({"model": {"d_model": 0}}, "model.d_model"),
        ({"model": {"n_heads": -2}}, "model.n_heads"),
        ({"model": {"encoder_layers": 0}}, "model.encoder_layers"),
        ({"model": {"decoder_layers": 0}}, "model.decoder_layers"),
        ({"model": {"d_ff": 0}}, "model.d_ff"),
        ({"train": {"batch_tokens": 0}}, "train.batch_tokens"),
        ({"train": {"lr": 0}}, "train.lr"),
        ({"train": {"max_steps": 0}}, "train.max_steps"),
        ({"train": {"warmup_steps": -1}}, "train.warmup_steps"),
        ({"train": {"label_smoothing": 1.0}}, "train.label_smoothing"),
        ({"data": {"max_len": 0}}, "data.max_len"),
        ({"data": {"lang_src": "it", "lang_tgt": "it"}}, "data.lang_src"),
        ({"tokenizer": {"min_freq": 0}}, "tokenizer.min_freq"),
        ({"decode": {"beam": 0}}, "decode.beam"),
        ({"model": {"max_positions": 20}, "data": {"max_len": 32}}, "model.max_positions"),
    ],
)
def test_impossible_values_fail_naming_the_key(raw: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict(raw)
    assert key in str(err.value)


@pytest.mark.parametrize(
    "item", ["train.lr=.nan", "train.lr=nan", "train.lr=.inf", "train.clip_norm=.inf"]
)
def test_non_finite_numbers_are_rejected(item: str) -> None:
    with pytest.raises(ConfigError, match="finite") as err:
        load_config(None, [item])
    assert item.split("=")[0] in str(err.value)


def test_boundary_values_are_accepted() -> None:
    config = config_from_dict(
        {
            "model": {"d_model": 32, "n_heads": 32, "dropout": 0.0, "max_positions": 34},
            "data": {"max_len": 32},
            "train": {"warmup_steps": 0, "label_smoothing": 0.0, "clip_norm": None},
        }
    )
    assert config.model.n_heads == 32 and config.model.dropout == 0.0
    assert config.train.clip_norm is None


# --------------------------------------------------------------------------- files


def test_invalid_yaml_reports_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "broken.yaml",
        "model:\n  d_model: 64\n  n_heads: 4\n  norm: [pre\ntrain:\n  lr: 1\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert "invalid YAML" in message
    # The error is reported somewhere at or after the unclosed bracket on line 4.
    line = int(message.split(f"{path}:")[1].split(":")[0])
    assert 4 <= line <= 6


def test_tab_indentation_reports_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "tabs.yaml", "model:\n  d_model: 64\n\tn_heads: 4\n")
    with pytest.raises(ConfigError, match=rf"invalid YAML in {path}:3"):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found") as err:
        load_config(tmp_path / "nope.yaml")
    assert "nope.yaml" in str(err.value)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path / "list.yaml", "- a\n- b\n"))


def test_empty_file_means_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path / "empty.yaml", "# nothing\n")) == Config()


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("data:\n  source: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="UTF-8"):
        load_config(path)


# --------------------------------------------------------------------------- --set overrides


def test_set_values_are_parsed_as_yaml() -> None:
    config = load_config(
        ROOT / "configs" / "tiny.yaml",
        ["train.max_steps=5", "train.lr=1e-4", "model.tie_embeddings=true", "train.clip_norm=null"],
    )
    assert config.train.max_steps == 5 and type(config.train.max_steps) is int
    assert config.train.lr == pytest.approx(1e-4) and type(config.train.lr) is float
    assert config.model.tie_embeddings is True
    assert config.train.clip_norm is None


def test_set_overrides_the_file_and_keeps_the_rest() -> None:
    base = load_config(ROOT / "configs" / "tiny.yaml")
    config = load_config(ROOT / "configs" / "tiny.yaml", ["model.d_ff=128"])
    assert config.model.d_ff == 128
    assert config.model.d_model == base.model.d_model
    assert config.train == base.train


def test_set_can_add_a_section_the_file_lacks(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "model:\n  d_model: 64\n  n_heads: 4\n")
    assert load_config(path, ["decode.beam=4"]).decode.beam == 4


def test_set_fills_a_section_left_empty_in_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "model:\n  # d_model: 64\ntrain:\n  lr: 1.0e-3\n")
    assert load_config(path).model == ModelConfig()
    config = load_config(path, ["model.d_model=64", "model.n_heads=4"])
    assert (config.model.d_model, config.model.n_heads) == (64, 4)
    assert config.train.lr == pytest.approx(1e-3)


def test_set_into_a_section_that_is_not_a_mapping_fails(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", "model: 3\n")
    with pytest.raises(ConfigError, match="'model' must be a mapping"):
        load_config(path, ["model.d_model=64"])


@pytest.mark.parametrize(
    ("item", "named"),
    [
        ("train.max_stpes=5", "train.max_stpes"),
        ("trian.max_steps=5", "trian"),
        ("train.nonexistent=1", "train.nonexistent"),
    ],
)
def test_set_for_an_unknown_key_fails_naming_it(item: str, named: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(None, [item])
    assert named in str(err.value)


def test_set_suggests_the_closest_key() -> None:
    with pytest.raises(ConfigError, match=r"did you mean train\.max_steps"):
        load_config(None, ["train.max_stpes=5"])


@pytest.mark.parametrize("item", ["max_steps=5", "train.max_steps", "a.b.c=1", ".x=1"])
def test_malformed_set(item: str) -> None:
    with pytest.raises(ConfigError, match="section.key=value"):
        load_config(None, [item])


def test_set_value_is_type_checked() -> None:
    with pytest.raises(ConfigError, match=r"train\.max_steps must be an integer"):
        load_config(None, ["train.max_steps=lots"])


# --------------------------------------------------------------------------- the real CLI


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("model:\n  d_modle: 64\n", "did you mean model.d_model"),
        ("model:\n  norm: [pre\n", "invalid YAML"),
    ],
    ids=["typo", "yaml"],
)
def test_cli_bad_config_is_one_line_exit_2(tmp_path: Path, text: str, fragment: str) -> None:
    bad = write(tmp_path / "bad.yaml", text)
    proc = subprocess.run(
        [sys.executable, "-m", "translator", "train", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:")
    assert fragment in lines[0]
    assert not (tmp_path / "weights").exists()  # nothing was created for a rejected config
