"""Checks shared by the config sections: each failure a ConfigError naming the key."""

from __future__ import annotations

from typing import Any

from translator.errors import ConfigError


def positive(obj: Any, section: str, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None and value <= 0:
            raise ConfigError(f"{section}.{name} must be positive, got {value}")


def non_negative(obj: Any, section: str, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if value is not None and value < 0:
            raise ConfigError(f"{section}.{name} must be >= 0, got {value}")


def unit_interval(value: float, key: str) -> None:
    if not 0.0 <= value < 1.0:
        raise ConfigError(f"{key} must be in [0, 1), got {value}")
