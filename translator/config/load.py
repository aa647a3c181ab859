"""Loading a config: YAML file -> dict -> `--set` overrides -> frozen, validated `Config`.

Every bad key, type or value fails here, before any work starts, with a `ConfigError` that names
the key (and the closest valid one for a typo).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml

from translator.config.sections import (
    Config,
    DataConfig,
    DecodeConfig,
    DistillConfig,
    ModelConfig,
    ServeConfig,
    TokenizerConfig,
    TrainConfig,
)
from translator.durable import publish_text
from translator.errors import ConfigError, TranslatorError


def load_config(path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read a YAML file (or start from defaults when `path` is None), apply `section.key=value`."""
    return config_from_dict(
        given_settings(path, overrides), origin=str(path) if path else "defaults"
    )


def given_settings(
    path: str | Path | None, overrides: list[str] | tuple[str, ...] = ()
) -> dict[str, Any]:
    """What the user set: the YAML file's sections (none without a file) with `--set` applied,
    before any default fills the rest in (a run made from a run tells its own keys by them)."""
    raw = read_yaml(Path(path)) if path is not None else {}
    for item in overrides:
        apply_override(raw, item)
    return raw


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML config file into a dict; errors name the file and line."""
    if not path.is_file():
        raise ConfigError(f"config file not found: {path} (see configs/ for examples)")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"invalid YAML in {where}: {problem}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must be a mapping of sections (data:, model:, ...)")
    return raw


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` is not a key
                continue
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, typing.Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} appears twice; keep one", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep)


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply one `section.key=value` override (value parsed as YAML) to the raw dict."""
    key, sep, value = item.partition("=")
    parts = key.strip().split(".")
    if not sep or len(parts) != 2 or not all(parts):
        raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. train.max_steps=100")
    section, name = parts
    _check_key(section, _SECTIONS, "", f"--set {item!r}")
    _check_key(name, _field_names(_SECTIONS[section]), f"{section}.", f"--set {item!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        parsed = value
    if raw.get(section) is None:  # absent, or an empty `section:` in the file
        raw[section] = {}
    sub = raw[section]
    if not isinstance(sub, dict):
        raise ConfigError(f"config section {section!r} must be a mapping")
    sub[name] = parsed


def config_from_dict(raw: dict[str, Any], origin: str = "config") -> Config:
    """Build and validate a `Config` from a nested dict, rejecting unknown keys and bad types."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{origin}: the config must be a mapping of sections")
    sections = {}
    for section, values in raw.items():
        _check_key(str(section), _SECTIONS, "", origin)
        cls = _SECTIONS[section]
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ConfigError(f"{origin}: section {section!r} must be a mapping of keys")
        sections[section] = _build_section(cls, section, values, origin)
    config = Config(**sections)
    for section in _SECTIONS:
        getattr(config, section).validate()
    if config.model.max_positions < config.data.max_len + 2:
        raise ConfigError(
            f"model.max_positions ({config.model.max_positions}) must be at least "
            f"data.max_len + 2 ({config.data.max_len + 2})"
        )
    return config


def save_config(config: Config, path: Path) -> None:
    """Write the resolved config as YAML, atomically: a run killed meanwhile keeps the old one."""
    try:
        publish_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
    except OSError as exc:
        raise TranslatorError(
            f"could not write {path}: {exc.strerror or exc}; free some disk space or choose a "
            "writable weights directory"
        ) from None


_SECTIONS: dict[str, type] = {
    "data": DataConfig,
    "tokenizer": TokenizerConfig,
    "model": ModelConfig,
    "train": TrainConfig,
    "decode": DecodeConfig,
    "serve": ServeConfig,
    "distill": DistillConfig,
}


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def _check_key(key: str, valid: Any, prefix: str, origin: str) -> None:
    if key in valid:
        return
    close = difflib.get_close_matches(key, list(valid), n=1, cutoff=0.5)
    hint = f"; did you mean {prefix}{close[0]}?" if close else f"; valid: {', '.join(valid)}"
    raise ConfigError(f"{origin}: unknown config key {prefix}{key}{hint}")


def _build_section(cls: type, section: str, values: dict[str, Any], origin: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, value in values.items():
        _check_key(str(key), _field_names(cls), f"{section}.", origin)
        kwargs[key] = _coerce(value, hints[key], f"{section}.{key}", origin)
    return cls(**kwargs)


def _coerce(value: Any, hint: Any, key: str, origin: str) -> Any:
    """Check `value` against a type hint; ints are accepted where floats are expected."""
    origin_type = typing.get_origin(hint)
    if origin_type in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _coerce(value, inner[0], key, origin)
        specific = None  # the complaint of the alternative of the value's own kind
        for option in inner:  # the first alternative that fits, e.g. a string or a list
            try:
                return _coerce(value, option, key, origin)
            except ConfigError as exc:
                kind = typing.get_origin(option) or option
                if isinstance(kind, type) and isinstance(value, kind):
                    specific = exc
        if specific is not None:
            raise specific
        names = " or ".join(_type_name(a) for a in inner)
        raise ConfigError(f"{origin}: {key} must be {names}, got {value!r}")
    if origin_type is list:
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{origin}: {key} must be a non-empty list, got {value!r}")
        (item,) = typing.get_args(hint)
        return [_coerce(v, item, f"{key}[{n}]", origin) for n, v in enumerate(value)]
    if origin_type is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{origin}: {key} must be a mapping, got {value!r}")
        k_hint, v_hint = typing.get_args(hint)
        return {
            _coerce(k, k_hint, key, origin): _coerce(v, v_hint, f"{key}.{k}", origin)
            for k, v in value.items()
        }
    if origin_type is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(
                f"{origin}: {key} must be one of {', '.join(map(str, choices))}, got {value!r}"
            )
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint is float and isinstance(value, str):
        try:  # YAML 1.1 reads "1e-4" as a string; accept it as the number it plainly is
            value = float(value)
        except ValueError:
            pass
    if hint is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{origin}: {key} must be a finite number, got {value!r}")
    if hint is int and isinstance(value, bool) or not isinstance(value, hint):
        raise ConfigError(
            f"{origin}: {key} must be {_type_name(hint)}, got {value!r} ({type(value).__name__})"
        )
    return value


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is list:
        return "a list"
    if typing.get_origin(hint) is dict:
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        hint, str(hint)
    )
